//! The judge against hand-written reports: invariant 8 and "confirmed only when verified".

use std::sync::Arc;

use super::*;
use crate::detectors::{Confidence, Kind};
use crate::evidence::EvidenceId;

fn id(n: u32) -> EvidenceId {
    EvidenceId::new(n).expect("valid id")
}

fn cause(statement: &str, confirmed: bool, claims: Vec<Claim>) -> Cause {
    Cause {
        statement: statement.to_string(),
        detail: String::new(),
        detector: Some(Kind::Exited),
        confidence: Confidence::High,
        confirmed,
        claims,
        explains: Vec::new(),
        led_by: Vec::new(),
    }
}

fn claim(evidence: Vec<EvidenceId>, quote: &str) -> Claim {
    Claim {
        statement: "the container exited with code 78".to_string(),
        evidence,
        quote: quote.to_string(),
    }
}

/// The crash-loop round, up to its report; the judge then sees `report` instead.
async fn judged(report: impl FnOnce(Report) -> Report) -> Verdict {
    let done = run(&Arc::new(crash_loop_world()), CRASH_ALERT).await;
    let mut state = done.clone();
    state.report = done.report.map(report);
    let update = judge::judge(&state).await;
    update.verdict.flatten().expect("a verdict")
}

#[tokio::test]
async fn accepts_the_summarised_crash_loop_report() {
    let verdict = judged(|r| r).await;
    assert!(verdict.grounded, "{verdict:#?}");
    assert!(verdict.unsupported_claims.is_empty());
    // One story, one cause: the missing setting, with the exit code 78 it explains under it.
    assert!(
        verdict
            .reason
            .starts_with("1 detector-verified cause(s) (config-error)"),
        "{}",
        verdict.reason
    );
}

#[tokio::test]
async fn rejects_a_quote_absent_from_its_evidence() {
    let verdict = judged(|mut r| {
        // E1 exists (the pod description) but does not say this.
        r.causes[0]
            .claims
            .push(claim(vec![id(1)], "ERROR database password rejected"));
        r
    })
    .await;
    assert!(!verdict.grounded);
    assert_eq!(verdict.unsupported_claims.len(), 1, "{verdict:#?}");
    assert_eq!(
        verdict.unsupported_claims[0].reason,
        "its quote does not occur in E1"
    );
}

#[tokio::test]
async fn rejects_a_claim_citing_an_id_that_does_not_exist() {
    let verdict = judged(|mut r| {
        // The quote is real (it is in E2), but E9 was never fetched.
        r.causes[0].claims.push(claim(
            vec![id(9)],
            "ERROR config: required key PAYMENT_MODE is not set",
        ));
        r
    })
    .await;
    assert!(!verdict.grounded);
    assert_eq!(verdict.unsupported_claims.len(), 1, "{verdict:#?}");
    assert_eq!(
        verdict.unsupported_claims[0].reason,
        "cites E9, which does not exist"
    );
}

#[tokio::test]
async fn rejects_confirmed_language_for_an_unverified_cause() {
    let verdict = judged(|mut r| {
        let mut guess = cause(
            "Root cause is a DNS outage",
            false,
            vec![claim(vec![id(1)], "Exit Code:    78")],
        );
        guess.detector = Some(Kind::Dependency);
        r.causes.push(guess);
        r
    })
    .await;
    assert!(!verdict.grounded);
    assert!(
        verdict.unsupported_claims[0]
            .reason
            .contains("no verified detector finding")
    );
}

#[tokio::test]
async fn is_not_grounded_without_a_verified_cause() {
    let verdict = judged(|mut r| {
        r.causes.clear();
        r
    })
    .await;
    assert!(!verdict.grounded);
    assert!(verdict.unsupported_claims.is_empty());
    assert_eq!(verdict.reason, "no cause found in the evidence");
    assert!(
        !verdict.questions.is_empty(),
        "the crash loop needs explaining"
    );
}

#[test]
fn quote_check_normalises_whitespace_and_case_only() {
    let done_evidence = vec![crate::evidence::Evidence::new(
        id(1),
        Capability::PodDescribe,
        "k8s",
        "pods_get",
        serde_json::json!({}),
        "Last State:     Terminated\n      Exit Code:    78\n",
        chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
    )];
    assert!(judge::check_claim(&[id(1)], "exit code: 78", &done_evidence).is_ok());
    assert!(judge::check_claim(&[id(1)], "exit code 78", &done_evidence).is_err());
    assert!(judge::check_claim(&[], "Exit Code", &done_evidence).is_err());
    assert!(judge::check_claim(&[id(1)], "  ", &done_evidence).is_err());
}
