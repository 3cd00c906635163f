// figment::Jail fixes the closure signature (Result<(), figment::Error>); the size is not ours.
#![allow(clippy::result_large_err)]

use super::*;
use figment::Jail;
use std::path::Path;

#[test]
fn defaults_need_no_configuration() {
    Jail::expect_with(|_| {
        let settings = Settings::load(None).expect("defaults load");
        assert_eq!(settings, Settings::default());
        assert_eq!(settings.temporal.task_queue, "incident-analysis");
        assert_eq!(settings.kafka.topic, "firstline.messages");
        Ok(())
    });
}

#[test]
fn environment_overrides_file_which_overrides_defaults() {
    Jail::expect_with(|jail| {
        jail.create_file(
            "firstline.toml",
            "[dev]\npostgres_port = 6000\nkafka_port = 6001\n",
        )?;
        jail.set_env("FIRSTLINE_DEV__KAFKA_PORT", "7001");
        jail.set_env("FIRSTLINE_DATABASE__MAX_CONNECTIONS", "3");
        let settings = Settings::load(Some(Path::new("firstline.toml"))).expect("loads");
        assert_eq!(settings.dev.postgres_port, 6000);
        assert_eq!(settings.dev.kafka_port, 7001);
        assert_eq!(settings.database.max_connections, 3);
        Ok(())
    });
}

#[test]
fn other_firstline_variables_are_not_settings() {
    Jail::expect_with(|jail| {
        jail.set_env("FIRSTLINE_TEST_POSTGRES_URL", "postgres://elsewhere");
        jail.set_env("FIRSTLINE_CONFIG", "unused-here.toml");
        assert_eq!(Settings::load(None).expect("loads"), Settings::default());
        Ok(())
    });
}

#[test]
fn a_bad_value_names_the_setting() {
    Jail::expect_with(|jail| {
        jail.set_env("FIRSTLINE_DEV__POSTGRES_PORT", "seventy");
        let error = Settings::load(None).expect_err("must fail").to_string();
        assert!(
            error.to_lowercase().contains("dev.postgres_port"),
            "{error}"
        );
        assert!(!error.contains('\n'), "one line: {error}");
        Ok(())
    });
}

#[test]
fn an_unknown_setting_is_rejected() {
    Jail::expect_with(|jail| {
        jail.create_file("firstline.toml", "[database]\nulr = \"postgres://x\"\n")?;
        let error = Settings::load(Some(Path::new("firstline.toml")))
            .expect_err("typo must fail")
            .to_string();
        assert!(error.contains("ulr"), "{error}");
        Ok(())
    });
}

#[test]
fn a_missing_file_is_named() {
    Jail::expect_with(|_| {
        let error = Settings::load(Some(Path::new("nope.toml")))
            .expect_err("must fail")
            .to_string();
        assert!(error.contains("nope.toml"), "{error}");
        Ok(())
    });
}

#[test]
fn semantic_errors_name_setting_and_variable() {
    Jail::expect_with(|jail| {
        jail.set_env("FIRSTLINE_DATABASE__URL", "mysql://x");
        let error = Settings::load(None).expect_err("must fail").to_string();
        assert!(error.contains("database.url"), "{error}");
        assert!(error.contains("FIRSTLINE_DATABASE__URL"), "{error}");
        Ok(())
    });
}

#[test]
fn outbox_retention_is_between_an_hour_and_ten_years() {
    for (value, accepted) in [("0", false), ("1", true), ("87600", true), ("87601", false)] {
        Jail::expect_with(|jail| {
            jail.set_env("FIRSTLINE_BOT__OUTBOX_RETENTION_HOURS", value);
            match Settings::load(None) {
                Ok(s) => assert!(accepted, "{value} accepted: {s:?}"),
                Err(e) => {
                    let error = e.to_string();
                    assert!(!accepted, "{value} rejected: {error}");
                    assert!(
                        error.contains("FIRSTLINE_BOT__OUTBOX_RETENTION_HOURS"),
                        "{error}"
                    );
                }
            }
            Ok(())
        });
    }
}

