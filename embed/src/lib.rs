//! Text embeddings for recall by meaning: one [`Embedder`] trait, two implementations.
//!
//! - [`LocalEmbedder`]: all-MiniLM-L6-v2 (384 dimensions) run in-process from its safetensors
//!   (the default; no network, no GPU). The model itself is [`minilm::MiniLm`], a BERT encoder
//!   with mean pooling written on `matrixmultiply`, so the workspace does not pay for a tensor
//!   framework's build.
//! - [`RemoteEmbedder`]: any OpenAI-compatible `/v1/embeddings` endpoint, through `firstline-llm`.
//!
//! Every vector is L2-normalised, so cosine distance is what pgvector's `<=>` computes. The
//! embedder process (`firstline embedder`) and the recall node both hold one `Arc<dyn Embedder>`.

mod local;
pub mod minilm;
mod remote;

pub use local::LocalEmbedder;
pub use remote::RemoteEmbedder;

/// Why texts could not be embedded.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The model's files are missing or unreadable.
    #[error("embedding model at {path}: {reason}")]
    Model { path: String, reason: String },
    /// The remote endpoint failed or answered something unusable.
    #[error("embedding endpoint: {0}")]
    Endpoint(String),
    /// A vector had the wrong length.
    #[error("the embedding model returned {got} dimensions where {expected} were expected")]
    Dimensions { expected: usize, got: usize },
}

/// Turns texts into unit vectors of [`Embedder::dimensions`] numbers.
#[async_trait::async_trait]
pub trait Embedder: Send + Sync + std::fmt::Debug + 'static {
    /// Name recorded beside every vector (`embedding_model`): vectors of different models are
    /// never compared.
    fn model(&self) -> &str;
    /// Length of every vector.
    fn dimensions(&self) -> usize;
    /// One vector per text, in order.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// The embedder `settings` describe: the endpoint when `base_url` is set, else the local model
/// (found under `tools_dir` unless `model_dir` says where). Its vectors are checked to have
/// `settings.dimensions` numbers (an endpoint's by one probe), so a mismatch fails here, at
/// start-up, with both numbers — not at the first insert.
pub async fn from_settings(
    settings: &firstline_config::EmbeddingSettings,
    tools_dir: &std::path::Path,
) -> Result<std::sync::Arc<dyn Embedder>, EmbedError> {
    let expected = settings.dimensions as usize;
    let embedder: std::sync::Arc<dyn Embedder> = if settings.remote() {
        let key = settings.api_key.expose().trim().to_string();
        std::sync::Arc::new(RemoteEmbedder::new(
            settings.base_url.trim(),
            settings.model.trim(),
            (!key.is_empty()).then_some(key),
            std::time::Duration::from_secs(settings.request_timeout_secs),
            expected,
            settings.batch_size,
        )?)
    } else {
        let dir = LocalEmbedder::locate(&settings.model_dir, tools_dir)?;
        let dir_for_load = dir.clone();
        let batch_size = settings.batch_size;
        let local =
            tokio::task::spawn_blocking(move || LocalEmbedder::load(&dir_for_load, batch_size))
                .await
                .map_err(|e| EmbedError::Model {
                    path: dir.display().to_string(),
                    reason: format!("loading failed: {e}"),
                })??;
        std::sync::Arc::new(local)
    };
    let got = if settings.remote() {
        // One probe makes an endpoint's wrong size a start-up error (its `embed` checks each
        // vector against `expected`); the local model's size is fixed by its weights.
        let probe = embedder.embed(&["dimension probe".to_string()]).await?;
        probe.first().map_or(0, Vec::len)
    } else {
        embedder.dimensions()
    };
    if got != expected {
        return Err(EmbedError::Dimensions { expected, got });
    }
    Ok(embedder)
}

/// Scales `vector` to unit length, as sentence-transformers' Normalize does (dividing by
/// max(‖v‖, 1e-12)): cosine distance in pgvector assumes unit vectors.
pub(crate) fn normalize(vector: &mut [f32]) {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    vector.iter_mut().for_each(|x| *x /= norm);
}
