//! A round's use of the client: the reply cache and the budget.

mod common;

use common::{question, scripted};
use firstline_llm::scripted::ScriptedReply;
use firstline_llm::{Budget, BudgetLimit, BudgetLimits, LlmError, MemoryCache, Usage};
use std::time::Duration;

fn limits() -> BudgetLimits {
    BudgetLimits {
        max_model_calls: 8,
        max_tool_calls: 8,
        max_tokens: 24_000,
        wall_time: Duration::from_secs(60),
    }
}

#[tokio::test]
async fn a_cached_step_is_not_asked_twice() {
    let (server, client) = scripted(vec![ScriptedReply::text("first")]).await;
    let cache = MemoryCache::new();
    let first = client
        .chat_cached(&cache, "round-1/summarise", &question())
        .await
        .expect("answered");
    assert!(!first.cached);
    let again = client
        .chat_cached(&cache, "round-1/summarise", &question())
        .await
        .expect("from the cache");
    assert!(again.cached);
    assert_eq!(again.content.as_deref(), Some("first"));
    assert_eq!(again.usage, first.usage);
    assert_eq!(server.request_count(), 1, "no second request");
}

#[tokio::test]
async fn errors_are_not_cached() {
    let (server, client) = scripted(vec![
        ScriptedReply::status(400, "no"),
        ScriptedReply::text("yes"),
    ])
    .await;
    let cache = MemoryCache::new();
    assert!(client.chat_cached(&cache, "k", &question()).await.is_err());
    assert!(cache.is_empty());
    let answer = client
        .chat_cached(&cache, "k", &question())
        .await
        .expect("asked again");
    assert_eq!(answer.content.as_deref(), Some("yes"));
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn a_spent_budget_refuses_before_any_request() {
    let (server, client) = scripted(vec![ScriptedReply::text("never")]).await;
    let cache = MemoryCache::new();

    let calls = Budget::new(BudgetLimits {
        max_model_calls: 1,
        ..limits()
    });
    calls.record(&Usage::default());
    let error = client
        .chat_in_round(&calls, &cache, "k", &question())
        .await
        .expect_err("no calls left");
    assert_eq!(error, LlmError::Budget(BudgetLimit::ModelCalls));
    assert_eq!(error.reason(), "budget");

    let tokens = Budget::new(BudgetLimits {
        max_tokens: 100,
        ..limits()
    });
    tokens.record(&Usage {
        prompt_tokens: 90,
        completion_tokens: 10,
    });
    let error = client
        .chat_in_round(&tokens, &cache, "k", &question())
        .await
        .expect_err("no tokens left");
    assert_eq!(error, LlmError::Budget(BudgetLimit::Tokens));

    let time = Budget::new(BudgetLimits {
        wall_time: Duration::ZERO,
        ..limits()
    });
    let error = client
        .chat_in_round(&time, &cache, "k", &question())
        .await
        .expect_err("no time left");
    assert_eq!(error, LlmError::Budget(BudgetLimit::WallTime));

    assert_eq!(server.request_count(), 0, "nothing was sent");
}

#[tokio::test]
async fn a_round_step_is_charged_capped_and_replayed_from_the_cache() {
    let (server, client) = scripted(vec![
        ScriptedReply::text("cause: deploy").with_usage(300, 40),
    ])
    .await;
    let cache = MemoryCache::new();
    let budget = Budget::new(BudgetLimits {
        max_tokens: 1_000,
        ..limits()
    });
    let answer = client
        .chat_in_round(&budget, &cache, "round-7/investigate/0", &question())
        .await
        .expect("answered");
    assert_eq!(answer.usage.total(), 340);
    assert_eq!(budget.spent().model_calls, 1);
    assert_eq!(budget.spent().tokens(), 340);
    // The completion cap was lowered to what the round had left.
    assert_eq!(server.requests()[0].body["max_completion_tokens"], 1_000);
    assert_eq!(server.requests()[0].body["max_tokens"], 1_000);

    // A retried activity with a fresh budget replays the step: same spend, no request.
    let resumed = Budget::new(BudgetLimits {
        max_tokens: 1_000,
        ..limits()
    });
    let replayed = client
        .chat_in_round(&resumed, &cache, "round-7/investigate/0", &question())
        .await
        .expect("from the cache");
    assert!(replayed.cached);
    assert_eq!(resumed.spent(), budget.spent());
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn a_request_without_a_cap_gets_the_default_one_when_the_round_has_more() {
    let (server, client) = scripted(vec![ScriptedReply::text("ok")]).await;
    let budget = Budget::new(limits());
    client
        .chat_in_round(&budget, &MemoryCache::new(), "k", &question())
        .await
        .expect("answered");
    assert_eq!(
        server.requests()[0].body["max_tokens"],
        firstline_llm::DEFAULT_COMPLETION_CAP
    );
}

#[tokio::test]
async fn a_failed_call_still_counts_as_a_call() {
    let (_server, client) = scripted(vec![ScriptedReply::status(400, "no")]).await;
    let budget = Budget::new(limits());
    let error = client
        .chat_in_round(&budget, &MemoryCache::new(), "k", &question())
        .await
        .expect_err("refused");
    assert_eq!(error.reason(), "http_error");
    assert_eq!(budget.spent().model_calls, 1);
    assert_eq!(budget.spent().tokens(), 0);
}

#[test]
fn tool_calls_are_taken_until_none_is_left() {
    let budget = Budget::new(BudgetLimits {
        max_tool_calls: 3,
        ..limits()
    });
    budget.record_tool_calls(2); // the deterministic plan's
    assert_eq!(budget.tool_calls_left(), 1);
    budget.take_tool_call().expect("one left");
    assert_eq!(
        budget.take_tool_call(),
        Err(LlmError::Budget(BudgetLimit::ToolCalls))
    );
    assert_eq!(budget.spent().tool_calls, 3);
    // Clones share the counters.
    let clone = budget.clone();
    assert_eq!(clone.tool_calls_left(), 0);
}
