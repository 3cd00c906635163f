//! The Temporal server restarted while a round waits for a mention (a persisted dev server, as
//! `firstline dev` runs it): the waiting run survives, the mention sent while Temporal was down
//! waits in the bot's outbox, and the same run answers it once Temporal is back.

mod support;

use std::time::Duration;

use firstline_testkit::private::PrivateServer;
use support::round_app::{BOT_USER, RoundApp, test_settings};

const ROUND: Duration = Duration::from_secs(90);

#[tokio::test(flavor = "multi_thread")]
async fn a_waiting_round_survives_a_temporal_restart() {
    let private = PrivateServer::new("test temporal");
    let port = private.port;
    let temporal = private.start_temporal().await;

    let mut settings = test_settings();
    settings.temporal.address = format!("http://127.0.0.1:{port}");
    let mut app = RoundApp::spawn("crashloop-config-exit-78", settings).await;
    app.start_worker(None).await;
    // An alert that does not say which pod: the round asks, and the run waits for a mention.
    let alert = app
        .post_alert(Some(
            "[FIRING:1] KubePodCrashLooping\n*Alert:* a pod is crash looping",
        ))
        .await;
    let rounds = app.wait_rounds(&alert, 1, ROUND).await;
    assert!(!rounds[0].grounded);

    temporal.stop(Duration::from_secs(5)).await;
    // The answer arrives while Temporal is down: recorded and acked, its wake-up queued.
    app.say(
        &alert,
        &format!("<@{BOT_USER}> namespace=payments\npod=payments-api-6d8f7b9c4-x2x7q"),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        app.count("SELECT count(*) FROM outbox WHERE kind = 'wake' AND sent_at IS NULL")
            .await,
        1,
        "the wake-up waits in the outbox"
    );
    let temporal = private.start_temporal().await;

    let rounds = app.wait_rounds(&alert, 2, ROUND).await;
    assert!(rounds[1].grounded, "{rounds:?}");
    assert_eq!(rounds[0].run_id, rounds[1].run_id, "the same run continued");
    assert_eq!(app.bot_replies(&alert).len(), 2);
    app.stop().await;
    temporal.stop(Duration::from_secs(5)).await;
}
