//! The registry's own tests: every kind declares itself completely (a role, what verifies it,
//! the symptoms it accounts for, an example whose title, detail and next step say something),
//! names are unique, and a finding round-trips through the JSON the round checkpoints.

use std::collections::BTreeSet;

use super::*;

fn scene() -> Scene {
    Scene {
        namespace: "payments".into(),
        pod: Some("api-7d9f8c6b5-x2k4q".into()),
        workload: Some("api".into()),
        container: Some("api".into()),
        workload_ref: "deployment/api".into(),
        when: "around 14:02 UTC".into(),
        headline: true,
    }
}

#[test]
fn every_kind_declares_its_role_verification_and_next_step() {
    assert!(Kind::ALL.len() >= 30, "{}", Kind::ALL.len());
    for &kind in Kind::ALL {
        let spec = kind.spec();
        let example = kind.example();
        assert_eq!(example.kind(), kind, "{kind:?}'s example is another kind");
        assert!(!spec.name.is_empty(), "{kind:?} has no name");
        assert!(
            spec.verified_when.len() > 20,
            "{kind:?} does not say what verifies it: {:?}",
            spec.verified_when
        );
        assert!(
            !spec.accounts_for.is_empty() || matches!(spec.role, Role::Context | Role::Symptom),
            "{kind:?} is a {:?} but accounts for no symptom",
            spec.role
        );
        let finding = Finding::new(example, Confidence::High, true);
        assert!(!finding.title().trim().is_empty(), "{kind:?} has no title");
        assert!(
            finding.detail().len() > finding.title().len() / 2,
            "{kind:?}'s detail"
        );
        let step = finding.step(&scene());
        assert!(
            step.len() > 30 && step.ends_with(['.', ')']),
            "{kind:?}'s next step is not a sentence: {step:?}"
        );
        assert!(!kind.part().is_empty());
    }
}

#[test]
fn kind_names_are_unique_and_match_the_display() {
    let names: BTreeSet<&str> = Kind::ALL.iter().map(|k| k.spec().name).collect();
    assert_eq!(names.len(), Kind::ALL.len(), "two kinds share a name");
    assert_eq!(Kind::OomKilled.to_string(), "oom-killed");
}

#[test]
fn a_finding_round_trips_through_the_checkpoint_json() {
    for &kind in Kind::ALL {
        let mut finding = Finding::new(kind.example(), Confidence::Medium, false);
        finding.standing = Standing::Superseded {
            because: "the pod has since been scheduled".into(),
        };
        let json = serde_json::to_value(&finding).expect("serialises");
        assert!(json["fact"]["kind"].as_str().is_some(), "{json}");
        let back: Finding = serde_json::from_value(json).expect("deserialises");
        assert_eq!(back, finding);
    }
}

#[test]
fn a_finding_that_no_longer_stands_is_context_whatever_its_kind() {
    let mut oom = Finding::new(Kind::OomKilled.example(), Confidence::High, true);
    assert_eq!(oom.role(), Role::Cause);
    assert!(oom.is_verified_cause());
    oom.standing = Standing::Routine {
        class: Routine::ProbeAtStartup,
    };
    assert_eq!(oom.role(), Role::Context);
    assert!(!oom.is_verified_cause());
    assert!(oom.detail().contains("routine"), "{}", oom.detail());
}

#[test]
fn findings_of_one_kind_about_one_thing_merge_and_keep_what_either_saw() {
    let pull = |failure: Option<images::PullFailure>, status: Option<&str>, quote: &str| {
        Finding::new(
            images::ImagePull {
                pod: Some("api-7d9f8c6b5-x2k4q".into()),
                image: Some("registry/api:2.0".into()),
                failure,
                status: status.map(str::to_string),
            },
            Confidence::High,
            true,
        )
        .citing(vec![Citation {
            evidence: crate::evidence::EvidenceId::new(1).expect("E1"),
            quote: quote.into(),
        }])
    };
    let merged = merge(vec![
        pull(None, None, "reason: ImagePullBackOff"),
        pull(
            Some(images::PullFailure::Denied),
            Some("401 Unauthorized"),
            "failed to pull: 401 Unauthorized",
        ),
    ]);
    assert_eq!(merged.len(), 1, "{merged:#?}");
    assert_eq!(merged[0].refs.len(), 2);
    let Fact::ImagePull(p) = &merged[0].fact else {
        panic!("{merged:#?}");
    };
    assert_eq!(p.failure, Some(images::PullFailure::Denied));
    assert!(
        merged[0].title().contains("401 Unauthorized"),
        "{}",
        merged[0].title()
    );
}

#[test]
fn the_alerts_symptom_comes_from_its_name_before_its_prose() {
    let symptom = |text: &str| alert_symptom(&firstline_alert::parse_alert(text));
    assert_eq!(
        symptom("alertname=KubePodCrashLooping namespace=a pod=b"),
        Symptom::Restarts
    );
    assert_eq!(
        symptom("alertname=KubeHpaMaxedOut namespace=a horizontalpodautoscaler=b"),
        Symptom::Saturation
    );
    assert_eq!(
        symptom("alertname=CheckoutHighErrorRate namespace=a service=b"),
        Symptom::Errors
    );
    // `job` is in every Prometheus label set: in prose it does not make a Job alert.
    let scrape = "[FIRING:1] ScrapeTargetsMissing\n*Description:* There has been no target for job \
                  search-api-metrics in namespace search for 15 minutes.\n\
                  • *alertname:* `ScrapeTargetsMissing`\n• *namespace:* `search`";
    assert_ne!(symptom(scrape), Symptom::JobFailed);
    assert_eq!(
        symptom("alertname=NightlyExportJobFailed namespace=a"),
        Symptom::JobFailed
    );
    // A dead man's switch says a run never finished.
    assert_eq!(
        symptom(
            "MISSED: nightly-billing-export did not complete
Expected by 03:00 UTC."
        ),
        Symptom::JobFailed
    );
}

#[test]
fn a_step_for_a_neighbours_pod_names_that_pods_workload_not_the_alerts() {
    let scene = scene();
    assert_eq!(
        scene.workload_of(Some("api-7d9f8c6b5-x2k4q")),
        "deployment/api"
    );
    assert_eq!(scene.workload_of(None), "deployment/api");
    assert_eq!(
        scene.workload_of(Some("search-indexer-5c9d8f7b6-q2w3e")),
        "deployment/search-indexer"
    );
    assert_eq!(
        scene.workload_of(Some("search-indexer-5c9d8f7b6")),
        "deployment/search-indexer"
    );
    // A name that says nothing of its owner (a Job's pod) is not given the alert's workload.
    assert_eq!(
        scene.workload_of(Some("report-29087415-q8k2d")),
        "the owner of `report-29087415-q8k2d`"
    );
}
