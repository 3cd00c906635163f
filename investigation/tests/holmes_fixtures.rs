//! The detectors on HolmesGPT's recorded investigations (third_party/peer/holmesgpt/, a peer's
//! test suite used unchanged). Each case's recorded tool outputs go through the same path the
//! investigation uses — redact, excerpt, evidence — and the findings must mention the case's
//! `rubric.yaml` keywords, cite verbatim quotes, and include a verified cause (verdict: post).

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use firstline_alert::holmes::from_investigate_request;
use firstline_investigation::detectors::{DetectionContext, Finding, Symptom, run_detectors};
use firstline_investigation::evidence::{Capability, Evidence, EvidenceId, MissingEvidence};
use firstline_investigation::excerpt::RoundBudget;
use firstline_investigation::explain::explain;
use firstline_lab::holmes_fixture::RecordedToolCall;
use firstline_redact::redact;

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../third_party/peer/holmesgpt")
}

/// Their tool names onto our capabilities. Previous-container logs are told apart by the
/// recording's file name or tool name, as their runner does.
fn capability_for(file_name: &str, call: &RecordedToolCall) -> Capability {
    let tool = call.tool_name.as_str();
    let previous = file_name.contains("previous") || tool.contains("previous");
    match tool {
        "kubectl_describe" => Capability::PodDescribe,
        "kubectl_events" => Capability::Events,
        t if t.contains("logs") && previous => Capability::PodLogsPrevious,
        t if t.contains("logs") => Capability::PodLogsCurrent,
        other => Capability::Other(other.to_string()),
    }
}

struct Case {
    evidence: Vec<Evidence>,
    missing: Vec<MissingEvidence>,
    findings: Vec<Finding>,
    must_mention: Vec<Vec<String>>,
    symptom: Symptom,
}

fn load_case(name: &str) -> Case {
    let dir = fixtures_dir().join(name);
    let request = std::fs::read_to_string(dir.join("investigate_request.json"))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let target = from_investigate_request(&request).expect("request parses");

    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();

    let mut budget = RoundBudget::default();
    let mut evidence = Vec::new();
    let mut missing = Vec::new();
    let mut next_id = EvidenceId::new(1).unwrap();
    for path in files {
        let file_name = path.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let call = RecordedToolCall::parse(&text).unwrap_or_else(|e| panic!("{file_name}: {e}"));
        let capability = capability_for(&file_name, &call);
        if call.failed() {
            missing.push(MissingEvidence {
                capability,
                reason: call.output().to_string(),
            });
            continue;
        }
        let redacted = redact(call.output());
        let excerpt = budget.excerpt(&redacted.text);
        evidence.push(Evidence::new(
            next_id,
            capability,
            "holmes-fixture",
            call.tool_name.clone(),
            call.match_params.clone(),
            excerpt,
            DateTime::<Utc>::UNIX_EPOCH,
        ));
        next_id = next_id.next();
    }

    let ctx = DetectionContext::for_alert(&target);
    let findings = run_detectors(&evidence, &ctx);

    let rubric = std::fs::read_to_string(dir.join("rubric.yaml")).unwrap();
    let must_mention_line = rubric
        .lines()
        .find_map(|l| l.trim().strip_prefix("must_mention:"))
        .expect("rubric has must_mention");
    let must_mention: Vec<Vec<String>> =
        serde_json::from_str(must_mention_line.trim()).expect("must_mention is a flow list");
    Case {
        evidence,
        missing,
        findings,
        must_mention,
        symptom: ctx.symptom,
    }
}

fn findings_text(findings: &[Finding]) -> String {
    findings
        .iter()
        .flat_map(|f| {
            [f.title(), f.detail()]
                .into_iter()
                .chain(f.refs.iter().map(|r| r.quote.clone()))
        })
        .collect::<Vec<_>>()
        .join("\n")
        .to_lowercase()
}

fn check_case(name: &str) {
    let case = load_case(name);
    println!(
        "=== {name}: {} evidence, {} missing",
        case.evidence.len(),
        case.missing.len()
    );
    for f in &case.findings {
        println!(
            "  [{}{:?}] {} — {} ({} refs)",
            if f.verified { "verified " } else { "" },
            f.confidence,
            f.title(),
            f.detail(),
            f.refs.len()
        );
        for r in &f.refs {
            println!("      {}: {}", r.evidence, r.quote);
        }
    }

    // Every quote is verbatim in the evidence it cites.
    for finding in &case.findings {
        for citation in &finding.refs {
            let cited = case
                .evidence
                .iter()
                .find(|e| e.id == citation.evidence)
                .unwrap_or_else(|| panic!("{name}: cites unknown {}", citation.evidence));
            assert!(
                cited.excerpt.contains(&citation.quote),
                "{name}: quote {:?} not in {}",
                citation.quote,
                citation.evidence
            );
        }
        assert!(
            !finding.refs.is_empty(),
            "{name}: finding without refs: {}",
            finding.title()
        );
    }

    // The rubric's keywords are mentioned (each inner list: any one of, case-insensitive).
    let text = findings_text(&case.findings);
    for alternatives in &case.must_mention {
        assert!(
            alternatives
                .iter()
                .any(|k| text.contains(&k.to_lowercase())),
            "{name}: none of {alternatives:?} mentioned in findings:\n{text}"
        );
    }

    // verdict: post — a detector-verified cause that explains the alert heads the story.
    let story = explain(&case.findings, case.symptom);
    assert!(
        story.headline().is_some_and(|chain| chain.cause.verified),
        "{name}: no verified cause explains the alert"
    );
}

#[test]
fn case_01_oom_kill() {
    check_case("01_oom_kill");
}

#[test]
fn case_02_crashloop_backoff() {
    check_case("02_crashloop_backoff");
}

#[test]
fn case_04_image_pull_backoff() {
    check_case("04_image_pull_backoff");
}

#[test]
fn case_05_crashpod() {
    check_case("05_crashpod");
}

#[test]
fn case_06_job_failure() {
    check_case("06_job_failure");
}

#[test]
fn failed_recordings_become_missing_evidence() {
    let case = load_case("06_job_failure");
    assert!(
        case.missing
            .iter()
            .any(|m| m.capability == Capability::PodLogsPrevious
                && m.reason.contains("previous terminated container")),
        "{:?}",
        case.missing
    );
}
