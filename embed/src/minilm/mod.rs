//! all-MiniLM-L6-v2 in plain Rust: text → 384 numbers whose cosine says how alike two texts are.
//!
//! The pipeline is sentence-transformers' for this model, in three parts:
//!
//! - [`tokenizer`]: BERT uncased WordPiece, text → ids from `vocab.txt`, at most 256 of them
//!   (`sentence_bert_config.json`'s `max_seq_length`) counting `[CLS]` and `[SEP]`.
//! - `bert`: the six-layer BERT encoder from `model.safetensors`, ids → one vector per token.
//! - here: mean pooling over the tokens, then L2 normalisation, so a dot product is a cosine.
//!
//! [`MiniLm`] is immutable once loaded, so one instance serves every thread behind an `Arc`;
//! each call is single-threaded on purpose, since the caller spreads batches over threads.

mod bert;
pub mod tokenizer;

use std::path::Path;

use serde_json::Value;

use crate::EmbedError;
use bert::{Bert, Config};
pub use tokenizer::Tokenizer;

/// The model's `max_seq_length` when `sentence_bert_config.json` is absent.
const DEFAULT_MAX_SEQ_LENGTH: usize = 256;

/// Tokens run through the encoder at once. Bounds the working memory of a call (about 16 KiB
/// per token) whatever the batch size; results do not depend on it.
const TOKENS_PER_PASS: usize = 2048;

/// The loaded model: tokenizer and encoder weights.
#[derive(Debug)]
pub struct MiniLm {
    tokenizer: Tokenizer,
    bert: Bert,
}

impl MiniLm {
    /// Loads the model directory (config.json, vocab.txt, model.safetensors).
    ///
    /// `sentence_bert_config.json`, `1_Pooling/config.json` and `tokenizer_config.json` are read
    /// when present, to take the maximum length from and to refuse a model this code would
    /// embed wrongly (other pooling, cased vocabulary).
    pub fn load(dir: &Path) -> Result<MiniLm, EmbedError> {
        let config_path = dir.join("config.json");
        let config =
            Config::parse(&read_text(&config_path)?).map_err(|r| model_error(&config_path, r))?;

        let max_len = max_seq_length(dir, &config)?;
        check_pooling(dir)?;
        check_lowercase(dir)?;

        let vocab_path = dir.join("vocab.txt");
        let tokenizer = Tokenizer::load(&vocab_path, max_len)?;
        if tokenizer.max_id() as usize >= config.vocab_size {
            let reason = format!(
                "vocabulary has ids up to {} but the model only {} embeddings",
                tokenizer.max_id(),
                config.vocab_size
            );
            return Err(model_error(&vocab_path, reason));
        }

        let weights_path = dir.join("model.safetensors");
        let bytes =
            std::fs::read(&weights_path).map_err(|e| model_error(&weights_path, e.to_string()))?;
        let bert =
            Bert::from_safetensors(config, &bytes).map_err(|r| model_error(&weights_path, r))?;
        Ok(MiniLm { tokenizer, bert })
    }

    /// 384 for this model (from config.json hidden_size).
    pub fn dimensions(&self) -> usize {
        self.bert.config().hidden
    }

    /// The tokenizer the texts go through.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// One L2-normalised vector per text, in order. Texts are truncated to 256 word pieces
    /// including [CLS] and [SEP]. An empty string gives the embedding of "[CLS] [SEP]".
    ///
    /// Texts of different lengths are batched without padding (see `bert`), which gives what a
    /// padded batch with an attention mask gives, so a text's vector does not depend on the
    /// texts it is batched with.
    pub fn embed_batch(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        let ids: Vec<Vec<u32>> = texts
            .iter()
            .map(|text| self.tokenizer.encode(text))
            .collect();
        let h = self.dimensions();
        let mut vectors = Vec::with_capacity(texts.len());
        let mut start = 0;
        while start < ids.len() {
            let mut end = start + 1;
            let mut tokens = ids[start].len();
            while end < ids.len() && tokens + ids[end].len() <= TOKENS_PER_PASS {
                tokens += ids[end].len();
                end += 1;
            }
            let pass: Vec<&[u32]> = ids[start..end].iter().map(Vec::as_slice).collect();
            let hidden = self.bert.forward(&pass);
            let mut first = 0;
            for seq in &pass {
                vectors.push(mean_pool_normalized(
                    &hidden[first * h..(first + seq.len()) * h],
                    h,
                ));
                first += seq.len();
            }
            start = end;
        }
        vectors
    }
}

