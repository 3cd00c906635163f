//! The remote embedder: an OpenAI-compatible `/embeddings` endpoint through `firstline-llm`'s
//! client (its timeout, bounded retries and secret handling), in batches.

use std::time::Duration;

use firstline_llm::{Client, ClientOptions};

use crate::{EmbedError, Embedder};

/// Any OpenAI-compatible embeddings endpoint.
#[derive(Clone, Debug)]
pub struct RemoteEmbedder {
    client: Client,
    dimensions: usize,
    batch_size: usize,
}

impl RemoteEmbedder {
    /// A client of `base_url` for `model`, whose vectors must have `dimensions` numbers.
    pub fn new(
        base_url: &str,
        model: &str,
        api_key: Option<String>,
        timeout: Duration,
        dimensions: usize,
        batch_size: usize,
    ) -> Result<Self, EmbedError> {
        let mut options = ClientOptions::new(base_url, model);
        options.api_key = api_key;
        options.timeout = timeout;
        let client = Client::new(options).map_err(|e| EmbedError::Endpoint(e.to_string()))?;
        Ok(Self {
            client,
            dimensions,
            batch_size: batch_size.max(1),
        })
    }
}

#[async_trait::async_trait]
impl Embedder for RemoteEmbedder {
    fn model(&self) -> &str {
        self.client.model()
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut vectors = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.batch_size) {
            let embedded = self
                .client
                .embed(batch, None)
                .await
                .map_err(|e| EmbedError::Endpoint(e.to_string()))?;
            for mut vector in embedded {
                if vector.len() != self.dimensions {
                    return Err(EmbedError::Dimensions {
                        expected: self.dimensions,
                        got: vector.len(),
                    });
                }
                // Endpoints do not all promise unit vectors.
                crate::normalize(&mut vector);
                vectors.push(vector);
            }
        }
        Ok(vectors)
    }
}
