//! all-MiniLM-L6-v2 against the real model files: published reference similarities, tokenizer
//! ids checked against `vocab.txt` and Hugging Face's tokenizer, batch invariance, and a
//! throughput figure.
//!
//! The model comes from `FIRSTLINE_EMBEDDING__MODEL_DIR`, else from the tools virtualenv that
//! `scripts/setup` fills. A missing model fails the tests rather than skipping them: a skipped
//! correctness test would let a broken embedder through.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use firstline_embed::EmbedError;
use firstline_embed::LocalEmbedder;
use firstline_embed::minilm::MiniLm;

/// Where the embedder itself looks: `FIRSTLINE_EMBEDDING__MODEL_DIR`, else the tools
/// virtualenv `scripts/setup` fills.
fn model_dir() -> PathBuf {
    let configured = std::env::var_os("FIRSTLINE_EMBEDDING__MODEL_DIR").unwrap_or_default();
    let tools = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.tools");
    LocalEmbedder::locate(Path::new(&configured), &tools)
        .unwrap_or_else(|e| panic!("{e} (or set FIRSTLINE_EMBEDDING__MODEL_DIR)"))
}

/// Loaded once: every test shares it, as threads share it in production.
fn model() -> &'static MiniLm {
    static MODEL: OnceLock<MiniLm> = OnceLock::new();
    MODEL.get_or_init(|| {
        let dir = model_dir();
        MiniLm::load(&dir).unwrap_or_else(|e| panic!("loading {}: {e}", dir.display()))
    })
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn ids(pieces: &[&str]) -> Vec<u32> {
    let tokenizer = model().tokenizer();
    pieces
        .iter()
        .map(|p| {
            tokenizer
                .id(p)
                .unwrap_or_else(|| panic!("{p:?} is not in vocab.txt"))
        })
        .collect()
}

#[test]
fn minilm_is_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<MiniLm>();
}

