//! Images the kubelet cannot pull, from a pod's description and from an event list, read to
//! the registry's answer.

use serde_json::json;

use super::*;
use crate::detectors::Kind;
use crate::detectors::testing::{
    POD, assert_contains, assert_ends_with, ctx, describe, described, detect, detect_kind, ev,
    events,
};
use crate::evidence::Capability;

#[test]
fn image_pull_failure_in_describe_and_events_yaml() {
    let description = described(
        POD,
        "api",
        "    Image:          registry.example.com/payments:2.4.2
    State:          Waiting
      Reason:       ImagePullBackOff
Events:
  Warning  Failed     10s (x3 over 50s)  kubelet  Failed to pull image \"registry.example.com/payments:2.4.2\": rpc error: code = NotFound desc = failed to pull and unpack image \"registry.example.com/payments:2.4.2\": manifest unknown
  Warning  Failed     10s (x3 over 50s)  kubelet  Error: ErrImagePull
",
    );
    let pull = detect_kind(&[describe(1, &description)], Kind::ImagePull);
    assert!(pull.verified);
    // Titles are computed now, and say what the registry answered.
    assert_eq!(
        pull.title(),
        "Image pull failing for `registry.example.com/payments:2.4.2`: manifest unknown"
    );
    assert_contains(&pull.detail(), "does not exist");
    // The quote keeps the registry's answer.
    assert_ends_with(&pull.refs[0].quote, "manifest unknown");

    let list = "\
- involvedObject:
    kind: Pod
    name: payments-api-7d9f8c6b5-x2k4q
  message: 'Failed to pull image \"ghcr.io/acme/api:v9\": failed to authorize: 401 Unauthorized'
  reason: Failed
  type: Warning
- involvedObject:
    kind: Pod
    name: payments-api-7d9f8c6b5-x2k4q
  message: 'Error: ErrImagePull'
  reason: Failed
  type: Warning
";
    let pull = detect_kind(&[events(1, list)], Kind::ImagePull);
    assert_eq!(
        pull.title(),
        "Image pull failing for `ghcr.io/acme/api:v9`: pull access denied (401 Unauthorized)"
    );
    assert_contains(&pull.detail(), "denied access");
    let Fact::ImagePull(p) = &pull.fact else {
        panic!("{pull:#?}");
    };
    assert_eq!(p.failure, Some(PullFailure::Denied));
    assert_eq!(p.status.as_deref(), Some("401 Unauthorized"));
}

#[test]
fn a_neighbours_pull_failure_in_a_table_is_not_the_targets() {
    let table = "\
NAME                            READY   STATUS             RESTARTS   AGE
payments-api-7d9f8c6b5-x2k4q    1/1     Running            0          1h
reports-5c7b9d8f6-qwz2x         0/1     ImagePullBackOff   0          5m
";
    let findings = detect(
        &[ev(1, Capability::ObjectList, json!({"kind": "Pod"}), table)],
        &ctx(),
    );
    assert!(findings.is_empty(), "{findings:#?}");
}