#[test]
fn the_database_password_never_reaches_debug_output() {
    let url = DatabaseUrl::new("postgres://fl:s3cr3t@db.internal:5433/firstline?sslmode=require");
    let settings = Settings {
        database: DatabaseSettings {
            url: url.clone(),
            ..Default::default()
        },
        ..Default::default()
    };
    let shown = format!("{settings:?} {url}");
    assert!(!shown.contains("s3cr3t"), "{shown}");
    assert!(shown.contains("postgres://fl:***@db.internal:5433/firstline"));
    assert_eq!(url.host_port(), "db.internal:5433");
    assert_eq!(DatabaseUrl::new("postgres://h/db").host_port(), "h:5432");
    assert_eq!(
        DatabaseUrl::new("postgres://u@h:1/db").redacted(),
        "postgres://u@h:1/db"
    );
}

#[test]
fn slack_secrets_never_appear_in_debug_output() {
    let mut settings = Settings::default();
    settings.slack.bot_token = SecretString::new("xoxb-1234-very-secret");
    settings.slack.signing_secret = SecretString::new("8f742231b10e8888abcd99yyyzzz85a5");
    settings.slack.app_token = SecretString::new("xapp-1-secret");
    let printed = format!("{settings:?} {}", settings.slack.bot_token);
    for secret in ["very-secret", "8f742231", "xapp-1-secret"] {
        assert!(!printed.contains(secret), "{secret} leaked: {printed}");
    }
    assert!(printed.contains("bot_token: \"***\""), "{printed}");
    assert!(!SecretString::default().is_set());
}

#[test]
fn socket_mode_without_an_app_token_is_rejected_by_name() {
    let mut settings = Settings::default();
    settings.slack.mode = SlackMode::Socket;
    let error = settings.validate().unwrap_err().to_string();
    assert!(error.contains("FIRSTLINE_SLACK__APP_TOKEN"), "{error}");
    settings.slack.mode = SlackMode::Http;
    settings.bot.alert_rules[0].text_patterns = vec!["(unclosed".into()];
    let error = settings.validate().unwrap_err().to_string();
    assert!(error.contains("FIRSTLINE_BOT__ALERT_RULES"), "{error}");
}

#[test]
fn every_setting_has_an_environment_variable() {
    let keys = Settings::keys();
    assert!(keys.len() >= 15, "{keys:?}");
    assert!(keys.contains(&(
        "database.url".to_string(),
        "FIRSTLINE_DATABASE__URL".to_string()
    )));
    assert!(keys.contains(&(
        "dev.postgres_os_user".to_string(),
        "FIRSTLINE_DEV__POSTGRES_OS_USER".to_string()
    )));
}

#[test]
fn the_variable_named_for_a_setting_is_the_one_that_sets_it() {
    for (key, env) in Settings::keys() {
        Jail::expect_with(|jail| {
            jail.set_env(&env, "from-the-environment");
            let found = Settings::figment(None)
                .expect("no file to miss")
                .find_value(&key)
                .expect("the key is in the tree");
            assert_eq!(
                found.as_str(),
                Some("from-the-environment"),
                "{key} ← {env}"
            );
            Ok(())
        });
    }
}

