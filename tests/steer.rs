//! `firstline investigate --ask`: a person's mention steering a round, over lab scenarios served
//! on a real socket. "check NAME" starts the evidence plan from that object; "is it the
//! deploy?" is answered on the reply's first line — yes, no with the rollout history it read,
//! or possibly, naming what the deployed pods fail with; a mention that asks nothing is refused
//! with a clear error.

use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::time::Duration;

use tokio::process::Command;

/// `firstline investigate --scenario NAME --no-db ARGS…` with no `FIRSTLINE_*` from the
/// environment.
async fn investigate(scenario: &str, args: &[&str]) -> Output {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("lab/scenarios")
        .join(scenario);
    let mut command = Command::new(env!("CARGO_BIN_EXE_firstline"));
    for (key, _) in std::env::vars() {
        if key.starts_with("FIRSTLINE_") {
            command.env_remove(key);
        }
    }
    command
        .env("RUST_LOG", "error")
        .args(["investigate", "--scenario"])
        .arg(dir)
        .arg("--no-db")
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .expect("firstline finished within 2 minutes")
        .expect("firstline ran")
}

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test]
async fn check_name_starts_the_plan_from_that_object() {
    let out = stdout(
        &investigate(
            "stale-oom-restart-days-ago-redis-maxmemory",
            &["--plan", "--ask", "<@U0BOT> check inventory-cache"],
        )
        .await,
    );
    let first = out.lines().nth(1).unwrap_or_default();
    assert_eq!(
        first.trim(),
        "1. get Service inventory/inventory-cache",
        "{out}"
    );
    assert!(
        out.contains(
            "lead: <@cli> asked: \"check inventory-cache\" — starting from `inventory-cache`"
        ),
        "{out}"
    );
    assert!(
        out.contains("describe pod inventory/inventory-cache-0"),
        "{out}"
    );
}

#[tokio::test]
async fn is_it_the_deploy_is_answered_first_yes_no_or_possibly() {
    let first_line = |out: String| out.lines().next().unwrap_or_default().to_string();
    // The deploy is the verified cause.
    let yes = first_line(stdout(
        &investigate("bad-deploy-error-rate", &["--ask", "is it the deploy?"]).await,
    ));
    assert!(
        yes.starts_with("*Is it the deploy? Yes: Deploy (revision 3)"),
        "{yes}"
    );
    // Nothing rolled out for days: ruled out, citing the rollout history.
    let no = first_line(stdout(
        &investigate("oomkilled", &["--ask", "was it the deploy?"]).await,
    ));
    assert!(
        no.starts_with("*Is it the deploy? No: the newest rollout"),
        "{no}"
    );
    assert!(
        no.contains("before the alert (E") && no.contains("creationTimestamp"),
        "{no}"
    );
    // The new revision's own pods fail on a setting it needs: not ruled out.
    let possibly = first_line(stdout(
        &investigate("crashloop-config-exit-78", &["--ask", "is it the deploy?"]).await,
    ));
    assert!(
        possibly.starts_with("*Is it the deploy? Possibly: revision 2 of `payments-api`"),
        "{possibly}"
    );
    assert!(possibly.contains("PAYMENT_MODE"), "{possibly}");
    // A leak that began with an older revision: a deploy, though not the newest.
    let older = first_line(stdout(
        &investigate(
            "memory-trend-began-with-5-2-0-not-latest-revision",
            &["--ask", "is it the deploy?"],
        )
        .await,
    ));
    assert!(
        older.starts_with("*Is it the deploy? Yes, a deploy:"),
        "{older}"
    );
    assert!(older.contains("5.2.0"), "{older}");
}

#[tokio::test]
async fn a_mention_that_asks_nothing_is_refused_clearly() {
    let output = investigate("oomkilled", &["--ask", "thanks!"]).await;
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("names no object to look at"), "{stderr}");
}
