//! Writing vectors: person messages into `message_embeddings`, incidents into
//! `incidents.embedding`, each tagged with the model that made it. Every write is an idempotent
//! upsert keyed by the row's id, so a record the embedder sees twice (at-least-once delivery, a
//! restart mid-batch) leaves exactly one vector. Also the reads `firstline embedder --reindex`
//! walks, and the column check the embedder and worker make at start.

use sqlx::{PgPool, Postgres, Transaction};

use crate::incidents::vector_literal;

/// Message kinds worth embedding: what people wrote. Alerts are embedded through the incidents
/// they become; bot echoes, edits and deletions are not conversation.
const PERSON_KINDS: &[&str] = &["mention", "chatter"];

/// Whether a message with this kind, author and text is a person's words worth a vector.
pub fn is_person_message(
    kind: &str,
    user_id: Option<&str>,
    bot_id: Option<&str>,
    text: &str,
) -> bool {
    PERSON_KINDS.contains(&kind) && user_id.is_some() && bot_id.is_none() && !text.trim().is_empty()
}

/// Writes message vectors (skipping messages no longer in the table, e.g. after retention);
/// returns how many rows were inserted or changed. A vector of the same model already there is
/// left alone.
async fn upsert_messages(
    tx: &mut Transaction<'_, Postgres>,
    model: &str,
    vectors: &[(i64, Vec<f32>)],
) -> Result<u64, sqlx::Error> {
    if vectors.is_empty() {
        return Ok(0);
    }
    let (ids, texts) = columns(vectors);
    let written = sqlx::query(
        "INSERT INTO message_embeddings (message_id, model, embedding)
         SELECT u.id, $3, u.vector::vector
         FROM unnest($1::bigint[], $2::text[]) AS u(id, vector)
         JOIN messages m ON m.id = u.id
         ON CONFLICT (message_id) DO UPDATE
            SET model = excluded.model, embedding = excluded.embedding, embedded_at = now()
            WHERE message_embeddings.model <> excluded.model",
    )
    .bind(&ids)
    .bind(&texts)
    .bind(model)
    .execute(&mut **tx)
    .await?;
    Ok(written.rows_affected())
}

/// Writes incident vectors; returns how many incidents changed.
async fn set_incidents(
    tx: &mut Transaction<'_, Postgres>,
    model: &str,
    vectors: &[(i64, Vec<f32>)],
) -> Result<u64, sqlx::Error> {
    if vectors.is_empty() {
        return Ok(0);
    }
    let (ids, texts) = columns(vectors);
    let written = sqlx::query(
        "UPDATE incidents i SET embedding = u.vector::vector, embedding_model = $3
         FROM unnest($1::bigint[], $2::text[]) AS u(id, vector)
         WHERE i.id = u.id AND i.embedding_model IS DISTINCT FROM $3",
    )
    .bind(&ids)
    .bind(&texts)
    .bind(model)
    .execute(&mut **tx)
    .await?;
    Ok(written.rows_affected())
}

/// Writes message and incident vectors of `model` in one transaction; returns how many of each
/// were written. What the embedder, `--reindex` and `eval` all do with a batch.
pub async fn write(
    pool: &PgPool,
    model: &str,
    messages: &[(i64, Vec<f32>)],
    incidents: &[(i64, Vec<f32>)],
) -> Result<(u64, u64), sqlx::Error> {
    let mut tx = pool.begin().await?;
    let messages = upsert_messages(&mut tx, model, messages).await?;
    let incidents = set_incidents(&mut tx, model, incidents).await?;
    tx.commit().await?;
    Ok((messages, incidents))
}

/// `(ids, vector literals)`, the two arrays the upserts `unnest`.
fn columns(vectors: &[(i64, Vec<f32>)]) -> (Vec<i64>, Vec<String>) {
    vectors
        .iter()
        .map(|(id, vector)| (*id, vector_literal(vector)))
        .unzip()
}

/// A row waiting for a vector of the current model: its id and the text to embed.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Pending {
    pub id: i64,
    pub text: String,
}

/// Person messages after `after_id` without a vector of `model`, in id order.
pub async fn messages_to_embed(
    pool: &PgPool,
    model: &str,
    after_id: i64,
    limit: i64,
) -> Result<Vec<Pending>, sqlx::Error> {
    sqlx::query_as(
        "SELECT m.id, m.text FROM messages m
         LEFT JOIN message_embeddings e ON e.message_id = m.id
         WHERE m.id > $2 AND m.kind = ANY($4) AND m.user_id IS NOT NULL AND m.bot_id IS NULL
           AND btrim(m.text) <> '' AND e.model IS DISTINCT FROM $1
         ORDER BY m.id
         LIMIT $3",
    )
    .bind(model)
    .bind(after_id)
    .bind(limit)
    .bind(PERSON_KINDS)
    .fetch_all(pool)
    .await
}

/// Incidents after `after_id` without a vector of `model`, in id order, with the text
/// `firstline_model::incident_text` makes of them.
pub async fn incidents_to_embed(
    pool: &PgPool,
    model: &str,
    after_id: i64,
    limit: i64,
) -> Result<Vec<Pending>, sqlx::Error> {
    let rows: Vec<IncidentFields> = sqlx::query_as(
        "SELECT id, title, root_cause, resolution, summary, alertname, service FROM incidents
         WHERE id > $2 AND embedding_model IS DISTINCT FROM $1
         ORDER BY id
         LIMIT $3",
    )
    .bind(model)
    .bind(after_id)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| Pending {
            id: row.id,
            // The text recall compares: the same as the incident's topic record carries.
            text: firstline_model::incident_text(
                &row.title,
                &row.root_cause,
                &row.resolution,
                &row.summary,
                row.alertname.as_deref(),
                row.service.as_deref(),
            ),
        })
        .collect())
}

/// What an incident is embedded from.
#[derive(sqlx::FromRow)]
struct IncidentFields {
    id: i64,
    title: String,
    root_cause: String,
    resolution: String,
    summary: String,
    alertname: Option<String>,
    service: Option<String>,
}

/// The declared length of each vector column recall uses, `(table.column, dimensions)`.
async fn vector_columns(pool: &PgPool) -> Result<Vec<(String, i32)>, sqlx::Error> {
    // pgvector stores a `vector(n)` column's n as its type modifier.
    sqlx::query_as(
        "SELECT c.relname || '.' || a.attname, a.atttypmod
         FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
         JOIN pg_type t ON t.oid = a.atttypid
         WHERE t.typname = 'vector' AND c.relname IN ('incidents', 'message_embeddings')
           AND a.attnum > 0 AND NOT a.attisdropped
         ORDER BY 1",
    )
    .fetch_all(pool)
    .await
}

/// Refuses `dimensions` unless every vector column holds vectors of that length, naming the
/// column and both numbers.
pub async fn check_dimensions(pool: &PgPool, model: &str, dimensions: usize) -> Result<(), String> {
    let columns = vector_columns(pool)
        .await
        .map_err(|e| format!("reading the vector columns: {e}"))?;
    if columns.is_empty() {
        return Err("the database has no vector columns: run `firstline migrate`".to_string());
    }
    for (column, declared) in columns {
        if usize::try_from(declared).ok() != Some(dimensions) {
            return Err(format!(
                "the embedding model {model} makes {dimensions}-dimensional vectors but \
                 {column} holds {declared}: set embedding.dimensions and the model to match the \
                 column, or migrate the column to the new size and run `firstline embedder --reindex`"
            ));
        }
    }
    Ok(())
}
