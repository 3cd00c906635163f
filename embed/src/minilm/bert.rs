//! The BERT encoder: token ids → one contextual vector per token.
//!
//! A plain transcription of Hugging Face's `BertModel` forward pass for inference (no dropout),
//! on `f32` buffers with every matrix product done by `matrixmultiply::sgemm`:
//!
//! ```text
//! x = LayerNorm(word[id] + position[i] + token_type[0])
//! per layer:
//!     q, k, v = x·Wqᵀ + bq, x·Wkᵀ + bk, x·Wvᵀ + bv        (one fused product)
//!     per head: ctx = softmax(q·kᵀ / √head_dim) · v
//!     x = LayerNorm(ctx·Woᵀ + bo + x)
//!     x = LayerNorm(GELU(x·Wiᵀ + bi)·Wdᵀ + bd + x)
//! ```
//!
//! Sequences of different lengths are not padded: the dense layers run over the tokens of all
//! sequences stacked together, and attention runs per sequence over its own tokens only. That is
//! exactly what HF computes with a padded batch and an attention mask (masked keys get weight 0),
//! without spending time on padding, and it makes a text's vector independent of its batch.
//!
//! Pooling and normalisation are sentence-transformers' business and live in `minilm/mod.rs`.

use safetensors::{Dtype, SafeTensors};
use serde_json::Value;

/// The sizes read from the model's `config.json`.
#[derive(Debug, Clone)]
pub struct Config {
    pub vocab_size: usize,
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    pub intermediate: usize,
    pub max_positions: usize,
    pub type_vocab_size: usize,
    pub layer_norm_eps: f32,
}

impl Config {
    /// Parses `config.json`, refusing what this encoder does not implement.
    pub fn parse(json: &str) -> Result<Config, String> {
        let v: Value = serde_json::from_str(json).map_err(|e| format!("not JSON: {e}"))?;
        let size = |key: &str| -> Result<usize, String> {
            v.get(key)
                .and_then(Value::as_u64)
                .and_then(|n| usize::try_from(n).ok())
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("`{key}` is missing or not a positive integer"))
        };
        let text = |key: &str| v.get(key).and_then(Value::as_str);
        if text("hidden_act") != Some("gelu") {
            return Err(format!(
                "hidden_act {:?} is not supported (only \"gelu\")",
                text("hidden_act")
            ));
        }
        if let Some(kind) = text("position_embedding_type").filter(|&k| k != "absolute") {
            return Err(format!(
                "position_embedding_type {kind:?} is not supported (only \"absolute\")"
            ));
        }
        let config = Config {
            vocab_size: size("vocab_size")?,
            hidden: size("hidden_size")?,
            layers: size("num_hidden_layers")?,
            heads: size("num_attention_heads")?,
            intermediate: size("intermediate_size")?,
            max_positions: size("max_position_embeddings")?,
            type_vocab_size: size("type_vocab_size")?,
            layer_norm_eps: v
                .get("layer_norm_eps")
                .and_then(Value::as_f64)
                .ok_or("`layer_norm_eps` is missing or not a number")?
                as f32,
        };
        if !config.hidden.is_multiple_of(config.heads) {
            return Err(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                config.hidden, config.heads
            ));
        }
        Ok(config)
    }
}

/// The encoder's weights.
#[derive(Debug)]
pub struct Bert {
    config: Config,
    /// `[vocab_size, hidden]`.
    word: Vec<f32>,
    /// `[max_positions, hidden]`.
    position: Vec<f32>,
    /// Row 0 of the token type embeddings: every token is in segment A.
    token_type: Vec<f32>,
    embeddings_norm: LayerNorm,
    layers: Vec<Layer>,
}

