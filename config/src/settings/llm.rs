//! The `[llm]` section: the optional OpenAI-compatible model and the bounds on its use per round.
//!
//! An empty `base_url` means no model: every round takes the deterministic path, exactly as
//! without this section.

use super::check;
use crate::{ConfigError, SecretString};
use serde::{Deserialize, Serialize};

/// The model the investigation may consult, and how much of it one round may use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmSettings {
    /// OpenAI-compatible API base (e.g. `https://api.openai.com/v1`, `http://127.0.0.1:8080/v1`);
    /// empty: no model, rounds stay deterministic.
    pub base_url: String,
    /// Model name sent with every request.
    pub model: String,
    /// Bearer token for the endpoint; empty sends none (local servers usually want none).
    pub api_key: SecretString,
    /// Seconds one model request may take, connect to last byte.
    pub request_timeout_secs: u64,
    /// Model calls one round may make (investigation steps, summary and verdict together).
    pub max_model_calls: u32,
    /// Tool calls the model may ask for in one round; they also count against
    /// `round.max_tool_calls`, which the deterministic plan shares.
    pub max_tool_calls: u32,
    /// Tokens (prompt plus completion) one round may spend.
    pub max_tokens: u32,
    /// Seconds of wall time the model path of one round may take.
    pub budget_secs: u64,
    /// Seconds without a heartbeat after which the model pass (`refine_round`) is retried on
    /// another worker, resuming from the answers it already has: a lost worker delays the edit by
    /// this, not by the whole budget (when the budget is shorter, its timeout comes first).
    pub heartbeat_secs: u64,
    /// Characters of evidence in the model's opening context (a small local model reads about
    /// 400 a second on one CPU thread; a hosted one takes the default in stride).
    pub context_chars: usize,
    /// Sampling temperature (0 to 2).
    pub temperature: f32,
    /// Whether the model may call tools after the deterministic gather.
    pub investigate: bool,
    /// Whether the model writes the summary (structured, quote-checked).
    pub summarise: bool,
    /// Whether the model gives the post-or-ask verdict once the deterministic checks pass.
    pub judge: bool,
}

impl Default for LlmSettings {
    fn default() -> Self {
        Self {
            base_url: String::new(),
            model: String::new(),
            api_key: SecretString::default(),
            request_timeout_secs: 30,
            max_model_calls: 8,
            max_tool_calls: 8,
            max_tokens: 24_000,
            budget_secs: 120,
            heartbeat_secs: 30,
            context_chars: 16_000,
            temperature: 0.0,
            investigate: true,
            summarise: true,
            judge: true,
        }
    }
}

impl LlmSettings {
    /// Whether a model is configured at all.
    pub fn enabled(&self) -> bool {
        !self.base_url.trim().is_empty()
    }

