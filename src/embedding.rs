//! The embedding model a process uses (the worker's recall, the embedder, `eval` and
//! `investigate`), built from `[embedding]` and checked against the database's vector columns,
//! so that a model whose vectors do not fit fails at start with both sizes named.

use std::sync::Arc;

use anyhow::Context;
use firstline_config::Settings;
use firstline_embed::Embedder;
use sqlx::PgPool;

/// The configured model, probed once, and (with `pool`) checked against the vector columns.
/// A process that runs several parts (`firstline dev`) loads it once and hands it to each.
pub async fn load(settings: &Settings, pool: Option<&PgPool>) -> anyhow::Result<Arc<dyn Embedder>> {
    let embedder = firstline_embed::from_settings(&settings.embedding, &settings.dev.tools_dir)
        .await
        .context("loading the embedding model (embedding.*)")?;
    if let Some(pool) = pool {
        check(pool, embedder.as_ref()).await?;
    }
    tracing::info!(
        model = embedder.model(),
        dimensions = embedder.dimensions(),
        "embedding model ready"
    );
    Ok(embedder)
}

/// Whether `embedder`'s vectors fit the database's vector columns.
pub async fn check(pool: &PgPool, embedder: &dyn Embedder) -> anyhow::Result<()> {
    firstline_store::embeddings::check_dimensions(pool, embedder.model(), embedder.dimensions())
        .await
        .map_err(anyhow::Error::msg)
        .context("checking the embedding model against the database")
}
