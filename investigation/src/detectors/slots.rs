//! What fills a database's volume when the database itself does not grow: a replication slot
//! nobody consumes. Postgres keeps every WAL segment a slot has not confirmed, so a slot whose
//! consumer is gone (a CDC connector scaled to zero, a replica deleted) retains WAL without
//! bound and the volume under `pg_wal` fills while the tables stay the same size.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`DatabaseGrew`] | symptom | the database's own size grew by at least [`MIN_SHARE`] of what its volume lost over the same span |
//! | [`SlotRetainsWal`] | cause | postgres_exporter's series for the pod show the slot inactive over the span, and its retained WAL grew by at least [`MIN_SHARE`] of what the volume's free bytes lost over the same span, more than the database grew |
//!
//! Read only from structure: the filling volume (`volumes.rs`' [`VolumeFilling`], which names
//! the database pod that mounts it), the kubelet's free bytes of its claim, and the database's
//! own series (`pg_replication_slots_pg_wal_lsn_diff`, `pg_replication_slot_slot_is_active`,
//! `pg_database_size_bytes`) selected by that pod. An active slot is being read, however much it
//! holds; a slot whose retained WAL is small against the loss does not account for it; a
//! database that grew by more than the slot did fills its volume itself (not this cause; when
//! it grew by most of the loss, that is said as what fills the volume, not why).
//!
//! What explains what: the slot explains its volume filling, its database pod's full disk, and
//! a step read in its own retained WAL.

use serde::{Deserialize, Serialize};

use super::series::{self, Item, QuotedSeries, format_bytes, format_hours, format_percent};
use super::volumes::{VolumeFilling, free_series};
use super::{
    Citation, Confidence, Fact, Finding, Kind, KindSpec, ObjectKind, Payload, Role, Round, Scene,
    Subject, Symptom,
};
use crate::evidence::Evidence;

/// The share of the volume's loss a slot's retained WAL must account for over the same span.
pub const MIN_SHARE: f64 = 0.5;
/// How long a slot must have been inactive to be what fills a volume: a replica restarting or
/// a connector redeploying leaves its slot idle for minutes, and the WAL of those minutes is
/// not what a volume filling over days holds.
const MIN_INACTIVE_HOURS: f64 = 6.0;
/// Retained WAL per slot.
pub const RETAINED: &str = "pg_replication_slots_pg_wal_lsn_diff";
/// Whether a consumer reads the slot (1) or not (0).
pub const ACTIVE: &str = "pg_replication_slot_slot_is_active";
/// The database's size, per database.
pub const SIZE: &str = "pg_database_size_bytes";

/// An inactive replication slot whose retained WAL fills its database's volume.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlotRetainsWal {
    pub slot: String,
    /// `logical` or `physical`, when the exporter says.
    pub slot_type: Option<String>,
    /// The database's pod.
    pub pod: String,
    pub namespace: Option<String>,
    /// The claim that fills.
    pub claim: String,
    /// WAL the slot retains now.
    pub retained_bytes: f64,
    /// How much its retained WAL grew over the span.
    pub wal_growth: f64,
    /// How much free space the volume lost over the same span.
    pub volume_loss: f64,
    /// How much the database itself grew over the span, when its size is read.
    pub database_growth: Option<f64>,
    /// Hours since the slot was last seen active; `None` when it is inactive over the whole
    /// span read.
    pub inactive_since_hours: Option<f64>,
    /// Hours of the span compared.
    pub span_hours: f64,
    /// When the volume is full at its current rate, as the volume's finding says it.
    pub full_in: Option<String>,
}

impl Payload for SlotRetainsWal {
    const SPEC: KindSpec = KindSpec {
        name: "replication-slot-retains-wal",
        role: Role::Cause,
        verified_when: "the database's own series show the slot inactive and its retained WAL \
                        growing by at least half of what the volume lost over the same span, \
                        more than the database itself grew",
        accounts_for: &[Symptom::Storage],
    };

    fn example() -> Self {
        Self {
            slot: "debezium_orders".into(),
            slot_type: Some("logical".into()),
            pod: "orders-db-0".into(),
            namespace: Some("orders".into()),
            claim: "data-orders-db-0".into(),
            retained_bytes: 96.97e9,
            wal_growth: 96.8e9,
            volume_loss: 96.8e9,
            database_growth: Some(0.15e9),
            inactive_since_hours: Some(47.0),
            span_hours: 47.0,
            full_in: Some("full in about 14 hours at the current rate (2.1 GB/h)".into()),
        }
    }

