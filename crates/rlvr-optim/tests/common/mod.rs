//! Shared test fixtures: a tiny decoder with HF parameter names, a symmetric Jacobi eigensolver
//! (for singular values computed independently of burn), and tensor helpers.
#![allow(dead_code)]

use burn::module::{Module, ModuleVisitor, Param};
use burn::nn::{Embedding, EmbeddingConfig, Linear, LinearConfig, RmsNorm, RmsNormConfig};
use burn::tensor::activation::silu;
use burn::tensor::{Device, Int, Tensor, TensorData};

/// Model sizes: d_model 16, 4 query heads and 2 key/value heads of width 4, MLP 32, vocab 20.
pub const D_MODEL: usize = 16;
pub const HEADS: usize = 4;
pub const KV_HEADS: usize = 2;
pub const HEAD_DIM: usize = 4;
pub const D_FF: usize = 32;
pub const VOCAB: usize = 20;

#[derive(Module, Debug)]
pub struct SelfAttn {
    pub q_proj: Linear,
    pub k_proj: Linear,
    pub v_proj: Linear,
    pub o_proj: Linear,
}

#[derive(Module, Debug)]
pub struct Mlp {
    pub gate_proj: Linear,
    pub up_proj: Linear,
    pub down_proj: Linear,
}

#[derive(Module, Debug)]
pub struct Layer {
    pub self_attn: SelfAttn,
    pub mlp: Mlp,
    pub input_layernorm: RmsNorm,
    pub post_attention_layernorm: RmsNorm,
}

/// A stand-in for the policy model: the parameter paths of a Qwen2 decoder
/// (`layers.0.self_attn.q_proj.weight`, q/k/v biases, norm gammas, `embed_tokens`, `lm_head`).
/// Its forward is not attention, only a cheap function of every parameter.
#[derive(Module, Debug)]
pub struct TinyDecoder {
    pub embed_tokens: Embedding,
    pub layers: Vec<Layer>,
    pub norm: RmsNorm,
    pub lm_head: Linear,
}

fn linear(d_in: usize, d_out: usize, bias: bool, device: &Device) -> Linear {
    LinearConfig::new(d_in, d_out).with_bias(bias).init(device)
}

impl TinyDecoder {
    pub fn new(layers: usize, device: &Device) -> Self {
        let kv = KV_HEADS * HEAD_DIM;
        let layer = || Layer {
            self_attn: SelfAttn {
                q_proj: linear(D_MODEL, HEADS * HEAD_DIM, true, device),
                k_proj: linear(D_MODEL, kv, true, device),
                v_proj: linear(D_MODEL, kv, true, device),
                o_proj: linear(HEADS * HEAD_DIM, D_MODEL, false, device),
            },
            mlp: Mlp {
                gate_proj: linear(D_MODEL, D_FF, false, device),
                up_proj: linear(D_MODEL, D_FF, false, device),
                down_proj: linear(D_FF, D_MODEL, false, device),
            },
            input_layernorm: RmsNormConfig::new(D_MODEL).init(device),
            post_attention_layernorm: RmsNormConfig::new(D_MODEL).init(device),
        };
        Self {
            embed_tokens: EmbeddingConfig::new(VOCAB, D_MODEL).init(device),
            layers: (0..layers).map(|_| layer()).collect(),
            norm: RmsNormConfig::new(D_MODEL).init(device),
            lm_head: linear(D_MODEL, VOCAB, false, device),
        }
    }

    /// `[batch, seq]` token ids → `[batch, seq, vocab]` logits.
    pub fn forward(&self, tokens: Tensor<2, Int>) -> Tensor<3> {
        let mut h = self.embed_tokens.forward(tokens);
        for layer in &self.layers {
            let n = layer.input_layernorm.forward(h.clone());
            let q = layer.self_attn.q_proj.forward(n.clone());
            let k = layer.self_attn.k_proj.forward(n.clone());
            let v = layer.self_attn.v_proj.forward(n);
            // Repeat the key/value heads to the query width: [b, t, 8] → [b, t, 16].
            let k = Tensor::cat(vec![k.clone(), k], 2);
            let v = Tensor::cat(vec![v.clone(), v], 2);
            let mixed = q * burn::tensor::activation::sigmoid(k) + v;
            h = h + layer.self_attn.o_proj.forward(mixed);
            let m = layer.post_attention_layernorm.forward(h.clone());
            let ff = silu(layer.mlp.gate_proj.forward(m.clone())) * layer.mlp.up_proj.forward(m);
            h = h + layer.mlp.down_proj.forward(ff);
        }
        self.lm_head.forward(self.norm.forward(h))
    }

