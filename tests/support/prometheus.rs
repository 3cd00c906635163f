//! The real Prometheus (Debian's `prometheus`, installed by `scripts/setup`) scraping one target
//! every second, and its instant-query API: what KEDA's `prometheus` trigger asks in a cluster.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use firstline_lab::peers::{Peer, PeerTools, free_port};

use crate::support::round_app::http_get;

/// A running Prometheus with one scrape job; stopped on drop.
pub struct Scraper {
    _peer: Peer,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Scraper {
    /// Starts Prometheus scraping `http://{target}/metrics` every second; waits until it is ready.
    pub async fn start(target: &str) -> Self {
        let tools = PeerTools::locate(Path::new(env!("CARGO_MANIFEST_DIR")))
            .unwrap_or_else(|e| panic!("{e}"));
        let dir = tempfile::tempdir().expect("a directory for Prometheus");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
                 scrape_configs:\n  - job_name: firstline-worker\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .expect("writing prometheus.yml");
        let port = free_port().unwrap_or_else(|e| panic!("{e}"));
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let args = vec![
            format!("--config.file={}", config.display()),
            format!("--storage.tsdb.path={}", dir.path().join("data").display()),
            format!("--web.listen-address={addr}"),
        ];
        let mut peer = Peer::spawn(
            "prometheus",
            &tools.prometheus,
            &args,
            &[],
            &dir.path().join("prometheus.log"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        peer.wait_http_ok(addr, "/-/ready", Duration::from_secs(60))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        Self {
            _peer: peer,
            addr,
            _dir: dir,
        }
    }

    /// The instant value of `promql` as KEDA's scaler reads it: the first sample's value, or
    /// `None` for an empty result.
    pub async fn query(&self, promql: &str) -> Option<f64> {
        let url = format!(
            "http://{}/api/v1/query?query={}",
            self.addr,
            percent_encode(promql)
        );
        let (status, body) = http_get(&url).await;
        assert_eq!(status, 200, "{promql}: {body}");
        let answer: serde_json::Value =
            serde_json::from_str(&body).unwrap_or_else(|e| panic!("{promql}: {e}: {body}"));
        let value = answer["data"]["result"].get(0)?["value"][1].as_str()?;
        Some(
            value
                .parse()
                .unwrap_or_else(|e| panic!("{promql}: value {value}: {e}")),
        )
    }
}

/// Every byte but unreserved ones as `%XX`.
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
