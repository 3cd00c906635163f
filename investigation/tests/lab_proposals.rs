//! Every shipped scenario, served by the lab over real MCP and investigated as `firstline eval`
//! does: a round proposes an action only from a verified headline, the action names only an
//! object of that headline's chain, and it is what the headline's next step already says to do.
//! The scenarios the end-to-end tests rely on propose what they need (a rollback, a CronJob
//! resumed, a node cordoned); the test prints what every scenario proposes.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use firstline_config::{McpServerSettings, McpSettings};
use firstline_investigation::detectors::Finding;
use firstline_investigation::propose::Proposal;
use firstline_investigation::summarise::story;
use firstline_investigation::tools::{CallScope, McpTools};
use firstline_investigation::{
    AlertInput, GraphOptions, IncidentState, build_incident_graph, run_round,
};
use firstline_lab::{Scenario, load_all, serve_http};
use firstline_model::{Action, HumanAnswer, ThreadContext};
use futures::StreamExt;

/// Scenarios investigated at once (each with its own lab server).
const PARALLEL: usize = 8;

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../lab/scenarios")
}

/// The scenario's thread as `firstline eval` gives it: its replies as people's answers.
fn thread(scenario: &Scenario) -> ThreadContext {
    ThreadContext {
        human_answers: scenario
            .spec
            .thread_replies
            .iter()
            .map(|reply| {
                let at = reply.at.map_or(scenario.alert_at, |at| scenario.time(at));
                HumanAnswer {
                    user: reply.user.clone(),
                    text: reply.text.clone(),
                    ts: format!("{}.{:06}", at.timestamp(), at.timestamp_subsec_micros()),
                    question: None,
                }
            })
            .collect(),
        ..ThreadContext::default()
    }
}

/// One round of `scenario` through the lab.
async fn investigate(scenario: Scenario) -> (String, IncidentState) {
    let lab = serve_http(scenario.clone(), SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("the lab MCP server listens");
    let settings = McpSettings {
        servers: vec![McpServerSettings {
            name: "lab".into(),
            url: Some(lab.mcp_url()),
            profile: Some("lab".into()),
            // Short enough to cut the failing scenario's hang, long enough for a loaded machine.
            call_timeout_secs: Some(5),
            ..Default::default()
        }],
        ..Default::default()
    };
    let tools = McpTools::from_settings(&settings, None).expect("tool settings are valid");
    let source = Arc::new(tools.round(CallScope::adhoc(format!("proposals-{}", scenario.name))));
    let graph = build_incident_graph(source, None, GraphOptions::default())
        .expect("the incident graph compiles");
    let input = IncidentState::new(
        AlertInput::parse(scenario.alert_text(), Some(scenario.alert_at)),
        thread(&scenario),
    );
    let state = run_round(&graph, input).await.expect("the round runs");
    tools.shutdown().await;
    lab.shutdown().await;
    (scenario.name, state)
}

/// Whether `member` names `name`: it is about it, or its title names it.
fn names(member: &Finding, name: &str) -> bool {
    member.resource().as_deref() == Some(name) || member.title().contains(&format!("`{name}`"))
}

/// What the headline's next step must say for the step and the action to agree.
fn step_says(action: &Action) -> String {
    match action {
        Action::Rollback { deployment, .. } => format!("rollout undo deployment/{deployment}"),
        Action::SuspendCronJob {
            name,
            suspend: false,
            ..
        } => format!("patch cronjob {name} -p '{{\"spec\":{{\"suspend\":false}}}}'"),
        Action::Cordon { cordon: true, .. } => "cordon".to_string(),
        other => panic!("no rule proposes {other:?}"),
    }
}

/// Checks one scenario's proposal against its story and report.
fn check(name: &str, state: &IncidentState, proposal: &Proposal) {
    let story = story(state);
    let chain = story
        .headline()
        .unwrap_or_else(|| panic!("{name}: a proposal with no headline: {proposal:#?}"));
    assert!(chain.cause.is_verified_cause(), "{name}: {proposal:#?}");
    let report = state.report.as_ref().expect("a report");
    assert!(report.causes[0].confirmed, "{name}");
    assert_eq!(proposal.cause, chain.cause.title(), "{name}");
    let object = proposal.action.object();
    let members = chain.members();
    assert!(
        members.iter().any(|m| names(m, &object.name)),
        "{name}: {object} is outside the headline's chain: {:#?}",
        members.iter().map(|m| m.title()).collect::<Vec<_>>()
    );
    let says = step_says(&proposal.action);
    assert!(
        report.next_steps[0].contains(&says),
        "{name}: the headline's step does not say {says:?}: {:#?}",
        report.next_steps
    );
    for id in &proposal.evidence {
        assert!(
            state.evidence.iter().any(|e| e.id.to_string() == *id),
            "{name}: {id} is no evidence of the round"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_scenario_proposes_only_from_its_verified_headline() {
    let scenarios = load_all(&scenarios_dir()).expect("scenarios load");
    let mut rounds: Vec<(String, IncidentState)> = futures::stream::iter(scenarios)
        .map(investigate)
        .buffer_unordered(PARALLEL)
        .collect()
        .await;
    rounds.sort_by(|a, b| a.0.cmp(&b.0));

    let mut proposed: Vec<(String, Action)> = Vec::new();
    for (name, state) in &rounds {
        let proposal = state.report.as_ref().and_then(|r| r.proposal.as_ref());
        match proposal {
            Some(proposal) => {
                check(name, state, proposal);
                eprintln!("{name}: {}", proposal.action.title());
                proposed.push((name.clone(), proposal.action.clone()));
            }
            None => eprintln!("{name}: nothing proposed"),
        }
    }
    let by = |scenario: &str| {
        proposed
            .iter()
            .find(|(name, _)| name == scenario)
            .map(|(_, action)| action.clone())
    };
    assert_eq!(
        by("bad-deploy-error-rate"),
        Some(Action::Rollback {
            namespace: "shop".into(),
            deployment: "checkout".into(),
            from_revision: 3,
            to_revision: 2,
        })
    );
    assert_eq!(
        by("cronjob-invoice-dunning-suspended-healthchecks-yesterday-retry"),
        Some(Action::SuspendCronJob {
            namespace: "collections".into(),
            name: "invoice-dunning".into(),
            suspend: false,
        })
    );
    assert_eq!(
        by("job-gpu-xid79-fallen-off-bus-one-node"),
        Some(Action::Cordon {
            node: "gpu-g5-1c-2".into(),
            cordon: true,
        })
    );
}
