//! MCP over `https://` with credentials (issue 24): the tool layer talks real MCP to the lab
//! server through a TLS front that demands a bearer token and a tenant header, trusting the
//! front's CA from `ca_file` and reading the token from `bearer_token_file`. Refusals are missing
//! evidence that says what was refused, and nothing reaches the server: a client that trusts
//! another CA, one without the token, and one whose token file is empty.

#[path = "support/accept_loop.rs"]
mod accept_loop;
#[path = "support/mcp_front.rs"]
mod mcp_front;
// Its client certificates are for the Temporal and PostgreSQL fronts; the MCP front needs none.
#[allow(dead_code)]
#[path = "support/test_ca.rs"]
mod test_ca;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use chrono::Utc;
use firstline_config::{McpServerSettings, McpSettings};
use firstline_investigation::tools::{
    CallScope, CapabilityRequest, EvidenceSource, Fetched, McpTools,
};
use firstline_lab::{LabHandle, Scenario, serve_http};
use mcp_front::McpFront;

const WORLD: &str = r#"
alert: {text: "KubePodCrashLooping payments/api-7c9-x2x7q"}
pods:
  - name: api-7c9-x2x7q
    namespace: payments
    containers:
      - name: api
        image: registry/api:1.8.3
        ready: false
        restartCount: 7
        state: {waiting: {reason: CrashLoopBackOff}}
        lastState: {terminated: {exitCode: 78, finishedAt: -1m}}
expect: {verdict: post}
"#;
const TOKEN: &str = "mcp-token-Zq81xv0Lr4";
const TENANT: (&str, &str) = ("X-Scope-OrgID", "tenant-7f3k");

async fn lab() -> LabHandle {
    let scenario = Scenario::parse("t", Path::new("mcp_tls.rs"), WORLD, Utc::now())
        .expect("test scenario parses");
    serve_http(scenario, SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("lab server starts")
}

/// A front before `lab` demanding the token and the tenant header.
async fn front(lab: &LabHandle) -> McpFront {
    let upstream = lab.mcp_url();
    let upstream = upstream.trim_end_matches("/mcp");
    McpFront::start(
        upstream,
        vec![
            ("authorization".into(), format!("Bearer {TOKEN}")),
            (TENANT.0.to_ascii_lowercase(), TENANT.1.into()),
        ],
    )
    .await
}

fn settings(
    url: &str,
    ca_file: Option<PathBuf>,
    bearer_token_file: Option<PathBuf>,
) -> McpSettings {
    McpSettings {
        servers: vec![McpServerSettings {
            name: "lab".into(),
            url: Some(url.into()),
            ca_file,
            bearer_token_file,
            headers: BTreeMap::from([(TENANT.0.into(), TENANT.1.into())]),
            profile: Some("lab".into()),
            call_timeout_secs: Some(10),
            connect_timeout_secs: Some(5),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn describe() -> CapabilityRequest {
    CapabilityRequest::PodDescribe {
        namespace: "payments".into(),
        pod: "api-7c9-x2x7q".into(),
    }
}

fn token_file(dir: &Path, token: &str) -> PathBuf {
    let path = dir.join("token");
    std::fs::write(&path, format!("{token}\n")).expect("writing the token");
    path
}

#[tokio::test]
async fn mcp_over_https_with_a_bearer_token_and_headers_reaches_the_server() {
    let lab = lab().await;
    let front = front(&lab).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let tools = McpTools::from_settings(
        &settings(
            &front.url,
            Some(front.ca_file.clone()),
            Some(token_file(dir.path(), TOKEN)),
        ),
        None,
    )
    .expect("valid settings");
    let round = tools.round(CallScope::adhoc("tls"));
    match round.fetch(describe()).await {
        Fetched::Found(output) => assert!(
            output.text.contains("name: api-7c9-x2x7q"),
            "{}",
            output.text
        ),
        Fetched::Missing(missing) => panic!("missing: {}", missing.reason),
    }
    assert_eq!(lab.counts().get("pods_get"), 1, "the call reached the lab");
    assert!(
        front.forwarded() >= 2,
        "initialize, list and call went through the front"
    );
    assert_eq!(front.unauthenticated(), 0);
    assert_eq!(front.handshakes_refused(), 0);
    lab.shutdown().await;
}

#[tokio::test]
async fn an_untrusted_certificate_or_a_missing_token_is_missing_evidence_and_sends_nothing() {
    let lab = lab().await;
    let front = front(&lab).await;
    let dir = tempfile::tempdir().expect("temp dir");

    // A CA file of someone else's: the front's certificate does not verify.
    let stranger = dir.path().join("stranger-ca.pem");
    test_ca::TestCa::new("someone else's CA").write_pem(&stranger);
    let untrusted = McpTools::from_settings(
        &settings(
            &front.url,
            Some(stranger),
            Some(token_file(dir.path(), TOKEN)),
        ),
        None,
    )
    .expect("valid settings");
    let reason = match untrusted
        .round(CallScope::adhoc("untrusted"))
        .fetch(describe())
        .await
    {
        Fetched::Missing(missing) => missing.reason,
        Fetched::Found(output) => panic!("an untrusted front answered: {}", output.text),
    };
    assert!(reason.contains("MCP server `lab`"), "{reason}");
    assert!(
        reason.contains("UnknownIssuer") || reason.contains("certificate"),
        "the refusal names the certificate: {reason}"
    );
    assert_eq!(front.forwarded(), 0);

    // Trusted, but without the token: the front answers 401.
    let anonymous = McpTools::from_settings(
        &settings(&front.url, Some(front.ca_file.clone()), None),
        None,
    )
    .expect("valid settings");
    let reason = match anonymous
        .round(CallScope::adhoc("anonymous"))
        .fetch(describe())
        .await
    {
        Fetched::Missing(missing) => missing.reason,
        Fetched::Found(output) => panic!("an anonymous client was answered: {}", output.text),
    };
    assert!(reason.contains("MCP server `lab`"), "{reason}");
    assert!(
        reason.contains("401") || reason.to_lowercase().contains("unauthorized"),
        "the refusal is named: {reason}"
    );
    assert!(front.unauthenticated() >= 1);
    assert!(!reason.contains(TOKEN));

    // A token file that is empty is a configuration error named by its path.
    let empty = token_file(dir.path(), "");
    let tools = McpTools::from_settings(
        &settings(&front.url, Some(front.ca_file.clone()), Some(empty.clone())),
        None,
    )
    .expect("valid settings");
    let reason = match tools
        .round(CallScope::adhoc("empty"))
        .fetch(describe())
        .await
    {
        Fetched::Missing(missing) => missing.reason,
        Fetched::Found(output) => panic!("answered without a token: {}", output.text),
    };
    assert!(reason.contains(&empty.display().to_string()), "{reason}");

    assert_eq!(front.forwarded(), 0, "nothing reached the lab");
    assert_eq!(lab.counts().total(), 0);
    lab.shutdown().await;
}