#[test]
fn mcp_servers_load_from_toml_with_defaults_for_limits() {
    Jail::expect_with(|jail| {
        jail.create_file(
            "firstline.toml",
            r#"
[[mcp.servers]]
name = "k8s"
command = "kubernetes-mcp-server"
args = ["--read-only", "--list-output", "yaml"]
env = { KUBECONFIG = "/etc/kube/config" }
profile = "kubernetes-mcp-server"

[[mcp.servers]]
name = "prom"
url = "https://prometheus-mcp.monitoring.svc:9091/mcp"
ca_file = "/etc/firstline/mcp-ca.pem"
bearer_token_file = "/var/run/secrets/firstline/mcp-token"
headers = { X-Scope-OrgID = "tenant-7f3k" }
profile = "prometheus-mcp-server"
allow = ["execute_range_query"]
call_timeout_secs = 30

[mcp.capabilities.log_query]
server = "prom"
tool = "query_loki_logs"
args = { datasourceUid = "loki", logql = "{query}", limit = "{limit}" }
"#,
        )?;
        let settings = Settings::load(Some(Path::new("firstline.toml"))).expect("loads");
        let mcp = &settings.mcp;
        assert_eq!(mcp.servers.len(), 2);
        assert_eq!(mcp.call_timeout_secs, 15);
        assert_eq!(mcp.max_result_bytes, 65_536);
        assert_eq!(mcp.servers[0].args[2], "yaml");
        assert_eq!(mcp.servers[1].call_timeout_secs, Some(30));
        let binding = &mcp.capabilities["log_query"];
        assert_eq!(binding.args["logql"], serde_json::json!("{query}"));
        assert_eq!(mcp.servers[1].headers["X-Scope-OrgID"], "tenant-7f3k");
        assert_eq!(
            mcp.servers[1].bearer_token_file.as_deref(),
            Some(Path::new("/var/run/secrets/firstline/mcp-token"))
        );
        let shown = format!("{mcp:?}");
        assert!(
            !shown.contains("/etc/kube/config") && !shown.contains("tenant-7f3k"),
            "env and header values stay out of Debug: {shown}"
        );
        assert!(shown.contains("X-Scope-OrgID"), "{shown}");
        Ok(())
    });
}

#[test]
fn bad_mcp_settings_name_the_setting() {
    let cases: &[(&str, &str)] = &[
        ("[[mcp.servers]]\nname = \"a\"\n", "exactly one of `url`"),
        (
            "[[mcp.servers]]\nname = \"a\"\nurl = \"ftp://x/mcp\"\n",
            "must be an http:// or https:// URL",
        ),
        (
            "[[mcp.servers]]\nname = \"a\"\nurl = \"http://x/mcp\"\nca_file = \"/ca.pem\"\n",
            "`ca_file` needs an https:// `url`",
        ),
        (
            "[[mcp.servers]]\nname = \"a\"\ncommand = \"x\"\nbearer_token_file = \"/t\"\n",
            "a stdio server takes `env`",
        ),
        (
            "[[mcp.servers]]\nname = \"a\"\nurl = \"https://x/mcp\"\nheaders = { \"X Org\" = \"1\" }\n",
            "`X Org` is not an HTTP header name",
        ),
        (
            "[[mcp.servers]]\nname = \"a\"\nurl = \"https://x/mcp\"\nheaders = { X-Org = \"a\\nb\" }\n",
            "the value of `X-Org` is not printable ASCII",
        ),
        (
            "[[mcp.servers]]\nname = \"a\"\nurl = \"http://x/mcp\"\nbearer_token_file = \"/t\"\n",
            "needs an https:// `url`",
        ),
        (
            "[[mcp.servers]]\nname = \"a\"\nurl = \"https://x/mcp\"\nbearer_token_file = \"/t\"\nheaders = { Authorization = \"Basic x\" }\n",
            "either in `headers` or by `bearer_token_file`",
        ),
        (
            "[[mcp.servers]]\nname = \"a\"\ncommand = \"x\"\nprofile = \"nope\"\n",
            "unknown profile `nope`",
        ),
        (
            "[[mcp.servers]]\nname = \"a\"\ncommand = \"x\"\n[[mcp.servers]]\nname = \"a\"\ncommand = \"y\"\n",
            "name used twice",
        ),
        (
            "[mcp.capabilities.pod_describe]\nserver = \"ghost\"\ntool = \"pods_get\"\n",
            "not in mcp.servers",
        ),
        (
            "[mcp.capabilities.pod_poke]\nserver = \"a\"\ntool = \"t\"\n",
            "unknown capability",
        ),
        ("[mcp]\ncall_timeout_secs = 0\n", "mcp.call_timeout_secs"),
    ];
    for (toml, expected) in cases {
        Jail::expect_with(|jail| {
            jail.create_file("firstline.toml", toml)?;
            let error = Settings::load(Some(Path::new("firstline.toml")))
                .expect_err("must fail")
                .to_string();
            assert!(error.contains(expected), "{toml}: {error}");
            assert!(error.contains("mcp."), "{toml}: {error}");
            Ok(())
        });
    }
}
