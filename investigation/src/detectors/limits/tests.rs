//! A process at its own limit, in its own words: nginx's worker connections, open files, threads;
//! repeated under a service-level alert it is verified even beside louder routine errors, once
//! in a healthy log it is an observation, and other lines find nothing.

use super::*;
use crate::detectors::testing::{all_of, ctx, detect, find, log_of, service_level};
use crate::detectors::{Fact, Kind};

const PROXY: &str = "storefront-proxy-6b9d7c5f48-qz4lm";

fn limit_of(finding: &Finding) -> Limit {
    match &finding.fact {
        Fact::ProcessLimit(p) => p.limit,
        other => panic!("not a process limit: {other:?}"),
    }
}

#[test]
fn each_limit_in_the_processs_own_words() {
    let cases = [
        (
            "2025/01/01 19:41:01 [alert] 29#29: *2210538 1024 worker_connections are not enough while connecting to upstream, client: 10.0.14.49",
            Limit::Connections,
        ),
        (
            "2025/01/01 19:41:01 [crit] 29#29: accept4() failed (24: Too many open files)",
            Limit::OpenFiles,
        ),
        (
            "http: Accept error: accept tcp [::]:8080: accept4: too many open files; retrying in 1s",
            Limit::OpenFiles,
        ),
        (
            "java.lang.OutOfMemoryError: unable to create new native thread",
            Limit::Threads,
        ),
        (
            "WARNING [http-nio-8080-Acceptor] org.apache.tomcat.util.net.AbstractEndpoint.countUpOrAwaitConnection All threads (200) are currently busy, waiting. Increase maxThreads (200) or check the servlet status",
            Limit::Threads,
        ),
    ];
    for (line, limit) in cases {
        let findings = detect(
            &[log_of(1, PROXY, &format!("{line}\n{line}\n"))],
            &service_level(),
        );
        assert_eq!(
            limit_of(find(&findings, Kind::ProcessLimit)),
            limit,
            "{line}"
        );
    }
}

#[test]
fn repeated_beside_louder_routine_errors_it_is_the_verified_cause() {
    let scanner = r#"2025/01/01 19:41:00 [error] 29#29: *2210431 open() "/usr/share/nginx/html/.env" failed (2: No such file or directory), client: 10.0.14.59"#;
    let limit = "2025/01/01 19:41:02 [alert] 29#29: 1024 worker_connections are not enough";
    let log = [scanner, scanner, limit, scanner, scanner, limit, scanner].join("\n");
    let findings = detect(&[log_of(1, PROXY, &log)], &service_level());
    let found = find(&findings, Kind::ProcessLimit);
    assert!(found.is_verified_cause(), "{found:#?}");
    assert!(
        found.title().contains("worker_connections"),
        "{}",
        found.title()
    );
    let scene = crate::detectors::Scene {
        namespace: "web".into(),
        pod: None,
        workload: Some("storefront-proxy".into()),
        container: None,
        workload_ref: "deployment/storefront-proxy".into(),
        when: "around 19:41 UTC".into(),
        headline: true,
    };
    assert!(found.step(&scene).contains("worker_connections"));
}

#[test]
fn once_in_a_healthy_log_it_is_an_observation_and_other_lines_find_nothing() {
    let log = "GET / 200\n2025/01/01 19:41:02 [alert] 29#29: 1024 worker_connections are not enough\nGET / 200\n";
    let findings = detect(&[log_of(1, PROXY, log)], &ctx());
    assert!(!find(&findings, Kind::ProcessLimit).verified);

    let findings = detect(
        &[log_of(
            1,
            PROXY,
            "ERROR open files: 12 of 1024\nINFO thread pool size 200\n",
        )],
        &service_level(),
    );
    assert!(all_of(&findings, Kind::ProcessLimit).is_empty());
}
