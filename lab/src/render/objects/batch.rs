//! Jobs and CronJobs. A Job's counts left out come from its pods' phases (Pending/Running are
//! active); without stated conditions a Job that reached its completions is Complete and one
//! whose failures exceed `backoffLimit` has Failed (BackoffLimitExceeded), as the controller
//! would say.

use chrono::Duration;
use serde_json::{Map, Value, json};

use super::pods::{pod_active, pod_phase};
use super::{
    condition, conditions, controller_ref, insert_count, insert_some, rfc3339, template_containers,
    uid,
};
use crate::render::world::World;
use crate::scenario::{CronJobSpec, JobSpec};

fn job_labels(job: &JobSpec, uid: &str) -> Value {
    json!({
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": job.name,
        "controller-uid": uid,
        "job-name": job.name,
    })
}

/// Pods still running or pending: as stated, else counted.
fn active_count(world: &World, job: &JobSpec) -> u32 {
    job.status
        .as_ref()
        .and_then(|s| s.active)
        .unwrap_or_else(|| {
            world
                .pods_of("Job", &job.namespace, &job.name)
                .iter()
                .filter(|p| pod_active(p))
                .count() as u32
        })
}

/// The Job object.
pub(crate) fn job_object(world: &World, job: &JobSpec) -> Value {
    let uid = uid("Job", &job.namespace, &job.name);
    let pods = world.pods_of("Job", &job.namespace, &job.name);
    let phase_count = |phase: &str| pods.iter().filter(|p| pod_phase(p) == phase).count() as u32;
    let given = job.status.clone().unwrap_or_default();
    let active = active_count(world, job);
    let succeeded = given.succeeded.unwrap_or(phase_count("Succeeded"));
    let failed = given.failed.unwrap_or(phase_count("Failed"));
    let completions = job.completions.unwrap_or(1);
    let backoff_limit = job.backoff_limit.unwrap_or(6);
    let created = world.time_or(job.created, Duration::hours(-1));
    let mut status = Map::new();
    insert_count(&mut status, "active", active);
    insert_count(&mut status, "succeeded", succeeded);
    insert_count(&mut status, "failed", failed);
    status.insert(
        "startTime".into(),
        json!(rfc3339(given.start_time.map_or(created, |t| world.time(t)))),
    );
    insert_some(
        &mut status,
        "completionTime",
        given.completion_time.map(|t| rfc3339(world.time(t))),
    );
    let stated = if !job.conditions.is_empty() {
        job.conditions.clone()
    } else if succeeded >= completions {
        vec![condition("Complete", "True", "", "")]
    } else if failed > backoff_limit {
        vec![condition(
            "Failed",
            "True",
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit",
        )]
    } else {
        Vec::new()
    };
    if !stated.is_empty() {
        status.insert(
            "conditions".into(),
            Value::Array(conditions(world, &stated, &["lastProbeTime"])),
        );
    }
    let labels = job_labels(job, &uid);
    let mut metadata = json!({
        "name": job.name,
        "namespace": job.namespace,
        "uid": uid,
        "creationTimestamp": rfc3339(created),
        "labels": labels,
    });
    if let Some(owner) = &job.owner {
        metadata["ownerReferences"] = json!([controller_ref(
            &owner.kind,
            &owner.name,
            &super::uid(&owner.kind, &job.namespace, &owner.name)
        )]);
    }
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "backoffLimit": backoff_limit,
            "completions": completions,
            "parallelism": job.parallelism.unwrap_or(1),
            "completionMode": "NonIndexed",
            "suspend": false,
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": template_containers(&pods, job.image.as_deref(), &job.name),
                    "restartPolicy": "Never",
                },
            },
        },
        "status": status,
    })
}

/// The CronJob object; its job template is its latest Job's, its `active` the Jobs still
/// running.
pub(crate) fn cronjob_object(world: &World, cron: &CronJobSpec) -> Value {
    let jobs: Vec<&JobSpec> = world
        .spec
        .jobs
        .iter()
        .filter(|j| {
            j.namespace == cron.namespace
                && j.owner
                    .as_ref()
                    .is_some_and(|o| o.kind == "CronJob" && o.name == cron.name)
        })
        .collect();
    let latest = jobs
        .iter()
        .max_by_key(|j| world.time_or(j.created, Duration::hours(-1)));
    let containers = match latest {
        Some(job) => template_containers(
            &world.pods_of("Job", &job.namespace, &job.name),
            job.image.as_deref(),
            &job.name,
        ),
        None => template_containers(&[], None, &cron.name),
    };
    let active: Vec<Value> = jobs
        .iter()
        .filter(|j| active_count(world, j) > 0)
        .map(|j| {
            json!({
                "apiVersion": "batch/v1", "kind": "Job", "name": j.name,
                "namespace": j.namespace, "uid": uid("Job", &j.namespace, &j.name),
            })
        })
        .collect();
    let mut status = Map::new();
    if !active.is_empty() {
        status.insert("active".into(), Value::Array(active));
    }
    insert_some(
        &mut status,
        "lastScheduleTime",
        cron.last_schedule_time.map(|t| rfc3339(world.time(t))),
    );
    insert_some(
        &mut status,
        "lastSuccessfulTime",
        cron.last_successful_time.map(|t| rfc3339(world.time(t))),
    );
    json!({
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {
            "name": cron.name,
            "namespace": cron.namespace,
            "uid": uid("CronJob", &cron.namespace, &cron.name),
            "creationTimestamp": rfc3339(world.scenario.alert_at - Duration::days(30)),
        },
        "spec": {
            "schedule": cron.schedule,
            "suspend": cron.suspend,
            "concurrencyPolicy": cron.concurrency_policy.as_deref().unwrap_or("Allow"),
            "successfulJobsHistoryLimit": 3,
            "failedJobsHistoryLimit": 1,
            "jobTemplate": {"spec": {"template": {"spec": {"containers": containers, "restartPolicy": "Never"}}}},
        },
        "status": status,
    })
}
