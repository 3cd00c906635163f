//! The crate map holds: every workspace crate depends only on the crates below it that
//! ARCHITECTURE.md's code map allows, and the deterministic workflow crate has no I/O library in
//! its dependency tree. Read from `cargo metadata`, so a new edge fails here before it spreads.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

/// Each workspace crate and the workspace crates it may depend on (normal dependencies; tests
/// and benchmarks may reach further). `firstline`, the binary, hosts everything and is not
/// listed.
const ALLOWED: &[(&str, &[&str])] = &[
    ("firstline-model", &[]),
    ("firstline-graph", &[]),
    ("firstline-alert", &[]),
    ("firstline-lab", &[]),
    ("firstline-llm", &[]),
    ("firstline-redact", &[]),
    ("firstline-embed", &["firstline-config", "firstline-llm"]),
    ("firstline-config", &["firstline-model"]),
    ("firstline-temporal", &["firstline-config"]),
    ("firstline-slack", &["firstline-config", "firstline-model"]),
    ("firstline-store", &["firstline-config", "firstline-model"]),
    ("firstline-stack", &["firstline-config", "firstline-store"]),
    (
        "firstline-testkit",
        &["firstline-config", "firstline-store", "firstline-stack"],
    ),
    (
        "firstline-investigation",
        &[
            "firstline-alert",
            "firstline-config",
            "firstline-embed",
            "firstline-graph",
            "firstline-llm",
            "firstline-model",
            "firstline-redact",
            "firstline-store",
        ],
    ),
    ("firstline-workflows", &["firstline-model"]),
    (
        "firstline-activities",
        &[
            "firstline-workflows",
            "firstline-investigation",
            "firstline-alert",
            "firstline-slack",
            "firstline-store",
            "firstline-config",
            "firstline-graph",
            "firstline-embed",
            "firstline-llm",
            "firstline-model",
            "firstline-redact",
        ],
    ),
    (
        "firstline-bot",
        &[
            "firstline-redact",
            "firstline-temporal",
            "firstline-workflows",
            "firstline-alert",
            "firstline-slack",
            "firstline-store",
            "firstline-config",
            "firstline-model",
        ],
    ),
    ("firstline-bench-ingest", &["firstline-slack"]),
];

/// Libraries that do I/O, and the crates that read configuration or reach outside systems; none
/// may be in the workflow crate's tree.
const NOT_IN_WORKFLOWS: &[&str] = &[
    "sqlx",
    "rmcp",
    "reqwest",
    "slack-morphism",
    "rdkafka",
    "figment",
    "firstline-config",
    "firstline-store",
    "firstline-slack",
    "firstline-investigation",
];

/// This machine's target triple: dependencies for other platforms are neither downloaded nor
/// built here, and `cargo metadata --offline` cannot resolve them.
fn host_triple() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let output = Command::new(rustc)
        .arg("-vV")
        .output()
        .expect("running rustc -vV");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .to_string()
}

fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let host = host_triple();
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .args(["--filter-platform", &host])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("running cargo metadata");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON")
}

fn str_field<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Whether a `resolve` edge is a normal (not dev, not build) dependency.
fn is_normal(dep: &Value) -> bool {
    dep.get("dep_kinds")
        .and_then(Value::as_array)
        .is_some_and(|kinds| {
            kinds
                .iter()
                .any(|k| k.get("kind").is_none_or(Value::is_null))
        })
}

/// Package id → (name, normal dependencies' ids), from the resolve graph.
fn graph(metadata: &Value) -> BTreeMap<String, (String, Vec<String>)> {
    let names: BTreeMap<&str, &str> = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| (str_field(p, "id"), str_field(p, "name")))
        .collect();
    metadata["resolve"]["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|node| {
            let id = str_field(node, "id").to_string();
            let deps = node["deps"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|d| is_normal(d))
                .map(|d| str_field(d, "pkg").to_string())
                .collect();
            let name = names.get(id.as_str()).copied().unwrap_or_default();
            (id, (name.to_string(), deps))
        })
        .collect()
}

#[test]
fn workspace_crates_depend_only_on_what_the_map_allows() {
    let metadata = metadata();
    let graph = graph(&metadata);
    let members: BTreeSet<&str> = metadata["workspace_members"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut violations = Vec::new();
    for id in &members {
        let (name, deps) = &graph[*id];
        if name == "firstline" {
            continue;
        }
        let Some(may) = allowed.get(name.as_str()) else {
            violations.push(format!("{name} is not on the crate map"));
            continue;
        };
        for dep in deps.iter().filter(|d| members.contains(d.as_str())) {
            let dep_name = &graph[dep].0;
            if !may.contains(&dep_name.as_str()) {
                violations.push(format!("{name} → {dep_name}"));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "edges the crate map forbids (see ARCHITECTURE.md, code map):\n{}",
        violations.join("\n")
    );
}

#[test]
fn the_workflow_crate_has_no_io_library_in_its_tree() {
    let metadata = metadata();
    let graph = graph(&metadata);
    let root = graph
        .iter()
        .find(|(_, (name, _))| name == "firstline-workflows")
        .map(|(id, _)| id.clone())
        .expect("firstline-workflows is in the workspace");
    let mut seen = BTreeSet::new();
    let mut queue = vec![root];
    while let Some(id) = queue.pop() {
        if !seen.insert(id.clone()) {
            continue;
        }
        queue.extend(graph[&id].1.iter().cloned());
    }
    let names: BTreeSet<&str> = seen.iter().map(|id| graph[id].0.as_str()).collect();
    let found: Vec<&&str> = NOT_IN_WORKFLOWS
        .iter()
        .filter(|lib| names.contains(**lib))
        .collect();
    assert!(
        found.is_empty(),
        "firstline-workflows reaches {found:?}; workflow code must not be able to do I/O"
    );
    assert!(
        names.contains("temporalio-sdk"),
        "the tree was read: {} crates",
        names.len()
    );
}
