// figment::Jail fixes the closure signature (Result<(), figment::Error>); the size is not ours.
#![allow(clippy::result_large_err)]

use super::*;
use figment::Jail;

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