/// The mean of a text's token vectors (every token counts, `[CLS]` and `[SEP]` too, as the
/// attention mask is 1 for them), scaled to unit length.
fn mean_pool_normalized(tokens: &[f32], width: usize) -> Vec<f32> {
    let mut mean = vec![0.0f32; width];
    for token in tokens.chunks_exact(width) {
        mean.iter_mut().zip(token).for_each(|(m, t)| *m += t);
    }
    // The 1/n of the mean cancels in the normalisation; kept so the step reads as the model's.
    let n = (tokens.len() / width).max(1) as f32;
    mean.iter_mut().for_each(|m| *m /= n);
    crate::normalize(&mut mean);
    mean
}

/// `max_seq_length` from `sentence_bert_config.json`, which must fit the position embeddings.
fn max_seq_length(dir: &Path, config: &Config) -> Result<usize, EmbedError> {
    let path = dir.join("sentence_bert_config.json");
    let Some(json) = read_json_if_present(&path)? else {
        return Ok(DEFAULT_MAX_SEQ_LENGTH.min(config.max_positions));
    };
    let max_len = json
        .get("max_seq_length")
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| {
            model_error(
                &path,
                "`max_seq_length` is missing or not an integer".into(),
            )
        })?;
    if !(2..=config.max_positions).contains(&max_len) {
        let reason = format!(
            "max_seq_length {max_len} is outside 2..={}",
            config.max_positions
        );
        return Err(model_error(&path, reason));
    }
    Ok(max_len)
}

/// Only mean pooling is implemented, so refuse a model configured for another.
fn check_pooling(dir: &Path) -> Result<(), EmbedError> {
    let path = dir.join("1_Pooling").join("config.json");
    let Some(json) = read_json_if_present(&path)? else {
        return Ok(());
    };
    let flag = |key: &str| json.get(key).and_then(Value::as_bool).unwrap_or(false);
    let others = [
        "pooling_mode_cls_token",
        "pooling_mode_max_tokens",
        "pooling_mode_mean_sqrt_len_tokens",
    ];
    if !flag("pooling_mode_mean_tokens") || others.iter().any(|key| flag(key)) {
        return Err(model_error(
            &path,
            "only mean pooling (pooling_mode_mean_tokens alone) is supported".into(),
        ));
    }
    Ok(())
}

/// The tokenizer always lowercases, so refuse a cased model.
fn check_lowercase(dir: &Path) -> Result<(), EmbedError> {
    let path = dir.join("tokenizer_config.json");
    let Some(json) = read_json_if_present(&path)? else {
        return Ok(());
    };
    if json.get("do_lower_case").and_then(Value::as_bool) == Some(false) {
        return Err(model_error(
            &path,
            "cased vocabularies are not supported (do_lower_case is false)".into(),
        ));
    }
    Ok(())
}

fn read_text(path: &Path) -> Result<String, EmbedError> {
    std::fs::read_to_string(path).map_err(|e| model_error(path, e.to_string()))
}

fn read_json_if_present(path: &Path) -> Result<Option<Value>, EmbedError> {
    if !path.exists() {
        return Ok(None);
    }
    let text = read_text(path)?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| model_error(path, format!("not JSON: {e}")))
}

fn model_error(path: &Path, reason: String) -> EmbedError {
    EmbedError::Model {
        path: path.display().to_string(),
        reason,
    }
}
