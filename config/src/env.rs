//! How a setting's dotted key maps to the environment variable that sets it, in both directions:
//! [`env_var`] names the variable for messages and docs, [`provider`] reads the variables back.

use figment::providers::Env;

/// Prefix of every environment variable Firstline reads.
pub const ENV_PREFIX: &str = "FIRSTLINE_";

/// The environment variable that sets the setting `key` (`section.key`), e.g.
/// `slack.signing_secret` → `FIRSTLINE_SLACK__SIGNING_SECRET`.
pub fn env_var(key: &str) -> String {
    format!("{ENV_PREFIX}{}", key.to_uppercase().replace('.', "__"))
}

/// The `FIRSTLINE_*` variables as a settings layer, undoing [`env_var`].
pub(crate) fn provider() -> Env {
    // Every setting is `SECTION__KEY`; other FIRSTLINE_* names (FIRSTLINE_CONFIG, the test
    // harness's FIRSTLINE_TEST_*) are not settings and must not be rejected as unknown ones.
    Env::prefixed(ENV_PREFIX)
        .filter(|key| key.as_str().contains("__"))
        .split("__")
        .lowercase(true)
}

#[cfg(test)]
mod tests {
    use super::env_var;

    #[test]
    fn a_key_becomes_its_upper_case_variable() {
        assert_eq!(
            env_var("slack.signing_secret"),
            "FIRSTLINE_SLACK__SIGNING_SECRET"
        );
        assert_eq!(env_var("database.url"), "FIRSTLINE_DATABASE__URL");
        assert_eq!(
            env_var("worker.max_concurrent_workflow_tasks"),
            "FIRSTLINE_WORKER__MAX_CONCURRENT_WORKFLOW_TASKS"
        );
    }
}
