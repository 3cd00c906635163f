//! A round's model budget: calls, tool calls, tokens and wall time, checked before each call and
//! charged after it. Clones share one set of counters, so every node of a round draws on it.

use crate::{BudgetLimit, LlmError, Usage};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The limits of one round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetLimits {
    /// Model calls (answered, failed or served from the cache).
    pub max_model_calls: u32,
    /// Tool calls, the deterministic plan's included when the caller charges them.
    pub max_tool_calls: u32,
    /// Prompt plus completion tokens.
    pub max_tokens: u64,
    /// Wall time from [`Budget::new`].
    pub wall_time: Duration,
}

/// What a round has spent so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Spent {
    /// Model calls made.
    pub model_calls: u32,
    /// Tool calls made.
    pub tool_calls: u32,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
}

impl Spent {
    /// Prompt plus completion tokens.
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

/// The per-round budget. Thread-safe; clones share the counters.
#[derive(Debug, Clone)]
pub struct Budget {
    limits: BudgetLimits,
    deadline: Instant,
    spent: Arc<Mutex<Spent>>,
}

impl Budget {
    /// A fresh budget whose wall-time clock starts now.
    pub fn new(limits: BudgetLimits) -> Self {
        Self::resumed(limits, Spent::default())
    }

    /// A budget that has already spent `spent` (a resumed round); the clock starts now.
    pub fn resumed(limits: BudgetLimits, spent: Spent) -> Self {
        Self {
            limits,
            deadline: Instant::now() + limits.wall_time,
            spent: Arc::new(Mutex::new(spent)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Spent> {
        // The counters stay consistent under a panic elsewhere: each update is one statement.
        self.spent
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Refuses a model call when calls, tokens or time are spent.
    pub fn check(&self) -> Result<(), LlmError> {
        self.check_spend()?;
        self.check_time()
    }

    /// Refuses when model calls or tokens are spent (time not considered: a cached answer costs
    /// none).
    pub fn check_spend(&self) -> Result<(), LlmError> {
        let spent = *self.lock();
        if spent.model_calls >= self.limits.max_model_calls {
            return Err(LlmError::Budget(BudgetLimit::ModelCalls));
        }
        if spent.tokens() >= self.limits.max_tokens {
            return Err(LlmError::Budget(BudgetLimit::Tokens));
        }
        Ok(())
    }

    /// Refuses once the wall-time deadline has passed.
    pub fn check_time(&self) -> Result<(), LlmError> {
        if Instant::now() >= self.deadline {
            return Err(LlmError::Budget(BudgetLimit::WallTime));
        }
        Ok(())
    }

    /// Charges one model call and its tokens.
    pub fn record(&self, usage: &Usage) {
        let mut spent = self.lock();
        spent.model_calls = spent.model_calls.saturating_add(1);
        spent.prompt_tokens = spent
            .prompt_tokens
            .saturating_add(u64::from(usage.prompt_tokens));
        spent.completion_tokens = spent
            .completion_tokens
            .saturating_add(u64::from(usage.completion_tokens));
    }

    /// Takes one tool call from the budget, or refuses when none is left.
    pub fn take_tool_call(&self) -> Result<(), LlmError> {
        let mut spent = self.lock();
        if spent.tool_calls >= self.limits.max_tool_calls {
            return Err(LlmError::Budget(BudgetLimit::ToolCalls));
        }
        spent.tool_calls += 1;
        Ok(())
    }

    /// Charges `calls` tool calls made elsewhere (e.g. the deterministic plan), even past the cap.
    pub fn record_tool_calls(&self, calls: u32) {
        let mut spent = self.lock();
        spent.tool_calls = spent.tool_calls.saturating_add(calls);
    }

    /// Tool calls still allowed.
    pub fn tool_calls_left(&self) -> u32 {
        self.limits
            .max_tool_calls
            .saturating_sub(self.lock().tool_calls)
    }

    /// Model calls still allowed.
    pub fn model_calls_left(&self) -> u32 {
        self.limits
            .max_model_calls
            .saturating_sub(self.lock().model_calls)
    }

    /// Tokens still allowed.
    pub fn tokens_left(&self) -> u64 {
        self.limits.max_tokens.saturating_sub(self.lock().tokens())
    }

    /// When the wall-time budget ends.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// What has been spent.
    pub fn spent(&self) -> Spent {
        *self.lock()
    }

    /// The limits.
    pub fn limits(&self) -> BudgetLimits {
        self.limits
    }
}