    /// Checks the section. The model path runs in its own activity (`refine_round`), whose
    /// timeout is derived from `budget_secs`, so no other section bounds it.
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        check::at_least_one(&[
            ("llm.request_timeout_secs", self.request_timeout_secs),
            ("llm.max_model_calls", u64::from(self.max_model_calls)),
            ("llm.max_tool_calls", u64::from(self.max_tool_calls)),
            ("llm.max_tokens", u64::from(self.max_tokens)),
            ("llm.budget_secs", self.budget_secs),
            ("llm.heartbeat_secs", self.heartbeat_secs),
            ("llm.context_chars", self.context_chars as u64),
        ])?;
        if !(0.0..=2.0).contains(&self.temperature) {
            return Err(ConfigError::rejected(
                "llm.temperature",
                "must be between 0 and 2",
            ));
        }
        if !self.enabled() {
            return Ok(());
        }
        check::http_url("llm.base_url", self.base_url.trim())?;
        if self.model.trim().is_empty() {
            return Err(ConfigError::rejected(
                "llm.model",
                "must name a model when llm.base_url is set",
            ));
        }
        if self.request_timeout_secs > self.budget_secs {
            return Err(ConfigError::rejected(
                "llm.request_timeout_secs",
                "must not be longer than llm.budget_secs",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::LlmSettings;
    use crate::{ConfigError, SecretString};

    fn rejected(settings: &LlmSettings) -> &'static str {
        match settings.validate() {
            Err(ConfigError::Rejected { setting, .. }) => setting,
            other => panic!("expected a rejection, got {other:?}"),
        }
    }

    fn configured() -> LlmSettings {
        LlmSettings {
            base_url: "http://127.0.0.1:8080/v1".into(),
            model: "smollm2".into(),
            ..LlmSettings::default()
        }
    }

    #[test]
    fn no_base_url_means_no_model_and_is_valid() {
        let settings = LlmSettings::default();
        assert!(!settings.enabled());
        assert!(settings.investigate && settings.summarise && settings.judge);
        settings.validate().expect("the default is valid");
    }

    #[test]
    fn a_base_url_needs_a_model_and_a_url() {
        configured().validate().expect("valid");
        assert!(configured().enabled());
        let no_model = LlmSettings {
            model: " ".into(),
            ..configured()
        };
        assert_eq!(rejected(&no_model), "llm.model");
        let not_a_url = LlmSettings {
            base_url: "127.0.0.1:8080".into(),
            ..configured()
        };
        assert_eq!(rejected(&not_a_url), "llm.base_url");
    }

    #[test]
    fn a_heartbeat_window_is_positive_and_a_small_budget_keeps_the_default() {
        let zero = LlmSettings {
            heartbeat_secs: 0,
            ..configured()
        };
        assert_eq!(rejected(&zero), "llm.heartbeat_secs");
        // A budget shorter than the default window is valid: the pass's own timeout bounds it.
        LlmSettings {
            budget_secs: 8,
            request_timeout_secs: 5,
            ..configured()
        }
        .validate()
        .expect("valid");
    }

    #[test]
    fn bounds_must_be_positive_and_a_request_fit_the_budget() {
        let zero_calls = LlmSettings {
            max_model_calls: 0,
            ..configured()
        };
        assert_eq!(rejected(&zero_calls), "llm.max_model_calls");
        let zero_tokens = LlmSettings {
            max_tokens: 0,
            ..configured()
        };
        assert_eq!(rejected(&zero_tokens), "llm.max_tokens");
        let hot = LlmSettings {
            temperature: 2.5,
            ..configured()
        };
        assert_eq!(rejected(&hot), "llm.temperature");
        let nan = LlmSettings {
            temperature: f32::NAN,
            ..configured()
        };
        assert_eq!(rejected(&nan), "llm.temperature");
        let slow = LlmSettings {
            request_timeout_secs: 200,
            ..configured()
        };
        assert_eq!(rejected(&slow), "llm.request_timeout_secs");
    }

    #[test]
    fn the_api_key_never_appears_in_debug_output() {
        let settings = LlmSettings {
            api_key: SecretString::new("sk-live-secret"),
            ..configured()
        };
        let shown = format!("{settings:?}");
        assert!(!shown.contains("sk-live-secret"), "{shown}");
        assert!(shown.contains("***"), "{shown}");
    }

    #[test]
    // figment::Jail fixes the closure signature (Result<(), figment::Error>); the size is not ours.
    #[allow(clippy::result_large_err)]
    fn the_section_loads_from_toml_and_the_environment() {
        figment::Jail::expect_with(|jail| {
            jail.create_file(
                "firstline.toml",
                "[llm]\nbase_url = \"http://127.0.0.1:8080/v1\"\nmodel = \"smollm2\"\njudge = false\n",
            )?;
            jail.set_env("FIRSTLINE_LLM__API_KEY", "sk-from-env");
            jail.set_env("FIRSTLINE_LLM__MAX_TOKENS", "5000");
            jail.set_env("FIRSTLINE_LLM__TEMPERATURE", "0.2");
            let settings =
                crate::Settings::load(Some(std::path::Path::new("firstline.toml"))).expect("loads");
            let llm = &settings.llm;
            assert!(llm.enabled());
            assert_eq!(llm.model, "smollm2");
            assert_eq!(llm.api_key.expose(), "sk-from-env");
            assert_eq!(llm.max_tokens, 5000);
            assert!((llm.temperature - 0.2).abs() < 1e-6);
            assert!(!llm.judge && llm.summarise && llm.investigate);
            assert_eq!(llm.request_timeout_secs, 30);
            Ok(())
        });
    }
}
