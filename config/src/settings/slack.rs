//! The `[slack]` section: the Slack app's credentials and how its events reach the bot.

use super::check;
use crate::{ConfigError, SecretString};
use serde::{Deserialize, Serialize};

/// How Slack delivers events to the bot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SlackMode {
    /// The Events API: Slack POSTs signed requests to `bot.listen`.
    Http,
    /// Socket Mode: the bot opens a websocket with the app-level token.
    Socket,
}

/// The Slack app.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SlackSettings {
    /// Bot token (`xoxb-…`) for the Web API. Empty: `firstline dev` runs the Slack stand-in.
    pub bot_token: SecretString,
    /// Signing secret that verifies Events API requests (HTTP mode).
    pub signing_secret: SecretString,
    /// App-level token (`xapp-…`) for Socket Mode.
    pub app_token: SecretString,
    /// `http` (Events API) or `socket` (Socket Mode).
    pub mode: SlackMode,
    /// Web API base URL; the stand-in replaces it in dev and tests.
    pub api_url: String,
    /// The bot's own user id (`U…`); empty: asked from `auth.test` at start-up.
    pub bot_user_id: String,
    /// Port of the Slack stand-in `firstline dev` runs when no bot token is set (0 = any free port).
    pub standin_port: u16,
}

impl Default for SlackSettings {
    fn default() -> Self {
        Self {
            bot_token: SecretString::default(),
            signing_secret: SecretString::default(),
            app_token: SecretString::default(),
            mode: SlackMode::Http,
            api_url: "https://slack.com/api".into(),
            bot_user_id: String::new(),
            standin_port: 3100,
        }
    }
}

impl SlackSettings {
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        if self.mode == SlackMode::Socket && !self.app_token.is_set() {
            return Err(ConfigError::rejected(
                "slack.app_token",
                "Socket Mode (slack.mode = socket) needs the app-level token",
            ));
        }
        check::http_url("slack.api_url", &self.api_url)
    }
}
