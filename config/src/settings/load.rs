//! Assembling [`Settings`] from its layers: defaults, then a TOML file, then the environment.

use super::Settings;
use crate::{ConfigError, env};
use figment::Figment;
use figment::providers::{Format, Serialized, Toml};
use std::path::Path;

impl Settings {
    /// Loads defaults, then `file` (if any), then `FIRSTLINE_*` variables from the process
    /// environment.
    pub fn load(file: Option<&Path>) -> Result<Self, ConfigError> {
        Self::from_figment(Self::figment(file)?)
    }

    /// The layered provider, exposed so tests can add layers of their own.
    pub fn figment(file: Option<&Path>) -> Result<Figment, ConfigError> {
        let mut figment = Figment::from(Serialized::defaults(Settings::default()));
        if let Some(path) = file {
            if !path.is_file() {
                return Err(ConfigError::MissingFile {
                    path: path.display().to_string(),
                });
            }
            figment = figment.merge(Toml::file(path));
        }
        Ok(figment.merge(env::provider()))
    }

    /// Extracts and validates settings from a provider.
    pub fn from_figment(figment: Figment) -> Result<Self, ConfigError> {
        let settings: Settings = figment
            .extract()
            .map_err(|e| ConfigError::Invalid(one_line(&e)))?;
        settings.validate()?;
        Ok(settings)
    }
}

/// figment errors can chain several causes over several lines; an operator wants one line.
fn one_line(error: &figment::Error) -> String {
    error
        .clone()
        .into_iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join("; ")
}
