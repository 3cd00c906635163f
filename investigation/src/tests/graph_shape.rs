//! The compiled graph's exact shape, and the steps a round takes.

use std::sync::Arc;

use firstline_graph::{END, Edge, START};
use futures::StreamExt;

use super::fake::FakeSource;
use super::*;

fn fixed(from: &str, to: &str) -> Edge {
    Edge::Fixed {
        from: from.to_string(),
        to: to.to_string(),
    }
}

#[test]
fn compiled_graph_has_the_designed_shape() {
    let graph = build_incident_graph(Arc::new(FakeSource::new()), None, GraphOptions::default())
        .expect("compiles");
    assert_eq!(
        graph.nodes(),
        ["investigate", "recall", "summarise", "judge", "ask"]
    );
    assert_eq!(
        graph.edges(),
        [
            fixed(START, "investigate"),
            fixed(START, "recall"),
            Edge::Join {
                from: vec!["investigate".to_string(), "recall".to_string()],
                to: "summarise".to_string(),
            },
            fixed("summarise", "judge"),
            Edge::Conditional {
                from: "judge".to_string(),
                targets: vec!["ask".to_string(), END.to_string()],
            },
            fixed("ask", END),
        ]
    );
    assert_eq!(
        graph.mermaid(),
        "graph TD
    __start__([START])
    investigate[investigate]
    recall[recall]
    summarise[summarise]
    judge[judge]
    ask[ask]
    __end__([END])
    __start__ --> investigate
    __start__ --> recall
    investigate & recall -->|join| summarise
    summarise --> judge
    judge -.-> ask
    judge -.-> __end__
    ask --> __end__
"
    );
    for name in graph.nodes() {
        let policy = graph.policy(name).expect("policy");
        assert!(policy.timeout.is_some(), "{name} has no timeout");
    }
    assert_eq!(RECURSION_LIMIT, 4);
}

async fn steps(source: FakeSource, alert: &str) -> Vec<Vec<String>> {
    let graph =
        build_incident_graph(Arc::new(source), None, GraphOptions::default()).expect("compiles");
    let mut stream = graph.stream(input(alert), RECURSION_LIMIT);
    let mut ran = Vec::new();
    while let Some(event) = stream.next().await {
        ran.push(event.expect("step succeeds").ran);
    }
    ran
}

#[tokio::test]
async fn a_grounded_round_ends_after_judge_and_an_ungrounded_one_asks() {
    let grounded = steps(crash_loop_world(), CRASH_ALERT).await;
    assert_eq!(
        grounded,
        [
            vec!["investigate".to_string(), "recall".to_string()],
            vec!["summarise".to_string()],
            vec!["judge".to_string()],
        ]
    );
    let asking = steps(FakeSource::new(), CRASH_ALERT).await;
    assert_eq!(
        asking.len(),
        RECURSION_LIMIT,
        "the longest run fits the limit"
    );
    assert_eq!(asking[3], ["ask"]);
}

#[test]
fn state_round_trips_through_json_for_checkpoints() {
    let state = input(CRASH_ALERT);
    let json = serde_json::to_string(&state).expect("serialises");
    let back: IncidentState = serde_json::from_str(&json).expect("deserialises");
    assert_eq!(back, state);
}
