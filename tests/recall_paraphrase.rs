//! Recall by meaning on the lab's paraphrase set (`lab/recall/paraphrases.yaml`): past incidents
//! and new alerts worded differently, plus unrelated distractors, in a real Postgres with
//! pgvector and embedded by the local all-MiniLM-L6-v2. Every query runs twice in one test —
//! keyword-only (full-text + exact identifiers) and hybrid (with the vector signal) — and both
//! hit rates at 3 are printed side by side. Hybrid must find at least 90 %, keyword-only fewer,
//! and no query may see another workspace's incident.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use firstline_embed::Embedder;
use firstline_investigation::recall::{RecallOptions, RecallQuery, meaning_text, search_incidents};
use firstline_store::embeddings;
use support::paraphrases::{self, Past};

async fn local_embedder() -> Arc<dyn Embedder> {
    let settings = firstline_config::Settings::default();
    firstline_embed::from_settings(
        &settings.embedding,
        &firstline_testkit::workspace_root().join(".tools"),
    )
    .await
    .expect("the local model (scripts/setup installs it)")
}

/// Inserts every incident of the set with its embedding; returns `incidents.id` by set id.
async fn remember(
    pool: &sqlx::PgPool,
    embedder: &dyn Embedder,
    incidents: &[&Past],
) -> BTreeMap<i64, String> {
    let mut ids = BTreeMap::new();
    let mut vectors_for = Vec::new();
    for (i, past) in incidents.iter().enumerate() {
        let resolved_at = chrono::Utc::now() - chrono::Duration::days(i as i64 + 1);
        let id = past
            .record(pool, &past.team, &format!("1700000000.{i:06}"), resolved_at)
            .await;
        ids.insert(id, past.id.clone());
        vectors_for.push((id, past.text()));
    }
    let texts: Vec<String> = vectors_for.iter().map(|(_, text)| text.clone()).collect();
    let vectors = embedder
        .embed(&texts)
        .await
        .expect("embedding the incidents");
    let pairs: Vec<(i64, Vec<f32>)> = vectors_for.iter().map(|(id, _)| *id).zip(vectors).collect();
    embeddings::write(pool, embedder.model(), &[], &pairs)
        .await
        .expect("writing vectors");
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hybrid_recall_finds_reworded_incidents_that_keywords_miss() {
    let set = paraphrases::load();
    assert!(set.queries.len() >= 20, "at least 20 pairs");
    assert!(set.distractors.len() >= 20, "at least 20 distractors");
    let db = firstline_testkit::test_db().await;
    let embedder = local_embedder().await;
    let all: Vec<&Past> = set.past.iter().chain(&set.distractors).collect();
    let names = remember(&db.pool, embedder.as_ref(), &all).await;
    let team_of: BTreeMap<&str, &str> = all
        .iter()
        .map(|p| (p.id.as_str(), p.team.as_str()))
        .collect();

    let options = RecallOptions::default();
    let mut keyword_hits = 0;
    let mut hybrid_hits = 0;
    let mut table = String::from(
        "| query | keyword rank | hybrid rank | hybrid signals |\n|---|---|---|---|\n",
    );
    for query in &set.queries {
        let target = query.alert.target();
        let recall_query = RecallQuery::for_alert(&query.team, &target, options.max_terms);
        let keyword = search_incidents(&db.pool, &recall_query, None, &options)
            .await
            .expect("keyword recall");
        let vector = embedder
            .embed(&[meaning_text(&target)])
            .await
            .expect("embedding the alert")
            .remove(0);
        let hybrid = search_incidents(
            &db.pool,
            &recall_query,
            Some((vector, embedder.model())),
            &options,
        )
        .await
        .expect("hybrid recall");
        for found in keyword.iter().chain(&hybrid) {
            let name = &names[&found.incident.id];
            assert_eq!(
                team_of[name.as_str()],
                query.team,
                "{}: recall returned {name} from another workspace",
                query.id
            );
        }
        let rank = |found: &[firstline_investigation::PriorIncident]| {
            found
                .iter()
                .position(|prior| names[&prior.incident.id] == query.expect)
                .map(|i| i + 1)
        };
        let (keyword_rank, hybrid_rank) = (rank(&keyword), rank(&hybrid));
        keyword_hits += usize::from(keyword_rank.is_some());
        hybrid_hits += usize::from(hybrid_rank.is_some());
        let signals = hybrid_rank
            .map(|r| hybrid[r - 1].matched_on.join("+"))
            .unwrap_or_default();
        let show = |rank: Option<usize>| rank.map_or("miss".to_string(), |r| r.to_string());
        table.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            query.id,
            show(keyword_rank),
            show(hybrid_rank),
            signals
        ));
    }
    let total = set.queries.len();
    let percent = |hits: usize| 100.0 * hits as f64 / total as f64;
    println!("{table}");
    println!(
        "recall@3 on {total} paraphrased alerts ({} incidents stored): keyword-only {keyword_hits}/{total} ({:.0} %), hybrid {hybrid_hits}/{total} ({:.0} %)",
        all.len(),
        percent(keyword_hits),
        percent(hybrid_hits)
    );
    assert!(
        percent(hybrid_hits) >= 90.0,
        "hybrid recall@3 {hybrid_hits}/{total} is under 90 %\n{table}"
    );
    assert!(
        keyword_hits < hybrid_hits,
        "keyword-only found {keyword_hits}, hybrid {hybrid_hits}: meaning added nothing\n{table}"
    );
}