#[test]
fn minilm_load_errors_name_the_file() {
    let missing = Path::new(env!("CARGO_MANIFEST_DIR")).join("no-such-model");
    match MiniLm::load(&missing) {
        Err(EmbedError::Model { path, .. }) => assert!(path.ends_with("config.json"), "{path}"),
        other => panic!("expected a model error, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn minilm_matches_the_published_similarities() {
    // From the sentence-transformers README, for all-MiniLM-L6-v2.
    let sentences = [
        "The weather is lovely today.",
        "It's so sunny outside!",
        "He drove to the stadium.",
    ];
    let expected = [
        [1.0000, 0.6660, 0.1046],
        [0.6660, 1.0000, 0.1411],
        [0.1046, 0.1411, 1.0000],
    ];
    let vectors = model().embed_batch(&sentences);
    assert_eq!(vectors.len(), 3);
    for v in &vectors {
        assert_eq!(v.len(), 384);
        assert!((cosine(v, v) - 1.0).abs() < 1e-5, "not unit length");
    }
    let got: Vec<Vec<f32>> = vectors
        .iter()
        .map(|a| vectors.iter().map(|b| cosine(a, b)).collect())
        .collect();
    println!("similarities: {got:.5?}");
    for i in 0..3 {
        for j in 0..3 {
            let diff = (got[i][j] - expected[i][j]).abs();
            assert!(
                diff < 0.0005,
                "similarity[{i}][{j}] = {:.5}, expected {:.4}",
                got[i][j],
                expected[i][j]
            );
        }
    }
}

#[test]
fn minilm_tokenizer_splits_like_bert() {
    let tokenizer = model().tokenizer();
    assert_eq!(
        tokenizer.encode("PAYMENT_MODE unset"),
        ids(&["[CLS]", "payment", "_", "mode", "un", "##set", "[SEP]"])
    );
    // Accents stripped, then WordPiece: neither "creme" nor "brulee" is a whole word in vocab.txt.
    assert_eq!(
        tokenizer.encode("Crème brûlée"),
        ids(&["[CLS]", "cr", "##eme", "br", "##ule", "##e", "[SEP]"])
    );
    assert_eq!(tokenizer.encode(""), ids(&["[CLS]", "[SEP]"]));
    // vocab.txt line numbers, counted from 0.
    assert_eq!(
        ids(&["[PAD]", "[UNK]", "[CLS]", "[SEP]", "payment", "##set"]),
        [0, 100, 101, 102, 7909, 13462]
    );
}

#[test]
fn minilm_tokenizer_matches_hugging_face() {
    // Expected ids from HF tokenizers 0.23.3 with this model's tokenizer.json.
    let cases: [(&str, &[u32]); 4] = [
        (
            "payments-api pods CrashLoopBackOff: env var PAYMENT_MODE missing after v2.14 rollout (see #inc-4821)",
            &[
                101, 10504, 1011, 17928, 26723, 5823, 4135, 7361, 5963, 7245, 1024, 4372, 2615,
                13075, 7909, 1035, 5549, 4394, 2044, 1058, 2475, 1012, 2403, 4897, 5833, 1006,
                2156, 1001, 4297, 1011, 4466, 17465, 1007, 102,
            ],
        ),
        // Accents, Unicode punctuation, CJK, an emoji ([UNK]), a zero-width space (dropped), İ.
        (
            "naïve café — “quoted” … 東京タワー 🥰 x\u{200B}y İstanbul",
            &[
                101, 15743, 7668, 1517, 1523, 9339, 1524, 1529, 1879, 1755, 1709, 30262, 30265,
                100, 1060, 2100, 9960, 102,
            ],
        ),
        // A special token written in the text stays one; NUL, U+FFFD and NEL are dropped.
        (
            "a[SEP]b \u{0}\u{FFFD}\u{85}end",
            &[101, 1037, 102, 1038, 2203, 102],
        ),
        (
            "It's so sunny outside!",
            &[101, 2009, 1005, 1055, 2061, 11559, 2648, 999, 102],
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(model().tokenizer().encode(text), expected, "{text:?}");
    }
}

#[test]
fn minilm_truncates_to_256_pieces() {
    let text: Vec<String> = (0..1000).map(|i| format!("word{i}")).collect();
    let encoded = model().tokenizer().encode(&text.join(" "));
    assert_eq!(encoded.len(), 256);
    // Ends as HF's truncation does (HF tokenizers 0.23.3): the last pieces kept, then [SEP].
    assert_eq!(
        encoded[..8],
        [101, 2773, 2692, 2773, 2487, 2773, 2475, 2773]
    );
    assert_eq!(encoded[253..], [2581, 2773, 102]);
    // And the truncated text embeds like any other.
    let vector = &model().embed_batch(&[&text.join(" ")])[0];
    assert!((cosine(vector, vector) - 1.0).abs() < 1e-5);
}

#[test]
fn minilm_empty_text_is_cls_sep() {
    let vectors = model().embed_batch(&["", "something"]);
    assert_eq!(vectors.len(), 2);
    assert!(vectors[0].iter().all(|v| v.is_finite()));
    assert!((cosine(&vectors[0], &vectors[0]) - 1.0).abs() < 1e-5);
    assert!(model().embed_batch(&[]).is_empty());
}

#[test]
fn minilm_vector_does_not_depend_on_the_batch() {
    let text = "checkout API crash loop: PAYMENT_MODE unset";
    let long = "the payments service kept restarting because an environment variable disappeared "
        .repeat(20);
    let alone = &model().embed_batch(&[text])[0];
    let batch = model().embed_batch(&[&long, text, "short", &long]);
    let diff = alone
        .iter()
        .zip(&batch[1])
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f32::max);
    assert!(diff < 1e-5, "max abs diff {diff}");
}

#[test]
fn minilm_paraphrase_beats_unrelated() {
    let v = model().embed_batch(&[
        "payments pods kept restarting, env var missing after the 2.14 rollout",
        "checkout API crash loop: PAYMENT_MODE unset",
        "node disk filling up with debug logs",
    ]);
    let (paraphrase, unrelated) = (cosine(&v[0], &v[1]), cosine(&v[1], &v[2]));
    println!("paraphrase {paraphrase:.4}, unrelated {unrelated:.4}");
    assert!(
        paraphrase > unrelated + 0.1,
        "paraphrase {paraphrase}, unrelated {unrelated}"
    );
}

/// Prints sentences per second for incident-length sentences; not asserted, machines differ.
/// Run with `--release -- --nocapture`; debug builds embed fewer, as unoptimised code is slow.
#[test]
fn minilm_throughput() {
    let words = [
        "payments",
        "pods",
        "restarting",
        "after",
        "the",
        "rollout",
        "of",
        "version",
        "2.14",
        "because",
        "PAYMENT_MODE",
        "was",
        "unset",
        "in",
        "the",
        "checkout",
        "namespace",
        "and",
        "the",
        "readiness",
        "probe",
        "kept",
        "failing",
        "on",
        "node-7",
    ];
    let count = if cfg!(debug_assertions) { 8 } else { 256 };
    let sentences: Vec<String> = (0..count)
        .map(|i| {
            (0..25)
                .map(|j| words[(i * 7 + j * 3) % words.len()])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let texts: Vec<&str> = sentences.iter().map(String::as_str).collect();
    model().embed_batch(&texts[..1]);
    let start = Instant::now();
    let vectors = model().embed_batch(&texts);
    let elapsed = start.elapsed();
    assert_eq!(vectors.len(), count);
    let tokens: usize = texts
        .iter()
        .map(|t| model().tokenizer().encode(t).len())
        .sum();
    println!(
        "{count} sentences ({tokens} tokens) in {elapsed:.2?}: {:.0} sentences/s on one thread",
        count as f64 / elapsed.as_secs_f64()
    );
}
