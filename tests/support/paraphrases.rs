//! The lab's paraphrase set (`lab/recall/paraphrases.yaml`) as typed data, for
//! `tests/recall_paraphrase.rs` and `bench/recall`: past incidents, distractors, and alerts
//! worded differently that must find one of them.

#![allow(dead_code)]

use firstline_alert::AlertTarget;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
pub struct Set {
    pub past: Vec<Past>,
    pub distractors: Vec<Past>,
    pub queries: Vec<Query>,
}

/// An incident in memory, as `incidents` stores it.
#[derive(Debug, Deserialize)]
pub struct Past {
    pub id: String,
    pub team: String,
    pub alertname: Option<String>,
    pub service: Option<String>,
    pub namespace: Option<String>,
    pub title: String,
    pub summary: String,
    pub root_cause: String,
    pub resolution: String,
}

impl Past {
    /// What the embedder would embed for it.
    pub fn text(&self) -> String {
        firstline_model::incident_text(
            &self.title,
            &self.root_cause,
            &self.resolution,
            &self.summary,
            self.alertname.as_deref(),
            self.service.as_deref(),
        )
    }
}

impl Past {
    /// Records it in workspace `team` as the incident of a resolved thread `thread_ts`, through
    /// the store's own insert; returns `incidents.id`.
    pub async fn record(
        &self,
        pool: &sqlx::PgPool,
        team: &str,
        thread_ts: &str,
        resolved_at: chrono::DateTime<chrono::Utc>,
    ) -> i64 {
        let mut conn = pool.acquire().await.expect("a connection");
        let thread_id: i64 = sqlx::query_scalar(
            "INSERT INTO threads (team_id, channel_id, thread_ts, status, resolved_at)
             VALUES ($1, 'CPAST', $2, 'resolved', $3) RETURNING id",
        )
        .bind(team)
        .bind(thread_ts)
        .bind(resolved_at)
        .fetch_one(&mut *conn)
        .await
        .expect("inserting the past thread");
        let incident = firstline_store::incidents::NewIncident {
            thread_id,
            team_id: team.to_string(),
            permalink: None,
            alertname: self.alertname.clone(),
            service: self.service.clone(),
            namespace: self.namespace.clone(),
            title: self.title.clone(),
            summary: self.summary.clone(),
            root_cause: self.root_cause.clone(),
            resolution: self.resolution.clone(),
            resolved_at,
            alert_count: 1,
        };
        firstline_store::incidents::insert(&mut conn, &incident)
            .await
            .expect("inserting an incident")
            .expect("a new thread has no incident yet")
    }
}

/// A new alert and the past incident it must find.
#[derive(Debug, Deserialize)]
pub struct Query {
    pub id: String,
    pub expect: String,
    pub team: String,
    pub alert: Alert,
}

#[derive(Debug, Deserialize)]
pub struct Alert {
    pub alertname: Option<String>,
    pub namespace: Option<String>,
    pub service: Option<String>,
    pub workload: Option<String>,
    pub summary: Option<String>,
    pub description: Option<String>,
}

impl Alert {
    /// The alert as the parser would have read it.
    pub fn target(&self) -> AlertTarget {
        AlertTarget {
            alertname: self.alertname.clone(),
            namespace: self.namespace.clone(),
            service: self.service.clone(),
            workload: self.workload.clone(),
            summary: self.summary.clone(),
            description: self.description.clone(),
            ..AlertTarget::default()
        }
    }
}

/// The set, from the workspace's `lab/recall/`.
pub fn load() -> Set {
    let path = firstline_testkit::workspace_root().join("lab/recall/paraphrases.yaml");
    let text = std::fs::read_to_string(&path).expect("reading the paraphrase set");
    serde_norway::from_str(&text).expect("parsing the paraphrase set")
}