#[derive(Debug)]
struct Layer {
    /// Query, key and value stacked into one `[3·hidden, hidden]` matrix, so one product yields
    /// all three, side by side in each row.
    qkv: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

/// `y = x·Wᵀ + b`, with `W` kept in PyTorch's `[out, in]` layout.
#[derive(Debug)]
struct Linear {
    weight: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

#[derive(Debug)]
struct LayerNorm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
    eps: f32,
}

impl Bert {
    /// Takes the weights out of a `model.safetensors` (names with or without a `bert.` prefix).
    pub fn from_safetensors(config: Config, bytes: &[u8]) -> Result<Bert, String> {
        let st =
            SafeTensors::deserialize(bytes).map_err(|e| format!("not a safetensors file: {e}"))?;
        let (h, i) = (config.hidden, config.intermediate);
        let eps = config.layer_norm_eps;
        let get = |name: &str, shape: &[usize]| tensor(&st, name, shape);
        let norm = |prefix: &str| -> Result<LayerNorm, String> {
            Ok(LayerNorm {
                gamma: get(&format!("{prefix}.weight"), &[h])?,
                beta: get(&format!("{prefix}.bias"), &[h])?,
                eps,
            })
        };
        let linear = |prefix: &str, inputs: usize, outputs: usize| -> Result<Linear, String> {
            Ok(Linear {
                weight: get(&format!("{prefix}.weight"), &[outputs, inputs])?,
                bias: get(&format!("{prefix}.bias"), &[outputs])?,
                inputs,
                outputs,
            })
        };

        let mut token_type = get(
            "embeddings.token_type_embeddings.weight",
            &[config.type_vocab_size, h],
        )?;
        token_type.truncate(h);
        let mut layers = Vec::with_capacity(config.layers);
        for l in 0..config.layers {
            let p = format!("encoder.layer.{l}");
            let (q, k, v) = (
                linear(&format!("{p}.attention.self.query"), h, h)?,
                linear(&format!("{p}.attention.self.key"), h, h)?,
                linear(&format!("{p}.attention.self.value"), h, h)?,
            );
            let qkv = Linear {
                weight: [q.weight, k.weight, v.weight].concat(),
                bias: [q.bias, k.bias, v.bias].concat(),
                inputs: h,
                outputs: 3 * h,
            };
            layers.push(Layer {
                qkv,
                attention_out: linear(&format!("{p}.attention.output.dense"), h, h)?,
                attention_norm: norm(&format!("{p}.attention.output.LayerNorm"))?,
                intermediate: linear(&format!("{p}.intermediate.dense"), h, i)?,
                output: linear(&format!("{p}.output.dense"), i, h)?,
                output_norm: norm(&format!("{p}.output.LayerNorm"))?,
            });
        }
        Ok(Bert {
            word: get("embeddings.word_embeddings.weight", &[config.vocab_size, h])?,
            position: get(
                "embeddings.position_embeddings.weight",
                &[config.max_positions, h],
            )?,
            token_type,
            embeddings_norm: norm("embeddings.LayerNorm")?,
            layers,
            config,
        })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The last layer's vectors for every token of every sequence, stacked in order:
    /// `[Σ len, hidden]`.
    ///
    /// # Panics
    /// If a sequence is longer than `max_position_embeddings` or holds an id outside the
    /// vocabulary; the tokenizer is checked against both at load.
    pub fn forward(&self, sequences: &[&[u32]]) -> Vec<f32> {
        let h = self.config.hidden;
        let tokens: usize = sequences.iter().map(|s| s.len()).sum();
        let longest = sequences.iter().map(|s| s.len()).max().unwrap_or(0);

        let mut x = Vec::with_capacity(tokens * h);
        for seq in sequences {
            for (position, &id) in seq.iter().enumerate() {
                let word = row(&self.word, id as usize, h);
                let position = row(&self.position, position, h);
                x.extend((0..h).map(|j| word[j] + position[j] + self.token_type[j]));
            }
        }
        self.embeddings_norm.apply(&mut x);

        let mut qkv = vec![0.0; tokens * 3 * h];
        let mut context = vec![0.0; tokens * h];
        let mut attended = vec![0.0; tokens * h];
        let mut intermediate = vec![0.0; tokens * self.config.intermediate];
        let mut scores = vec![0.0; longest * longest];
        for layer in &self.layers {
            layer.qkv.apply(&x, &mut qkv, None);
            self.attention(sequences, &qkv, &mut context, &mut scores);
            layer.attention_out.apply(&context, &mut attended, Some(&x));
            layer.attention_norm.apply(&mut attended);

            layer.intermediate.apply(&attended, &mut intermediate, None);
            intermediate.iter_mut().for_each(|v| *v = gelu(*v));
            layer.output.apply(&intermediate, &mut x, Some(&attended));
            layer.output_norm.apply(&mut x);
        }
        x
    }

    /// Multi-head self-attention of each sequence over its own tokens, from the fused
    /// `[q | k | v]` rows into `context`.
    fn attention(
        &self,
        sequences: &[&[u32]],
        qkv: &[f32],
        context: &mut [f32],
        scores: &mut [f32],
    ) {
        let h = self.config.hidden;
        let d = h / self.config.heads;
        let scale = 1.0 / (d as f32).sqrt();
        let mut first = 0;
        for seq in sequences {
            let n = seq.len();
            let scores = &mut scores[..n * n];
            let rows = &qkv[first * 3 * h..(first + n) * 3 * h];
            for head in 0..self.config.heads {
                let (q, k, v) = (
                    &rows[head * d..],
                    &rows[h + head * d..],
                    &rows[2 * h + head * d..],
                );
                // scores = q·kᵀ / √d: kᵀ is k read with its strides swapped.
                gemm(
                    n,
                    d,
                    n,
                    scale,
                    (q, 3 * h, 1),
                    (k, 1, 3 * h),
                    0.0,
                    (scores, n, 1),
                );
                scores.chunks_exact_mut(n).for_each(softmax);
                let out = &mut context[first * h + head * d..];
                gemm(
                    n,
                    n,
                    d,
                    1.0,
                    (scores, n, 1),
                    (v, 3 * h, 1),
                    0.0,
                    (out, h, 1),
                );
            }
            first += n;
        }
    }
}

impl Linear {
    /// `output = input·Wᵀ + b (+ residual)`, over as many rows as `input` holds.
    fn apply(&self, input: &[f32], output: &mut [f32], residual: Option<&[f32]>) {
        let rows = input.len() / self.inputs;
        let output = &mut output[..rows * self.outputs];
        // Seed the output with the bias (and residual) so sgemm adds the product to it (β = 1).
        for (r, out) in output.chunks_exact_mut(self.outputs).enumerate() {
            out.copy_from_slice(&self.bias);
            if let Some(residual) = residual {
                let res = row(residual, r, self.outputs);
                out.iter_mut().zip(res).for_each(|(o, x)| *o += x);
            }
        }
        // Wᵀ is W ([out, in], row-major) read column-major: no transposed copy.
        let w = (&self.weight[..], 1, self.inputs);
        gemm(
            rows,
            self.inputs,
            self.outputs,
            1.0,
            (input, self.inputs, 1),
            w,
            1.0,
            (output, self.outputs, 1),
        );
    }
}

impl LayerNorm {
    /// Normalises each row in place: `(x − mean) / √(var + eps) · γ + β`, with the biased
    /// variance, as `torch.nn.LayerNorm`.
    fn apply(&self, x: &mut [f32]) {
        let width = self.gamma.len() as f32;
        for row in x.chunks_exact_mut(self.gamma.len()) {
            let mean = row.iter().sum::<f32>() / width;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / width;
            let inv = 1.0 / (var + self.eps).sqrt();
            for ((v, g), b) in row.iter_mut().zip(&self.gamma).zip(&self.beta) {
                *v = (*v - mean) * inv * g + b;
            }
        }
    }
}

fn row(matrix: &[f32], index: usize, width: usize) -> &[f32] {
    &matrix[index * width..(index + 1) * width]
}

fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in row.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    let inv = 1.0 / sum;
    row.iter_mut().for_each(|v| *v *= inv);
}

/// BERT's `gelu`: the exact form `x·Φ(x) = x/2·(1 + erf(x/√2))`, not the tanh approximation
/// (the two differ by up to ~1e-3, enough to move similarities in the third decimal).
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// `erf` for `f32`: the rational approximation Eigen and XLA use, `x·P(x²)/Q(x²)` on [−4, 4]
/// (beyond which erf is ±1 in `f32`). Absolute error below 1e-7 — that of `f32` rounding —
/// with no `exp` and no branches, so the GELU loop vectorises. (Not `mul_add`: without FMA
/// enabled at compile time that is a call to `fmaf` per step.)
fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let p = -2.726_142_3e-10_f32;
    let p = p * x2 + 2.770_681_4e-8;
    let p = p * x2 - 2.101_024e-6;
    let p = p * x2 - 5.692_506_4e-5;
    let p = p * x2 - 7.349_906_3e-4;
    let p = p * x2 - 2.954_6e-3;
    let p = p * x2 - 1.609_603_3e-2;
    let q = -1.456_607_2e-5_f32;
    let q = q * x2 - 2.133_740_6e-4;
    let q = q * x2 - 1.682_827e-3;
    let q = q * x2 - 7.373_329e-3;
    let q = q * x2 - 1.426_474e-2;
    x * p / q
}

