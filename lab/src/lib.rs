//! firstline-lab: incidents on demand.
//!
//! A **scenario** (`lab/scenarios/<name>/scenario.yaml`, see `lab/README.md`) describes one
//! incident: the Slack alert, the world the tools see (pods, workloads, services, ingresses,
//! network policies, disruption budgets, nodes and their journals, storage and volume
//! attachments, autoscalers, quotas, events, logs, metrics, log streams, traces) at times
//! relative to the alert, optional verbatim tool results for fault injection, optional past
//! incidents and thread replies, what the world looks like after an action (`after_action`),
//! and the expected outcome.
//!
//! The **lab MCP server** serves a scenario over real MCP (streamable HTTP or stdio) with the
//! tool names and argument shapes of the real servers Firstline's profiles target, so the same
//! configuration investigates the lab and production. Beside the read-only endpoint, a write
//! endpoint serves kubernetes-mcp-server's write tools over the same world, which they change
//! as Kubernetes would. It counts calls per tool, and the writes that changed the world, for
//! tests.
//!
//! - [`scenario`] — the format, its loader and the expectation check.
//! - [`reltime`] — relative times (`-10m`).
//! - [`render`] — the world rendered as the real servers render it.
//! - [`server`] — the MCP server (read-only and write endpoints over one [`LabWorld`]),
//!   [`serve_http`] and [`serve_stdio`].
//! - [`write`] — the write tools (`resources_create_or_update`, `resources_scale`,
//!   `pods_delete`) and the controllers' work they trigger.
//! - [`peers`] — real peers in the loop: a fake Kubernetes API for the real
//!   kubernetes-mcp-server, and the real Prometheus (backfilled) behind prometheus-mcp-server.
//! - [`holmes_fixture`] — HolmesGPT's recorded tool calls, for the HolmesGPT case adapter.
//!
//! The lab knows nothing of the investigation: the tests that drive the investigation through
//! it live with the investigation (`investigation/tests/lab_*.rs`).

pub mod holmes_fixture;
pub mod peers;
pub mod reltime;
pub mod render;
pub mod scenario;
pub mod server;
pub mod write;

pub use scenario::{
    Expect, ExpectCheck, ExpectedVerdict, HeadlineCheck, Reply, Scenario, ScenarioError, load_all,
};
pub use server::{
    CallCounts, LabHandle, LabServer, LabWorld, Writes, serve_http, serve_stdio,
    serve_stdio_writable,
};
pub use write::{AppliedWrite, WriteTool};
