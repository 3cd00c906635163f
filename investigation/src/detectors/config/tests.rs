//! Configuration a container cannot start without: a missing Secret or ConfigMap, a mount that
//! fails, and a setting the application says is missing.

use super::*;
use crate::detectors::testing::{
    DESCRIBE_EXIT_78, POD, PREVIOUS_LOG_78, assert_contains, ctx, describe, detect, detect_kind,
    events, find, log_of, previous_log,
};
use crate::detectors::{Fact, Kind};

#[test]
fn config_secret_and_mount_errors() {
    let description = "\
Name:  payments-api-7d9f8c6b5-x2k4q
Containers:
  api:
    State:          Waiting
      Reason:       CreateContainerConfigError
Events:
  Warning  Failed  3s (x5 over 40s)  kubelet  Error: secret \"payments-db\" not found
";
    let f = detect_kind(&[describe(1, description)], Kind::ConfigError);
    assert!(f.verified);
    // Titles are computed now: the object's kind is named as Kubernetes spells it.
    assert_eq!(
        f.title(),
        "Configuration error: Secret \"payments-db\" not found"
    );
    assert_eq!(f.refs.len(), 2, "the message, and the reason it explains");

    let yaml = "- message: 'MountVolume.SetUp failed for volume \"certs\" : configmap \"tls-bundle\" not found'\n  reason: FailedMount\n  type: Warning\n";
    let f = detect_kind(&[events(1, yaml)], Kind::ConfigError);
    assert!(f.verified);
    assert_contains(&f.title(), "tls-bundle");
}

#[test]
fn a_missing_key_names_the_key_and_its_object() {
    let description = "\
Name:  payments-api-7d9f8c6b5-x2k4q
Events:
  Warning  Failed  4s (x3 over 20s)  kubelet  Error: couldn't find key DB_PASSWORD in Secret payments/payments-db
";
    let f = detect_kind(&[describe(1, description)], Kind::ConfigError);
    assert!(f.verified);
    let Fact::ConfigError(c) = &f.fact else {
        panic!("{f:#?}");
    };
    assert_eq!(
        c.problem,
        ConfigProblem::MissingKey {
            key: "DB_PASSWORD".into(),
            object_kind: "Secret".into(),
            object: "payments/payments-db".into(),
        }
    );
}

#[test]
fn a_missing_setting_in_the_log_is_verified_only_by_a_crash() {
    let crashed = [
        describe(1, DESCRIBE_EXIT_78),
        previous_log(2, PREVIOUS_LOG_78),
    ];
    let findings = detect(&crashed, &ctx());
    let config = find(&findings, Kind::ConfigError);
    assert_eq!(config.title(), "Missing configuration: PAYMENT_MODE");
    assert!(
        config.verified,
        "the last words of a container that crashed"
    );
    assert!(config.explains(find(&findings, Kind::CrashLoop)));

    // The same line in a running pod's log: an observation, not a cause.
    let config = detect_kind(&[log_of(1, POD, PREVIOUS_LOG_78)], Kind::ConfigError);
    assert!(!config.verified);
    assert_eq!(config.confidence, Confidence::Low);
}
