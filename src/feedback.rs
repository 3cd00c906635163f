//! `firstline feedback`: the rounds people marked "Wrong cause", newest first, each printed as
//! the start of a lab scenario — the alert as posted, what the round said, who marked it, and the
//! evidence it read (first lines) — so the case the bot got wrong can be written up for the lab
//! with the truth the people in the thread knew.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::Context as _;
use firstline_config::Settings;
use firstline_store::feedback::{WrongRound, wrong_rounds};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Most rounds listed.
    #[arg(long, default_value_t = 20)]
    limit: i64,
}

/// Characters of each evidence item's first line shown.
const EVIDENCE_LINE_CHARS: usize = 160;

pub async fn run(settings: Settings, args: Args) -> anyhow::Result<ExitCode> {
    let pool = firstline_store::connect(&settings.database)
        .await
        .context("connecting to database.url")?;
    let rounds = wrong_rounds(&pool, args.limit.max(1))
        .await
        .context("reading round_feedback")?;
    if rounds.is_empty() {
        println!("No round is marked wrong.");
    }
    for round in &rounds {
        print!("{}", scenario_start(round));
    }
    pool.close().await;
    Ok(ExitCode::SUCCESS)
}

/// One wrong round as the start of a lab scenario (YAML; the truth is left for a person).
fn scenario_start(round: &WrongRound) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# {}/{}/{} round {}: marked wrong by {} at {}",
        round.team_id,
        round.channel_id,
        round.thread_ts,
        round.number,
        round.users.join(", "),
        round.marked_at.format("%Y-%m-%d %H:%M UTC"),
    );
    let _ = writeln!(out, "description: >");
    let _ = writeln!(
        out,
        "  Firstline said: {}{}. People marked it wrong: write what was really wrong, and the \
         red herring that misled it.",
        one_line(&round.headline),
        round
            .cause
            .as_deref()
            .map(|c| format!("; cause: {}", one_line(c)))
            .unwrap_or_default()
    );
    for note in &round.notes {
        let _ = writeln!(
            out,
            "  The right cause, as the thread said: {}.",
            one_line(note)
        );
    }
    let _ = writeln!(out, "alert:\n  text: |");
    for line in round
        .alert
        .as_deref()
        .unwrap_or("(no alert message)")
        .lines()
    {
        let _ = writeln!(out, "    {line}");
    }
    let _ = writeln!(out, "# evidence the round read:");
    for (id, capability, excerpt) in &round.evidence.0 {
        let first = excerpt.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let _ = writeln!(
            out,
            "#   {id} {capability}: {}",
            firstline_model::text::prefix(first.trim(), EVIDENCE_LINE_CHARS)
        );
    }
    let _ = writeln!(
        out,
        "expect:\n  verdict: either\n  headline: []  # what the right answer names\n"
    );
    out
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::types::Json;

    #[test]
    fn a_wrong_round_reads_as_the_start_of_a_scenario() {
        let round = WrongRound {
            team_id: "T1".into(),
            channel_id: "C1".into(),
            thread_ts: "1733140000.000100".into(),
            number: 2,
            headline: "checkout crash-looping".into(),
            cause: Some("Missing configuration:\nPAYMENT_MODE".into()),
            alert: Some("[FIRING:1] KubePodCrashLooping\nnamespace=shop".into()),
            users: vec!["U1".into(), "U2".into()],
            notes: vec!["the node's disk\nfilled up".into()],
            marked_at: chrono::DateTime::from_timestamp(1_733_140_500, 0).expect("a time"),
            evidence: Json(vec![(
                "E1".into(),
                "pod_describe".into(),
                "\nName: checkout-1\nStatus: Running".into(),
            )]),
        };
        let text = scenario_start(&round);
        assert!(
            text.starts_with("# T1/C1/1733140000.000100 round 2: marked wrong by U1, U2"),
            "{text}"
        );
        assert!(
            text.contains("cause: Missing configuration: PAYMENT_MODE."),
            "{text}"
        );
        assert!(
            text.contains("    [FIRING:1] KubePodCrashLooping\n    namespace=shop\n"),
            "{text}"
        );
        assert!(
            text.contains("#   E1 pod_describe: Name: checkout-1\n"),
            "{text}"
        );
        // It parses as YAML: a person fills it in.
        let parsed: serde_norway::Value = serde_norway::from_str(&text).expect("YAML");
        assert_eq!(
            parsed["expect"]["verdict"],
            serde_norway::Value::from("either")
        );
    }
}
