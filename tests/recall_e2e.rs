//! Recall by meaning end to end: a thread is resolved in one channel (the bot records the
//! incident and its outbox record; the embedder reads it from Kafka and embeds it), then an alert
//! worded differently — another alertname, another service, another namespace — fires in another
//! channel, and the round's reply there cites the past incident and how it was fixed.

mod support;

use std::time::Duration;

use support::round_app::{BOT_USER, RoundApp, test_settings, unique_channel};

const RESOLUTION: &str =
    "PAYMENT_MODE was dropped from the ConfigMap in the 2.14 rollout; restored it and redeployed";

const REWORDED_ALERT: &str = "[FIRING:1] CheckoutCardPaymentsFailing (checkout-web warning)
*Alert:* checkout cannot take card payments: the payment service behind it keeps crashing on start - `warning`
*Description:* checkout-web gets connection refused from the payment backend; its containers exit right after starting, since the last deploy.
*Details:*
  • *alertname:* `CheckoutCardPaymentsFailing`
  • *namespace:* `storefront`
  • *service:* `checkout-web`
  • *severity:* `warning`";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_differently_worded_alert_elsewhere_cites_the_resolved_incident_and_its_fix() {
    let mut app = RoundApp::spawn("crashloop-config-exit-78", test_settings()).await;
    app.start_worker(None).await;
    app.start_embedder(None).await;

    // The past: the payments crash loop, resolved by a person who says what fixed it.
    let past = app.post_alert(None).await;
    app.say(&past, "payments pods keep restarting").await;
    app.say(&past, &format!("<@{BOT_USER}> resolved {RESOLUTION}"))
        .await;
    firstline_testkit::wait_for("the incident embedded", Duration::from_secs(90), || async {
        let n = app
            .count("SELECT count(*) FROM incidents WHERE embedding IS NOT NULL")
            .await;
        (n == 1).then_some(())
    })
    .await;

    // Now: another channel, another alert rule, another service's words.
    let other = unique_channel();
    app.slack
        .workspace()
        .ensure_channel(&other, "checkout-alerts");
    let ts = app
        .slack
        .integration_posts(&other, "Alertmanager", REWORDED_ALERT);
    let reply = firstline_testkit::wait_for(
        "the round's reply in the other channel",
        Duration::from_secs(120),
        || async {
            app.bot_replies_in(&other, &ts)
                .into_iter()
                .map(|m| m.text)
                .find(|text| text.contains("Seen before"))
        },
    )
    .await;
    assert!(reply.contains("matched on meaning"), "{reply}");
    assert!(reply.contains("KubePodCrashLooping"), "{reply}");
    assert!(
        reply.contains("PAYMENT_MODE was dropped from the ConfigMap"),
        "{reply}"
    );
    assert!(reply.contains("Fix:"), "{reply}");
    // Asking, the round puts the past incident to the people who know.
    assert!(reply.contains("again (resolved"), "{reply}");
    app.stop().await;
}
