//! TLS certificates failing verification, in the last words of a crashed container and in a
//! running one's log; and the certificates issued anew shortly before, which a failure leads to.

use crate::detectors::testing::{
    DESCRIBE_EXIT_78, POD, assert_contains, ctx, describe, detect, event, event_list, events, find,
    has, log_of, previous_log, shown,
};
use crate::detectors::{Confidence, Kind};

#[test]
fn certificate_errors() {
    let log = "2025-03-04T14:02:00Z ERROR Post \"https://billing:8443/charge\": x509: certificate has expired or is not yet valid: current time 2025-03-04T14:02:00Z is after 2025-03-01T00:00:00Z\n";
    let evidence = [describe(1, DESCRIBE_EXIT_78), previous_log(2, log)];
    let findings = detect(&evidence, &ctx());
    let cert = find(&findings, Kind::Certificate);
    assert!(cert.verified);
    assert!(
        cert.title().contains("not yet valid") || cert.title().contains("expired"),
        "{}",
        cert.title()
    );
    assert!(cert.explains(find(&findings, Kind::CrashLoop)));

    let unknown_ca = "level=error msg=\"tls: failed to verify certificate: x509: certificate signed by unknown authority\"\n";
    let findings = detect(&[log_of(1, POD, unknown_ca)], &ctx());
    let cert = find(&findings, Kind::Certificate);
    assert_contains(&cert.title(), "unknown authority");
    assert!(
        !cert.verified,
        "no observed failure: an observation, not a cause"
    );
    assert_eq!(cert.confidence, Confidence::Low);
}

#[test]
fn go_x509_expired_or_not_yet_valid_is_read_from_current_time() {
    let expired = "{\"level\":\"fatal\",\"ts\":\"2025-01-01T00:00:01.061Z\",\"msg\":\"cannot start consumer group notifications\",\"error\":\"tls: failed to verify certificate: x509: certificate has expired or is not yet valid: current time 2025-01-01T00:00:01Z is after 2024-12-31T23:00:00Z\"}\n";
    let evidence = [describe(1, DESCRIBE_EXIT_78), previous_log(2, expired)];
    let findings = detect(&evidence, &ctx());
    let cert = find(&findings, Kind::Certificate);
    assert_eq!(cert.title(), "TLS certificate expired");
    assert!(cert.verified);
    assert!(
        shown(&cert.refs[0].quote).contains("certificate has expired"),
        "{:?}",
        cert.refs[0].quote
    );

    let early = "ERROR x509: certificate has expired or is not yet valid: current time 2025-01-01T00:00:01Z is before 2025-01-02T00:00:00Z\n";
    let findings = detect(
        &[describe(1, DESCRIBE_EXIT_78), previous_log(2, early)],
        &ctx(),
    );
    assert_eq!(
        find(&findings, Kind::Certificate).title(),
        "TLS certificate not yet valid"
    );
}

#[test]
fn a_neighbours_certificate_event_in_a_namespace_list_is_the_neighbours() {
    let list = event_list(&[
        event(
            "Warning",
            "BackOff",
            &format!("Pod/{POD}"),
            "default",
            "Back-off restarting failed container api",
            "14:00:00",
        ),
        event(
            "Warning",
            "Failed",
            "Pod/billing-sync-5c9d8f7b6-q2w3e",
            "default",
            "'x509: certificate has expired or is not yet valid'",
            "14:00:05",
        ),
    ]);
    let findings = detect(&[events(1, &list)], &ctx());
    let expired = find(&findings, Kind::Certificate);
    assert_eq!(
        expired.resource().as_deref(),
        Some("billing-sync-5c9d8f7b6-q2w3e")
    );
}

#[test]
fn a_failing_verification_leads_to_certificates_issued_anew_shortly_before() {
    let failing = "error exporting: tls: failed to verify certificate: x509: certificate signed by unknown authority\n";
    let renewals = crate::detectors::testing::event_list(&[
        crate::detectors::testing::event(
            "Normal",
            "Issuing",
            "Certificate/otel-gateway-tls",
            "observability",
            "The certificate has been successfully issued",
            "13:45:00",
        ),
        crate::detectors::testing::event(
            "Normal",
            "Issuing",
            "Certificate/billing-tls",
            "observability",
            "The certificate has been successfully issued",
            "02:00:00",
        ),
        crate::detectors::testing::event(
            "Normal",
            "Issuing",
            "Certificate/otel-collector-tls",
            "observability",
            "Renewing certificate as renewal was scheduled",
            "13:44:00",
        ),
    ]);
    let alert = crate::detectors::testing::alert_at("2025-03-04T14:02:00Z");
    let evidence = [
        crate::detectors::testing::log_of(1, "otel-agent-2xk9p", failing),
        crate::detectors::testing::events(2, &renewals),
    ];
    let findings = detect(&evidence, &alert);
    let failure = find(&findings, Kind::Certificate);
    assert_eq!(
        failure.fact.leads(),
        [crate::detectors::Lead::CertificatesIssued]
    );
    let issued = crate::detectors::testing::all_of(&findings, Kind::CertificateIssued);
    assert_eq!(
        issued.len(),
        1,
        "only the one issued within hours: {issued:#?}"
    );
    assert_eq!(
        issued[0].title(),
        "Certificate `otel-gateway-tls` was issued anew (cert-manager: `The certificate has \
         been successfully issued`)"
    );
    assert_eq!(issued[0].role(), crate::detectors::Role::Context);

    // Without a failing certificate, a renewal is no news.
    let findings = detect(&evidence[1..], &alert);
    assert!(!has(&findings, Kind::CertificateIssued), "{findings:#?}");
}
