use super::*;

fn mention(text: &str) -> MentionSignal {
    MentionSignal {
        user: "U1".into(),
        text: text.into(),
        ts: "1733140200.000100".into(),
        clicked: false,
    }
}

fn steer(text: &str) -> Option<Steering> {
    read(&[mention(text)])
}

#[test]
fn objects_after_a_verb_of_looking_or_in_backticks() {
    for (text, object) in [
        ("<@U0BOT> check payments-db", "payments-db"),
        (
            "<@U0BOT> can you look at the orders-api pods?",
            "orders-api",
        ),
        ("<@U0BOT> show logs of checkout-worker", "checkout-worker"),
        ("<@U0BOT> what changed in payments/ledger-api", "ledger-api"),
        ("<@U0BOT> anything odd in `redis-cache`?", "redis-cache"),
    ] {
        let steering = steer(text).unwrap_or_else(|| panic!("{text}: steers"));
        assert_eq!(steering.objects, [object], "{text}");
        assert!(!steering.said.contains("<@"), "{}", steering.said);
    }
}

#[test]
fn is_it_the_deploy_is_a_hypothesis_and_is_it_x_names_x() {
    let deploy = steer("<@U0BOT> is it the deploy?").expect("steers");
    assert_eq!(deploy.hypothesis, Some(Hypothesis::Deploy));
    assert!(deploy.objects.is_empty(), "{:?}", deploy.objects);
    assert_eq!(
        steer("<@U0BOT> was this caused by the 2.4.1 release?").and_then(|s| s.hypothesis),
        Some(Hypothesis::Deploy)
    );
    let object = steer("<@U0BOT> is it payments-db?").expect("steers");
    assert_eq!(
        object.hypothesis,
        Some(Hypothesis::Object("payments-db".into()))
    );
    assert_eq!(object.objects, ["payments-db"]);
}

#[test]
fn mentions_that_ask_nothing_steer_nothing_and_the_newest_that_asks_wins() {
    assert_eq!(steer("<@U0BOT> any update?"), None);
    assert_eq!(steer("<@U0BOT> thanks!"), None);
    assert_eq!(steer("<@U0BOT> check it again please"), None);
    let newest = read(&[
        mention("<@U0BOT> check payments-db"),
        mention("<@U0BOT> is it the deploy?"),
        mention("<@U0BOT> ping"),
    ])
    .expect("one asks");
    assert_eq!(newest.hypothesis, Some(Hypothesis::Deploy));
}
