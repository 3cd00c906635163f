//! `firstline dev` as an operator runs it: it becomes ready, `doctor` agrees, SIGTERM stops every
//! child, a second start after `kill -9` recovers, and bad set-ups fail with one clear line.

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

mod support;

const READY: &str = "firstline dev is ready";

fn firstline() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_firstline"));
    // Only what this test sets: no FIRSTLINE_* leaking in from the caller's shell.
    for (key, _) in std::env::vars() {
        if key.starts_with("FIRSTLINE_") {
            command.env_remove(key);
        }
    }
    command
        .env(
            "FIRSTLINE_DEV__TOOLS_DIR",
            firstline_testkit::workspace_root().join(".tools"),
        )
        .env("RUST_LOG", "warn")
        // dev also runs the bot and the Slack stand-in: on free ports, so tests run in parallel.
        .env("FIRSTLINE_BOT__LISTEN", "127.0.0.1:0")
        .env("FIRSTLINE_SLACK__STANDIN_PORT", "0")
        .env("FIRSTLINE_WORKER__LISTEN", "127.0.0.1:0")
        .env("FIRSTLINE_EMBEDDER__LISTEN", "127.0.0.1:0")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    command
}

/// A state directory the unprivileged Postgres user can enter.
fn state_dir() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("firstline-dev-test-")
        .tempdir()
        .expect("temp dir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Dev {
    child: Child,
    stdout: Vec<String>,
    /// Every line it has logged so far (also echoed to the test's stderr).
    stderr: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

/// Starts `firstline dev` with state in `state` and the given ports, and waits for ready.
async fn start_dev(state: &Path, ports: [u16; 3]) -> Dev {
    start_dev_with(state, ports, &[]).await
}

/// [`start_dev`] with extra arguments.
async fn start_dev_with(state: &Path, ports: [u16; 3], args: &[&str]) -> Dev {
    start_dev_env(state, ports, args, &[]).await
}

/// [`start_dev_with`] with extra `FIRSTLINE_*` settings.
async fn start_dev_env(
    state: &Path,
    ports: [u16; 3],
    args: &[&str],
    settings: &[(&str, &str)],
) -> Dev {
    let mut child = firstline()
        .arg("dev")
        .args(args)
        .envs(settings.iter().copied())
        .env("FIRSTLINE_DEV__STATE_DIR", state)
        .env("FIRSTLINE_DEV__POSTGRES_PORT", ports[0].to_string())
        .env("FIRSTLINE_DEV__TEMPORAL_PORT", ports[1].to_string())
        .env("FIRSTLINE_DEV__KAFKA_PORT", ports[2].to_string())
        // The default log filter, as a newcomer sees it.
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning firstline dev");
    let stderr = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut logged = BufReader::new(child.stderr.take().unwrap()).lines();
    let kept = std::sync::Arc::clone(&stderr);
    tokio::spawn(async move {
        while let Ok(Some(line)) = logged.next_line().await {
            eprintln!("{line}");
            kept.lock().unwrap_or_else(|p| p.into_inner()).push(line);
        }
    });
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut stdout = Vec::new();
    let ready = tokio::time::timeout(Duration::from_secs(120), async {
        while let Ok(Some(line)) = lines.next_line().await {
            let done = line.contains(READY);
            stdout.push(line);
            if done {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(
        ready,
        Ok(true),
        "dev never became ready; stdout: {stdout:?}"
    );
    // Keep draining stdout so the child never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Dev {
        child,
        stdout,
        stderr,
    }
}

/// The service pids dev printed (`pid N`); each is also its process group.
fn printed_pids(dev: &Dev) -> Vec<i32> {
    let pids: Vec<i32> = dev
        .stdout
        .iter()
        .filter_map(|line| line.split("pid ").nth(1))
        .filter_map(|rest| rest.trim_end_matches(')').parse().ok())
        .collect();
    assert_eq!(pids.len(), 3, "three services: {:?}", dev.stdout);
    pids
}

fn alive(pid: i32) -> bool {
    // A zombie still answers kill(0); it has exited, so count it as gone.
    kill(Pid::from_raw(pid), None).is_ok()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat.rsplit(')')
                .next()
                .is_some_and(|s| s.trim_start().starts_with('Z'))
        })
}

fn group_alive(pgid: i32) -> bool {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| alive(*pid))
        .any(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                stat.rsplit(')')
                    .next()
                    .and_then(|s| s.split_whitespace().nth(2))
                    .and_then(|g| g.parse::<i32>().ok())
                    == Some(pgid)
            })
        })
}