    /// A scalar loss: mean squared distance of the logits to `target`.
    pub fn loss(&self, tokens: Tensor<2, Int>, target: Tensor<3>) -> Tensor<1> {
        (self.forward(tokens) - target).square().mean()
    }
}

/// Deterministic token ids `[batch, seq]` from a seed.
pub fn tokens(batch: usize, seq: usize, seed: usize, device: &Device) -> Tensor<2, Int> {
    let ids: Vec<i64> = (0..batch * seq)
        .map(|i| ((i * 7 + seed * 13 + 3) % VOCAB) as i64)
        .collect();
    Tensor::from_data(TensorData::new(ids, [batch, seq]), device)
}

/// A 2-D tensor from row-major `f32` values.
pub fn matrix(values: Vec<f32>, dims: [usize; 2], device: &Device) -> Tensor<2> {
    Tensor::from_data(TensorData::new(values, dims), device)
}

/// The values of a tensor, row-major.
pub fn values<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data()
        .convert::<f32>()
        .try_into_vec::<f32>()
        .unwrap()
}

/// Every float parameter of a module as `(path, values)`, in module order.
pub fn parameters<M: Module>(module: &M) -> Vec<(String, Vec<f32>)> {
    #[derive(Default)]
    struct Collect {
        stack: Vec<String>,
        out: Vec<(String, Vec<f32>)>,
    }
    impl ModuleVisitor for Collect {
        fn enter_module(&mut self, name: &str, _: &str) {
            self.stack.push(name.to_string());
        }
        fn exit_module(&mut self, _: &str, _: &str) {
            self.stack.pop();
        }
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            self.out.push((self.stack.join("."), values(param.val())));
        }
    }
    let mut c = Collect::default();
    module.visit(&mut c);
    c.out
}

/// Eigenvalues of a symmetric `n × n` matrix (row-major, f64) by the cyclic Jacobi method,
/// sorted descending. Independent of burn: plain loops over `f64`.
pub fn symmetric_eigenvalues(mut a: Vec<f64>, n: usize) -> Vec<f64> {
    for _sweep in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i * n + j] * a[i * n + j])
            .sum();
        if off < 1e-24 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = a[p * n + q];
                if apq.abs() < 1e-300 {
                    continue;
                }
                let theta = (a[q * n + q] - a[p * n + p]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let akp = a[k * n + p];
                    let akq = a[k * n + q];
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for k in 0..n {
                    let apk = a[p * n + k];
                    let aqk = a[q * n + k];
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
            }
        }
    }
    let mut eig: Vec<f64> = (0..n).map(|i| a[i * n + i]).collect();
    eig.sort_by(|x, y| y.partial_cmp(x).unwrap());
    eig
}

/// Singular values (descending) of a row-major `rows × cols` matrix, from the eigenvalues of
/// the smaller Gram matrix.
pub fn singular_values(m: &[f32], rows: usize, cols: usize) -> Vec<f64> {
    let m: Vec<f64> = m.iter().map(|&x| f64::from(x)).collect();
    let n = rows.min(cols);
    let mut gram = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            gram[i * n + j] = if rows <= cols {
                (0..cols).map(|k| m[i * cols + k] * m[j * cols + k]).sum()
            } else {
                (0..rows).map(|k| m[k * cols + i] * m[k * cols + j]).sum()
            };
        }
    }
    symmetric_eigenvalues(gram, n)
        .into_iter()
        .map(|e| e.max(0.0).sqrt())
        .collect()
}

pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}