    fn title(&self) -> String {
        let since = match self.inactive_since_hours {
            Some(hours) => format!("since {} ago", format_hours(hours)),
            None => format!("for at least {}", format_hours(self.span_hours)),
        };
        format!(
            "Replication slot `{}` is inactive {since} and retains {} of WAL, filling `{}`",
            self.slot,
            format_bytes(self.retained_bytes),
            self.claim
        )
    }

    fn detail(&self) -> String {
        let kind = self
            .slot_type
            .as_deref()
            .map(|t| format!("{t} "))
            .unwrap_or_default();
        let database = match self.database_growth {
            Some(grew) => format!(", while the database itself grew {}", format_bytes(grew)),
            None => String::new(),
        };
        let full = match &self.full_in {
            Some(full_in) => {
                format!(" The volume is {full_in}, and Postgres stops when `pg_wal` cannot grow.")
            }
            None => String::new(),
        };
        format!(
            "No consumer reads {kind}replication slot `{}` on pod `{}`, so Postgres keeps every \
             WAL segment since it was last confirmed: over the same {} its retained WAL grew {} \
             and volume `{}` lost {} of free space{database}.{full}",
            self.slot,
            self.pod,
            format_hours(self.span_hours),
            format_bytes(self.wal_growth),
            self.claim,
            format_bytes(self.volume_loss),
        )
    }

    fn subject(&self) -> Option<Subject> {
        Some(Subject::new(ObjectKind::Pod, self.pod.clone()))
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.pod == other.pod && self.slot == other.slot
    }

    fn step(&self, _scene: &Scene) -> String {
        let ns = super::text::namespace_flag(self.namespace.as_deref());
        format!(
            "If slot `{slot}`'s consumer is gone for good, drop it on the primary (`kubectl \
             exec{ns} {pod} -- psql -c \"SELECT pg_drop_replication_slot('{slot}')\"`), else \
             bring its consumer back so it confirms the WAL; then set `max_slot_wal_keep_size` \
             so an abandoned slot cannot fill `{claim}` again.",
            slot = self.slot,
            pod = self.pod,
            claim = self.claim
        )
    }

    fn explains(&self, effect: &Finding) -> bool {
        match &effect.fact {
            Fact::VolumeFilling(v) => v.claim == self.claim,
            Fact::DiskFull(d) => d.pod.as_deref() == Some(self.pod.as_str()),
            // The slot's own retained WAL, read as a step.
            Fact::MetricStep(m) => {
                m.series.starts_with(RETAINED)
                    && m.series.contains(&format!("pod=\"{}\"", self.pod))
                    && m.series.contains(&format!("slot_name=\"{}\"", self.slot))
            }
            _ => false,
        }
    }
}

/// A database whose own size grew by most of what its volume lost: the data itself fills the
/// volume (an import, a table that grows), not WAL kept for a slot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatabaseGrew {
    /// The database's pod.
    pub pod: String,
    pub claim: String,
    /// How much its databases grew over the span.
    pub growth: f64,
    /// How much free space the volume lost over the same span.
    pub volume_loss: f64,
    /// Hours of the span compared.
    pub span_hours: f64,
}

impl Payload for DatabaseGrew {
    const SPEC: KindSpec = KindSpec {
        name: "database-grew",
        role: Role::Symptom,
        verified_when: "the database's own size grew by at least half of what its volume lost \
                        over the same span",
        accounts_for: &[Symptom::Storage],
    };

    fn example() -> Self {
        Self {
            pod: "analytics-pg-0".into(),
            claim: "data-analytics-pg-0".into(),
            growth: 37.5e9,
            volume_loss: 37.6e9,
            span_hours: 48.0,
        }
    }

    fn title(&self) -> String {
        format!(
            "The database in pod `{}` grew {} over {}, {} of what volume `{}` lost",
            self.pod,
            format_bytes(self.growth),
            format_hours(self.span_hours),
            format_percent(self.growth / self.volume_loss),
            self.claim
        )
    }

