//! The tool layer drives the lab server as a stdio child process (`firstline-lab serve
//! --stdio`), the transport kubernetes-mcp-server is usually run with.

use std::path::Path;

use firstline_config::{McpServerSettings, McpSettings};
use firstline_investigation::tools::{
    CallScope, CapabilityRequest, EvidenceSource, Fetched, McpTools,
};

#[tokio::test]
async fn the_layer_talks_to_the_lab_over_stdio() {
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("../lab/scenarios/oomkilled");
    let settings = McpSettings {
        servers: vec![McpServerSettings {
            name: "lab-stdio".into(),
            command: Some(
                firstline_testkit::workspace_binary("firstline-lab")
                    .display()
                    .to_string(),
            ),
            args: vec![
                "serve".into(),
                "--stdio".into(),
                "--scenario".into(),
                scenario.display().to_string(),
            ],
            profile: Some("lab".into()),
            connect_timeout_secs: Some(20),
            ..Default::default()
        }],
        ..Default::default()
    };
    let tools = McpTools::from_settings(&settings, None).unwrap();
    let round = tools.round(CallScope::adhoc("stdio"));
    let fetched = round
        .fetch(CapabilityRequest::PodDescribe {
            namespace: "analytics".into(),
            pod: "analytics-exporter-5b7d9c6f48-qm2kd".into(),
        })
        .await;
    match fetched {
        Fetched::Found(output) => {
            assert!(output.text.contains("reason: OOMKilled"), "{}", output.text);
            assert!(output.text.contains("memory: 256Mi"), "{}", output.text);
            assert_eq!(output.server, "lab-stdio");
            assert_eq!(output.tool, "pods_get");
        }
        Fetched::Missing(missing) => panic!("missing: {}", missing.reason),
    }
    let listed = tools.allowed_tools().await;
    assert!(listed.iter().any(|t| t.tool == "pods_log"), "{listed:?}");
    tools.shutdown().await;
}