/// A matrix in a slice: the data from its first element, its row stride and its column stride.
type Strided<'a> = (&'a [f32], usize, usize);

/// `c = α·a·b + β·c` with `a` m×k, `b` k×n, `c` m×n; a bounds-checked front for `sgemm`.
#[allow(clippy::too_many_arguments)]
fn gemm(
    m: usize,
    k: usize,
    n: usize,
    alpha: f32,
    (a, rsa, csa): Strided,
    (b, rsb, csb): Strided,
    beta: f32,
    (c, rsc, csc): (&mut [f32], usize, usize),
) {
    if m == 0 || n == 0 {
        return;
    }
    // The last element each operand is read or written at must lie inside its slice.
    let last = |rows: usize, cols: usize, rs: usize, cs: usize| (rows - 1) * rs + (cols - 1) * cs;
    assert!(
        k == 0 || last(m, k, rsa, csa) < a.len(),
        "gemm: a out of bounds"
    );
    assert!(
        k == 0 || last(k, n, rsb, csb) < b.len(),
        "gemm: b out of bounds"
    );
    assert!(last(m, n, rsc, csc) < c.len(), "gemm: c out of bounds");
    assert!(csc >= 1 && rsc >= n * csc, "gemm: c's elements overlap");
    let stride = |s: usize| isize::try_from(s).expect("stride fits isize");
    // SAFETY: the asserts above keep every element sgemm touches inside the slices, `c` is
    // borrowed mutably so it aliases neither `a` nor `b`, and its strides map distinct (row, column)
    // pairs to distinct elements.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            alpha,
            a.as_ptr(),
            stride(rsa),
            stride(csa),
            b.as_ptr(),
            stride(rsb),
            stride(csb),
            beta,
            c.as_mut_ptr(),
            stride(rsc),
            stride(csc),
        );
    }
}