    fn detail(&self) -> String {
        format!(
            "The database's own size (`pg_database_size_bytes`) grew {} while volume `{}` lost \
             {} of free space over the same {}: its data fills the volume, not WAL kept for a \
             replication slot. What writes it (an import, a table that grows) is the question.",
            format_bytes(self.growth),
            self.claim,
            format_bytes(self.volume_loss),
            format_hours(self.span_hours)
        )
    }

    fn subject(&self) -> Option<Subject> {
        Some(Subject::new(ObjectKind::Pod, self.pod.clone()))
    }

    fn step(&self, _scene: &Scene) -> String {
        format!(
            "Find what writes to the database in pod `{}` (its largest and fastest-growing \
             tables, the clients loading it), and expand claim `{}` if the growth is expected.",
            self.pod, self.claim
        )
    }
}

/// The value of a series at `t`: its last point at or before `t`, else its first.
fn value_at(points: &[(f64, f64)], t: f64) -> Option<(usize, f64)> {
    points
        .iter()
        .enumerate()
        .rev()
        .find(|(_, (ts, _))| *ts <= t + 1e-3)
        .or_else(|| points.iter().enumerate().next())
        .map(|(i, (_, v))| (i, *v))
}

/// Whether a series is `name`, about `pod` (in `namespace`, when both say).
fn about(s: &QuotedSeries<'_>, name: &str, pod: &str, namespace: Option<&str>) -> bool {
    let labels = &s.series.labels;
    labels.get("__name__").map(String::as_str) == Some(name)
        && labels.get("pod").map(String::as_str) == Some(pod)
        && match (namespace, labels.get("namespace")) {
            (Some(ns), Some(n)) => ns == n,
            _ => true,
        }
}

/// The index of the first point of the series' final run of zeros; `None` when its last point
/// is not zero.
fn inactive_from(points: &[(f64, f64)]) -> Option<usize> {
    let (_, last) = points.last()?;
    if *last > 0.0 {
        return None;
    }
    Some(
        points
            .iter()
            .rposition(|(_, v)| *v > 0.0)
            .map_or(0, |i| i + 1),
    )
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let volumes: Vec<&VolumeFilling> = round
        .found_of(Kind::VolumeFilling)
        .filter_map(|f| match &f.fact {
            Fact::VolumeFilling(v) if v.database_pod.is_some() => Some(v),
            _ => None,
        })
        .collect();
    if volumes.is_empty() {
        return Vec::new();
    }
    let items = series::items(round.evidence);
    let mut out = Vec::new();
    for volume in volumes {
        let Some(pod) = volume.database_pod.as_deref() else {
            continue;
        };
        let slots = slots_filling(&items, volume, pod);
        // A slot that accounts for the loss is what fills it; the database's own growth, if
        // large too, is not said beside it as if it were.
        if slots.is_empty() {
            out.extend(database_grew(&items, volume, pod));
        }
        out.extend(slots);
    }
    out
}

