//! A suspended CronJob read on its own is why its run never started; one in a list, or one
//! that is not suspended, says nothing.

use serde_json::json;

use crate::detectors::Kind;
use crate::detectors::testing::{assert_contains, ctx, detect, ev, find, has};
use crate::evidence::Capability;

fn cronjob(suspend: bool) -> String {
    format!(
        "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: invoice-dunning\n  namespace: collections\nspec:\n  concurrencyPolicy: Forbid\n  schedule: 15 2 * * *\n  suspend: {suspend}\nstatus:\n  lastScheduleTime: '2025-03-03T02:15:00Z'\n"
    )
}

#[test]
fn a_suspended_cronjob_read_on_its_own_is_why_no_run_started() {
    let got = ev(
        1,
        Capability::ObjectGet,
        json!({"kind": "CronJob", "namespace": "collections", "name": "invoice-dunning"}),
        &cronjob(true),
    );
    let findings = detect(&[got], &ctx());
    let suspended = find(&findings, Kind::CronJobSuspended);
    assert_eq!(
        suspended.title(),
        "CronJob `invoice-dunning` is suspended (`suspend: true`): no Job since its last run at \
         03-03 02:15 UTC"
    );
    assert!(suspended.is_verified_cause());
    assert_contains(&suspended.detail(), "schedule `15 2 * * *`");
    assert_eq!(
        crate::detectors::testing::quotes(suspended),
        ["suspend: true"]
    );
}

#[test]
fn a_running_cronjob_or_one_in_a_list_says_nothing() {
    let running = ev(
        1,
        Capability::ObjectGet,
        json!({"kind": "CronJob", "name": "invoice-dunning"}),
        &cronjob(false),
    );
    assert!(!has(&detect(&[running], &ctx()), Kind::CronJobSuspended));
    let item = crate::detectors::testing::list_item(&cronjob(true));
    let listed = ev(1, Capability::ObjectList, json!({"kind": "CronJob"}), &item);
    assert!(!has(&detect(&[listed], &ctx()), Kind::CronJobSuspended));
}