/// One `f32` tensor of the expected shape, looked up as `name` or `bert.name`.
fn tensor(st: &SafeTensors, name: &str, shape: &[usize]) -> Result<Vec<f32>, String> {
    let view = st
        .tensor(name)
        .or_else(|_| st.tensor(&format!("bert.{name}")))
        .map_err(|_| format!("tensor {name} is missing"))?;
    if view.shape() != shape {
        return Err(format!(
            "tensor {name} has shape {:?}, expected {shape:?}",
            view.shape()
        ));
    }
    if view.dtype() != Dtype::F32 {
        return Err(format!(
            "tensor {name} is {:?}; only F32 weights are supported",
            view.dtype()
        ));
    }
    Ok(view
        .data()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_reference_values() {
        // From Python's math.erf.
        let cases = [
            (0.0, 0.0),
            (0.1, 0.112_462_916_018_284_9),
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (-1.5, -0.966_105_146_475_310_7),
            (2.5, 0.999_593_047_982_555),
            (3.5, 0.999_999_256_901_627_7),
            (10.0, 1.0),
        ];
        for (x, want) in cases {
            let got = erf(x as f32) as f64;
            assert!((got - want).abs() < 3e-7, "erf({x}) = {got}, want {want}");
        }
    }

    #[test]
    fn gemm_transposed_operand() {
        // a = [[1, 2], [3, 4]]; b = aᵀ read through swapped strides; a·aᵀ = [[5, 11], [11, 25]].
        let a = [1.0, 2.0, 3.0, 4.0];
        let mut c = [0.0; 4];
        gemm(2, 2, 2, 1.0, (&a, 2, 1), (&a, 1, 2), 0.0, (&mut c, 2, 1));
        assert_eq!(c, [5.0, 11.0, 11.0, 25.0]);
    }

    #[test]
    fn softmax_sums_to_one() {
        let mut r = [1.0, 2.0, 3.0];
        softmax(&mut r);
        assert!((r.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(r[2] > r[1] && r[1] > r[0]);
    }
}