/// The database of `pod` grew by at least [`MIN_SHARE`] of what `volume` lost over the span
/// both series show.
fn database_grew(items: &[Item<'_>], volume: &VolumeFilling, pod: &str) -> Option<Finding> {
    let namespace = volume.namespace.as_deref();
    let (free_evidence, free) = free_series(items, namespace, &volume.claim)?;
    let sizes: Vec<(&Evidence, &QuotedSeries<'_>)> = series::all_series(items)
        .filter(|(_, _, s)| about(s, SIZE, pod, namespace))
        .map(|(item, _, s)| (item.evidence, s))
        .collect();
    let start = sizes
        .iter()
        .filter_map(|(_, s)| s.series.points.first().map(|(t, _)| *t))
        .fold(f64::NEG_INFINITY, f64::max)
        .max(free.series.points.first()?.0);
    let &(end, free_now) = free.series.points.last()?;
    let (free_from, free_then) = value_at(&free.series.points, start)?;
    let volume_loss = free_then - free_now;
    let mut growth = 0.0;
    let mut refs: Vec<Citation> = Vec::new();
    for (evidence, s) in &sizes {
        let (from, then) = value_at(&s.series.points, start)?;
        let last = s.series.points.len() - 1;
        growth += s.series.points[last].1 - then;
        refs.extend(series::quotes(evidence, s, &[from, last]));
    }
    if sizes.is_empty() || volume_loss <= 0.0 || growth < MIN_SHARE * volume_loss {
        return None;
    }
    refs.extend(series::quotes(
        free_evidence,
        free,
        &[free_from, free.series.points.len() - 1],
    ));
    refs.dedup();
    Some(
        Finding::new(
            DatabaseGrew {
                pod: pod.to_string(),
                claim: volume.claim.clone(),
                growth,
                volume_loss,
                span_hours: ((end - start) / 3600.0).max(0.0),
            },
            Confidence::Medium,
            true,
        )
        .citing(refs),
    )
}

/// The inactive slots of `pod` that account for what `volume` lost.
fn slots_filling(items: &[Item<'_>], volume: &VolumeFilling, pod: &str) -> Vec<Finding> {
    let namespace = volume.namespace.as_deref();
    let Some((free_evidence, free)) = free_series(items, namespace, &volume.claim) else {
        return Vec::new();
    };
    let all: Vec<(&Evidence, &QuotedSeries<'_>)> = series::all_series(items)
        .map(|(item, _, s)| (item.evidence, s))
        .collect();
    let mut out = Vec::new();
    for &(wal_evidence, wal) in all
        .iter()
        .filter(|(_, s)| about(s, RETAINED, pod, namespace))
    {
        let Some(slot) = wal.series.labels.get("slot_name").filter(|s| !s.is_empty()) else {
            continue;
        };
        let Some(&(active_evidence, active)) = all.iter().find(|(_, s)| {
            about(s, ACTIVE, pod, namespace) && s.series.labels.get("slot_name") == Some(slot)
        }) else {
            continue;
        };
        let Some(from) = inactive_from(&active.series.points) else {
            continue;
        };
        let Some(&(since, _)) = active.series.points.get(from) else {
            continue;
        };
        let (Some(&(end, retained)), Some(&(_, free_now))) =
            (wal.series.points.last(), free.series.points.last())
        else {
            continue;
        };
        let (Some((wal_from, wal_then)), Some((free_from, free_then))) = (
            value_at(&wal.series.points, since),
            value_at(&free.series.points, since),
        ) else {
            continue;
        };
        let wal_growth = retained - wal_then;
        let volume_loss = free_then - free_now;
        if (end - since) / 3600.0 < MIN_INACTIVE_HOURS
            || volume_loss <= 0.0
            || wal_growth < MIN_SHARE * volume_loss
        {
            continue;
        }
        let sizes: Vec<(&Evidence, &QuotedSeries<'_>)> = all
            .iter()
            .filter(|(_, s)| about(s, SIZE, pod, namespace))
            .copied()
            .collect();
        let database_growth = (!sizes.is_empty()).then(|| {
            sizes
                .iter()
                .filter_map(|(_, s)| {
                    let (_, now) = s.series.points.last()?;
                    let (_, then) = value_at(&s.series.points, since)?;
                    Some(now - then)
                })
                .sum::<f64>()
        });
        if database_growth.is_some_and(|grew| grew >= wal_growth) {
            continue;
        }
        let mut refs: Vec<Citation> =
            series::quotes(wal_evidence, wal, &[wal_from, wal.series.points.len() - 1]);
        refs.extend(series::quotes(active_evidence, active, &[from]));
        refs.extend(series::quotes(
            free_evidence,
            free,
            &[free_from, free.series.points.len() - 1],
        ));
        refs.dedup();
        let span_hours = ((end - since) / 3600.0).max(0.0);
        let first = active.series.points.first().map_or(since, |(t, _)| *t);
        let at = chrono::DateTime::from_timestamp(since as i64, 0);
        out.push(
            Finding::new(
                SlotRetainsWal {
                    slot: slot.clone(),
                    slot_type: active
                        .series
                        .labels
                        .get("slot_type")
                        .or_else(|| wal.series.labels.get("slot_type"))
                        .cloned(),
                    pod: pod.to_string(),
                    namespace: volume.namespace.clone(),
                    claim: volume.claim.clone(),
                    retained_bytes: retained,
                    wal_growth,
                    volume_loss,
                    database_growth,
                    inactive_since_hours: (since > first).then_some(span_hours),
                    span_hours,
                    full_in: volume.full_in(),
                },
                Confidence::High,
                true,
            )
            .citing(refs)
            .dated(at),
        );
    }
    out
}

#[cfg(test)]
mod tests;