async fn wait_gone(pids: &[i32], within: Duration) {
    let deadline = tokio::time::Instant::now() + within;
    while pids.iter().any(|&p| group_alive(p)) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "left running: {:?}",
            pids.iter().filter(|&&p| group_alive(p)).collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn sigterm(child: &Child) {
    let pid = child.id().expect("running") as i32;
    kill(Pid::from_raw(pid), Signal::SIGTERM).unwrap();
}

#[tokio::test]
async fn dev_becomes_ready_doctor_agrees_and_sigterm_stops_every_child() {
    let state = state_dir();
    let mut dev = start_dev(state.path(), [0, 0, 0]).await;
    let pids = printed_pids(&dev);
    assert!(pids.iter().all(|&p| alive(p)));

    let doctor = firstline()
        .arg("doctor")
        .env("FIRSTLINE_DEV__STATE_DIR", state.path())
        .output()
        .await
        .unwrap();
    let report = String::from_utf8_lossy(&doctor.stdout);
    assert!(doctor.status.success(), "doctor: {report}");
    for expected in [
        "pgvector 0.8",
        "is SERVING",
        "answers ApiVersions",
        "all checks passed",
    ] {
        assert!(
            report.contains(expected),
            "missing {expected:?} in {report}"
        );
    }

    sigterm(&dev.child);
    let status = tokio::time::timeout(Duration::from_secs(60), dev.child.wait())
        .await
        .expect("dev stops within 60 s")
        .unwrap();
    assert!(status.success(), "{status}");
    wait_gone(&pids, Duration::from_secs(5)).await;
    assert!(!state.path().join("run/stack.pid").exists());
}

/// The database URL dev wrote to `<state>/env`.
fn dev_database_url(state: &Path) -> firstline_config::DatabaseUrl {
    let env = std::fs::read_to_string(state.join("env")).expect("dev wrote its env file");
    let url = env
        .lines()
        .find_map(|line| line.strip_prefix("FIRSTLINE_DATABASE__URL="))
        .expect("database URL in env");
    firstline_config::DatabaseUrl::new(url)
}

#[tokio::test]
async fn a_second_start_after_kill_9_recovers_with_the_data() {
    let state = state_dir();
    let ports = [free_port(), free_port(), free_port()];
    let mut first = start_dev(state.path(), ports).await;
    let old = printed_pids(&first);
    let pool = firstline_testkit::connect(&dev_database_url(state.path())).await;
    sqlx::query(
        "INSERT INTO threads (team_id, channel_id, thread_ts) VALUES ('T0A1', 'C0A1', '1.000100')",
    )
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;
    kill(
        Pid::from_raw(first.child.id().unwrap() as i32),
        Signal::SIGKILL,
    )
    .unwrap();
    first.child.wait().await.unwrap();

    // Same ports, same state: leftovers must not be in the way, and the data must survive.
    let mut second = start_dev(state.path(), ports).await;
    let new = printed_pids(&second);
    assert!(old.iter().all(|p| !new.contains(p)));
    wait_gone(&old, Duration::from_secs(5)).await;
    let pool = firstline_testkit::connect(&dev_database_url(state.path())).await;
    let kept: i64 = sqlx::query_scalar("SELECT count(*) FROM threads WHERE thread_ts = '1.000100'")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(kept, 1, "the row committed before kill -9 is still there");
    pool.close().await;

    // Ctrl-C stops it as cleanly as SIGTERM does.
    kill(
        Pid::from_raw(second.child.id().unwrap() as i32),
        Signal::SIGINT,
    )
    .unwrap();
    let status = tokio::time::timeout(Duration::from_secs(60), second.child.wait())
        .await
        .expect("dev stops")
        .unwrap();
    assert!(status.success());
    wait_gone(&new, Duration::from_secs(5)).await;
    // Belt and braces for the test machine: nothing of ours may outlive the test.
    for pid in old.iter().chain(&new) {
        let _ = killpg(Pid::from_raw(*pid), Signal::SIGKILL);
    }
}

#[tokio::test]
async fn a_service_orphaned_by_an_earlier_run_is_stopped_before_start() {
    let state = state_dir();
    std::fs::create_dir_all(state.path().join("run")).unwrap();
    // Stands in for a broker that outlived a killed dev: its own process group, recorded in the
    // pid file with its kernel start time, as the supervisor records real services.
    let mut orphan = std::process::Command::new("sleep")
        .arg("300")
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = orphan.id() as i32;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let start_time = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .nth(19)
        .unwrap()
        .to_string();
    std::fs::write(
        state.path().join("run/kafka.pid"),
        format!("{pid} {start_time}\n"),
    )
    .unwrap();

    let mut dev = start_dev(state.path(), [0, 0, 0]).await;
    let status = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if let Some(status) = orphan.try_wait().unwrap() {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the orphan was stopped");
    assert!(!status.success(), "stopped by a signal: {status}");
    let pids = printed_pids(&dev);
    assert!(!pids.contains(&pid));

    sigterm(&dev.child);
    tokio::time::timeout(Duration::from_secs(60), dev.child.wait())
        .await
        .expect("dev stops")
        .unwrap();
    wait_gone(&pids, Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_second_dev_on_the_same_state_is_refused() {
    let state = state_dir();
    let mut first = start_dev(state.path(), [0, 0, 0]).await;
    let error = expect_one_line_error(
        firstline()
            .arg("dev")
            .env("FIRSTLINE_DEV__STATE_DIR", state.path())
            .env("FIRSTLINE_DEV__POSTGRES_PORT", "0")
            .env("FIRSTLINE_DEV__TEMPORAL_PORT", "0")
            .env("FIRSTLINE_DEV__KAFKA_PORT", "0"),
    )
    .await;
    assert!(error.contains("already running"), "{error}");
    assert!(
        error.contains(&first.child.id().unwrap().to_string()),
        "{error}"
    );
    let pids = printed_pids(&first);
    sigterm(&first.child);
    tokio::time::timeout(Duration::from_secs(60), first.child.wait())
        .await
        .expect("dev stops")
        .unwrap();
    wait_gone(&pids, Duration::from_secs(5)).await;
}

/// Runs `firstline ARGS` expecting failure; returns its single `error:` line.
async fn expect_one_line_error(command: &mut Command) -> String {
    let output = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("fails promptly")
        .unwrap();
    assert!(!output.status.success(), "must exit non-zero");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "exactly one error line in: {stderr}");
    errors[0].to_string()
}

#[tokio::test]
async fn an_occupied_port_names_the_port_and_the_setting() {
    let state = state_dir();
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port();
    let error = expect_one_line_error(
        firstline()
            .arg("dev")
            .env("FIRSTLINE_DEV__STATE_DIR", state.path())
            .env("FIRSTLINE_DEV__POSTGRES_PORT", "0")
            .env("FIRSTLINE_DEV__TEMPORAL_PORT", "0")
            .env("FIRSTLINE_DEV__KAFKA_PORT", port.to_string()),
    )
    .await;
    assert!(error.contains(&format!("port {port}")), "{error}");
    assert!(error.contains("FIRSTLINE_DEV__KAFKA_PORT"), "{error}");
}

#[tokio::test]
async fn a_missing_tools_directory_says_to_run_setup() {
    let state = state_dir();
    let error = expect_one_line_error(
        firstline()
            .arg("dev")
            .env("FIRSTLINE_DEV__STATE_DIR", state.path())
            .env("FIRSTLINE_DEV__TOOLS_DIR", "/nonexistent/tools"),
    )
    .await;
    assert!(error.contains("/nonexistent/tools"), "{error}");
    assert!(error.contains("scripts/setup"), "{error}");

    let doctor = firstline()
        .arg("doctor")
        .env("FIRSTLINE_DEV__STATE_DIR", state.path())
        .env("FIRSTLINE_DEV__TOOLS_DIR", "/nonexistent/tools")
        .env(
            "FIRSTLINE_DATABASE__URL",
            format!("postgres://u:p@127.0.0.1:{}/x", free_port()),
        )
        .env("FIRSTLINE_DATABASE__CONNECT_TIMEOUT_SECS", "2")
        .output()
        .await
        .unwrap();
    let report = String::from_utf8_lossy(&doctor.stdout);
    assert!(!doctor.status.success());
    assert!(
        report.contains("FAIL  tools") && report.contains("scripts/setup"),
        "{report}"
    );
    assert!(report.contains("FAIL  database"), "{report}");
}

#[tokio::test]
async fn migrate_names_an_unreachable_database() {
    let port = free_port();
    let error = expect_one_line_error(firstline().args([
        "migrate",
        "--database-url",
        &format!("postgres://fl:secret@127.0.0.1:{port}/firstline"),
    ]))
    .await;
    assert!(
        error.contains(&format!("cannot reach the database at 127.0.0.1:{port}")),
        "{error}"
    );
    assert!(error.contains("FIRSTLINE_DATABASE__URL"), "{error}");
    assert!(!error.contains("secret"), "password leaked: {error}");
}

#[tokio::test]
async fn migrate_says_when_the_server_refuses_the_login() {
    let admin = &firstline_testkit::stack().postgres_admin_url;
    let wrong = admin
        .expose()
        .replacen(":firstline@", ":not-the-password@", 1);
    let error =
        expect_one_line_error(firstline().args(["migrate", "--database-url", &wrong])).await;
    assert!(error.contains("refused the connection"), "{error}");
    assert!(error.contains("password"), "{error}");
    assert!(
        !error.contains("not-the-password"),
        "password leaked: {error}"
    );
}

#[tokio::test]
async fn migrate_brings_any_database_to_the_current_schema() {
    let (_, url) = firstline_testkit::empty_db().await;
    let output = firstline()
        .args(["migrate", "--database-url", url.expose()])
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let expected = firstline_store::MIGRATOR.iter().count();
    assert!(
        stdout.contains(&format!("({expected} migrations applied)")),
        "{stdout}"
    );
    assert!(!stdout.contains(url.expose()), "password printed: {stdout}");
}

#[tokio::test]
async fn dev_demo_shows_a_full_round_in_the_stand_ins_page() {
    let state = state_dir();
    let mut dev = start_dev_with(
        state.path(),
        [free_port(), free_port(), free_port()],
        &["--demo"],
    )
    .await;
    let page = dev
        .stdout
        .iter()
        .find(|line| line.starts_with("slack "))
        .and_then(|line| line.split_whitespace().nth(1))
        .map(str::to_string)
        .expect("dev prints the stand-in's URL");
    assert!(
        dev.stdout.iter().any(|l| l.starts_with("worker ")),
        "{:?}",
        dev.stdout
    );
    let html =
        firstline_testkit::wait_for("the round's reply", Duration::from_secs(120), || async {
            let (_, html) = support::round_app::http_get(&format!("{page}/")).await;
            html.contains("round 1").then_some(html)
        })
        .await;
    assert!(html.contains("PAYMENT_MODE"), "{html}");
    assert!(html.contains("grounded"), "{html}");
    kill(
        Pid::from_raw(dev.child.id().unwrap() as i32),
        Signal::SIGTERM,
    )
    .unwrap();
    let status = tokio::time::timeout(Duration::from_secs(30), dev.child.wait()).await;
    assert!(matches!(status, Ok(Ok(s)) if s.success()), "{status:?}");

    // A first run that reads well: a healthy start logs no error and no warning, and the round
    // is a few short lines (its tool calls are at debug).
    let log = dev.stderr.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let alarming: Vec<&String> = log
        .iter()
        .filter(|l| l.contains("ERROR") || l.contains("WARN"))
        .collect();
    assert!(alarming.is_empty(), "a healthy start warns: {alarming:#?}");
    for step in [
        "recorded; the thread's round wakes",
        "round started",
        "round analysed",
        "reply posted",
    ] {
        assert!(
            log.iter().any(|l| l.contains(step)),
            "no `{step}` line: {log:#?}"
        );
    }
    assert!(
        !log.iter().any(|l| l.contains("tool call finished")),
        "tool calls are at debug: {log:#?}"
    );
    let longest = log.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    assert!(longest <= 300, "a line of {longest} characters: {log:#?}");
}

#[tokio::test]
async fn a_log_filter_that_does_not_parse_is_refused_naming_the_setting() {
    let error = expect_one_line_error(
        firstline()
            .arg("migrate")
            .env_remove("RUST_LOG")
            .env("FIRSTLINE_LOG__FILTER", "firstline=loud"),
    )
    .await;
    assert!(error.contains("FIRSTLINE_LOG__FILTER"), "{error}");
    assert!(error.contains("firstline=loud"), "{error}");
}

#[tokio::test]
async fn dev_with_actions_and_no_approver_says_how_to_list_the_on_call_user() {
    let state = state_dir();
    // No actions.server either: dev would point it at the lab; only the approvers are missing.
    let error = expect_one_line_error(
        firstline()
            .arg("dev")
            .env("FIRSTLINE_DEV__STATE_DIR", state.path())
            .env("FIRSTLINE_ACTIONS__ENABLED", "true"),
    )
    .await;
    assert!(error.contains("FIRSTLINE_ACTIONS__APPROVERS"), "{error}");
    assert!(
        error.contains(r#"FIRSTLINE_ACTIONS__APPROVERS='{"*"=["U07ONCALL01"]}'"#),
        "{error}"
    );
    assert!(!error.contains("actions.server"), "{error}");
    // Another command is not dev: there, actions.server is the operator's to set.
    let error = expect_one_line_error(
        firstline()
            .args(["worker"])
            .env("FIRSTLINE_ACTIONS__ENABLED", "true")
            .env("FIRSTLINE_ACTIONS__APPROVERS", r#"{"*"=["U07ONCALL01"]}"#),
    )
    .await;
    assert!(error.contains("actions.server"), "{error}");
}

#[tokio::test]
async fn dev_with_actions_runs_an_approved_rollback_through_the_labs_write_endpoint() {
    let state = state_dir();
    let mut dev = start_dev_env(
        state.path(),
        [free_port(), free_port(), free_port()],
        &["--demo"],
        &[
            (
                "FIRSTLINE_DEV__LAB_SCENARIO",
                "rollback-search-api-es-client-400-recovers",
            ),
            ("FIRSTLINE_ACTIONS__ENABLED", "true"),
            // The map as one variable, with the stand-in's on-call user (the page clicks as them).
            ("FIRSTLINE_ACTIONS__APPROVERS", r#"{"*"=["U07ONCALL01"]}"#),
        ],
    )
    .await;
    let actions = dev
        .stdout
        .iter()
        .find(|line| line.starts_with("actions "))
        .expect("dev says actions are on");
    assert!(
        actions.contains("*: U07ONCALL01") && actions.contains("/write/mcp (lab-write)"),
        "{actions}"
    );
    let page = dev
        .stdout
        .iter()
        .find(|line| line.starts_with("slack "))
        .and_then(|line| line.split_whitespace().nth(1))
        .map(str::to_string)
        .expect("dev prints the stand-in's URL");
    let html = firstline_testkit::wait_for("the proposal", Duration::from_secs(120), || async {
        let (_, html) = support::round_app::http_get(&format!("{page}/")).await;
        html.contains("name=action_id value='approve'")
            .then_some(html)
    })
    .await;
    assert!(
        html.contains("Roll back Deployment `catalog/search-api` from revision 2 to revision 1"),
        "{html}"
    );
    // The Approve button's form, as the page sends it (as the on-call user).
    let form = html
        .split("<form ")
        .find(|form| form.contains("name=action_id value='approve'"))
        .expect("the Approve form");
    let field = |name: &str| {
        let key = format!("name={name} value='");
        let start = form.find(&key).expect(name) + key.len();
        form[start..].split('\'').next().unwrap().to_string()
    };
    let body = format!(
        "channel={}&ts={}&block_id={}&action_id=approve&kind=button&value={}",
        field("channel"),
        field("ts"),
        field("block_id"),
        field("value")
    );
    // The worker records which message shows the proposal right after posting it: a click in
    // between (a few milliseconds) is refused, the person told so alone, and may click again.
    let mut refused = 0;
    // A loaded machine may also miss the bot's ack deadline (Slack's 3 s): the page then
    // says the bot did not take it, and the person clicks again.
    let html = loop {
        let status = post_form(&format!("{page}/ui/act"), &body).await;
        if status != 303 {
            refused += 1;
            assert!(refused < 3, "the stand-in did not take the click: {status}");
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        }
        let html = firstline_testkit::wait_for("the outcome", Duration::from_secs(120), || async {
            let (_, html) = support::round_app::http_get(&format!("{page}/")).await;
            (html.contains("*Recovered* after: Roll back Deployment")
                || html.matches("Only visible to you").count() > refused)
                .then_some(html)
        })
        .await;
        if html.contains("*Recovered* after: Roll back Deployment") {
            break html;
        }
        refused += 1;
        assert!(refused < 3, "the approval is refused: {html}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert!(html.contains("approved by &lt;@U07ONCALL01&gt;"), "{html}");
    assert!(!html.contains("name=action_id value='approve'"), "{html}");
    sigterm(&dev.child);
    let status = tokio::time::timeout(Duration::from_secs(30), dev.child.wait()).await;
    assert!(matches!(status, Ok(Ok(s)) if s.success()), "{status:?}");
}

/// `POST url` with a form body over plain HTTP/1.0; the status.
async fn post_form(url: &str, body: &str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://").expect("an http:// URL");
    let (host, path) = rest.split_once('/').expect("a path");
    let mut stream = tokio::net::TcpStream::connect(host).await.expect("connect");
    let request = format!(
        "POST /{path} HTTP/1.0\r\nHost: {host}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("request");
    let mut response = String::new();
    tokio::time::timeout(
        Duration::from_secs(30),
        stream.read_to_string(&mut response),
    )
    .await
    .expect("response in time")
    .expect("response");
    response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}
