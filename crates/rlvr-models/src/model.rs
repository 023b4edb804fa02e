//! The Qwen2 / Llama decoder, top down: MLP → attention → block → model → causal LM (rotary
//! embeddings are in `rope.rs`, parameter sources in `weights.rs`).
//!
//! Field names equal the Hugging Face tensor names (`model.layers.N.self_attn.q_proj.weight`),
//! so a checkpoint maps onto the module tree one to one (see `checkpoint.rs`). Linear weights are
//! stored in burn's `[in, out]` layout; the checkpoint code transposes HF's `[out, in]`.
//!
//! Reference: `transformers/models/qwen2/modeling_qwen2.py` and `models/llama/modeling_llama.py`.

use burn::module::{Module, Param};
use burn::nn::Embedding;
use burn::tensor::activation::silu;
use burn::tensor::module::attention;
use burn::tensor::ops::AttentionModuleOptions;
use burn::tensor::{Bool, Device, Int, Tensor};

use crate::config::ModelConfig;
use crate::error::Result;
use crate::kv_cache::KvCache;
use crate::projection::Projection;
use crate::rope::Rope;
use crate::weight_dtype::compute;
use crate::weights::{Init, RandomInit, WeightSource};

/// Where the tokens of one forward pass sit: shared positions `start..start+T`, or one
/// position per token (left-padded batches).
#[derive(Debug, Clone)]
pub(crate) enum Positions {
    /// Every row uses positions `start, start+1, ...`.
    Range(usize),
    /// Row-major `[B, T]` positions.
    PerToken(Vec<i64>),
}

/// Everything a forward pass needs besides the token ids.
pub(crate) struct ForwardArgs<'a> {
    /// Token positions (for RoPE).
    pub positions: Positions,
    /// `[B, 1, T_q, T_k]` mask, `true` = may not attend; `None` = plain causal attention.
    pub mask: Option<Tensor<4, Bool>>,
    /// KV cache to read from and append to.
    pub cache: Option<&'a mut KvCache>,
}

/// RMSNorm as in HF: `weight · x / sqrt(mean(x²) + eps)` over the last dim.
#[derive(Module, Debug)]
pub struct RmsNorm {
    /// Gain, `[hidden_size]`, initialised to ones.
    pub weight: Param<Tensor<1>>,
    /// ε added to the mean square (`rms_norm_eps`).
    pub eps: f64,
}

impl RmsNorm {
    fn load<W: WeightSource>(w: &mut W, name: &str, dim: usize, eps: f64) -> Result<Self> {
        Ok(Self {
            weight: Param::from_tensor(w.tensor(
                &format!("{name}.weight"),
                [dim],
                Init::Ones,
                false,
            )?),
            eps,
        })
    }

    /// Normalises `x: [.., hidden]`; same shape out.
    pub fn forward<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        let mean_square = x.clone().square().mean_dim(D - 1); // [.., 1]
        x * (mean_square + self.eps).sqrt().recip() * compute(self.weight.val()).unsqueeze::<D>()
    }
}

/// SwiGLU MLP: `down_proj(silu(gate_proj(x)) · up_proj(x))`.
#[derive(Module, Debug)]
pub struct Mlp {
    /// `[hidden, intermediate]`.
    pub gate_proj: Projection,
    /// `[hidden, intermediate]`.
    pub up_proj: Projection,
    /// `[intermediate, hidden]`.
    pub down_proj: Projection,
}

impl Mlp {
    fn load<W: WeightSource>(w: &mut W, name: &str, c: &ModelConfig) -> Result<Self> {
        let (d, f) = (c.hidden_size, c.intermediate_size);
        Ok(Self {
            gate_proj: Projection::load(w, &format!("{name}.gate_proj"), d, f, false)?,
            up_proj: Projection::load(w, &format!("{name}.up_proj"), d, f, false)?,
            down_proj: Projection::load(w, &format!("{name}.down_proj"), f, d, false)?,
        })
    }

    fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        self.down_proj
            .forward(silu(self.gate_proj.forward(x.clone())) * self.up_proj.forward(x))
    }
}

/// Grouped-query self-attention with RoPE and optional q/k/v (and o) bias.
#[derive(Module, Debug)]
pub struct Attention {
    /// `[hidden, heads · head_dim]`.
    pub q_proj: Projection,
    /// `[hidden, kv_heads · head_dim]`.
    pub k_proj: Projection,
    /// `[hidden, kv_heads · head_dim]`.
    pub v_proj: Projection,
    /// `[heads · head_dim, hidden]`.
    pub o_proj: Projection,
    /// Query heads H.
    pub num_heads: usize,
    /// Key/value heads (H is a multiple of it).
    pub num_kv_heads: usize,
    /// Per-head width.
    pub head_dim: usize,
}

impl Attention {
    fn load<W: WeightSource>(w: &mut W, name: &str, c: &ModelConfig) -> Result<Self> {
        let (d, h, kv, hd) = (
            c.hidden_size,
            c.num_attention_heads,
            c.num_kv_heads(),
            c.head_dim(),
        );
        Ok(Self {
            q_proj: Projection::load(w, &format!("{name}.q_proj"), d, h * hd, c.qkv_bias())?,
            k_proj: Projection::load(w, &format!("{name}.k_proj"), d, kv * hd, c.qkv_bias())?,
            v_proj: Projection::load(w, &format!("{name}.v_proj"), d, kv * hd, c.qkv_bias())?,
            o_proj: Projection::load(w, &format!("{name}.o_proj"), h * hd, d, c.o_bias())?,
            num_heads: h,
            num_kv_heads: kv,
            head_dim: hd,
        })
    }

    fn forward(
        &self,
        x: Tensor<3>,
        layer: usize,
        rope: &Rope,
        args: &mut ForwardArgs<'_>,
    ) -> Tensor<3> {
        let [b, t, _] = x.dims();
        let (h, kv, hd) = (self.num_heads, self.num_kv_heads, self.head_dim);
        let q = self
            .q_proj
            .forward(x.clone())
            .reshape([b, t, h, hd])
            .swap_dims(1, 2); // [B, H, T, hd]
        let k = self
            .k_proj
            .forward(x.clone())
            .reshape([b, t, kv, hd])
            .swap_dims(1, 2); // [B, KV, T, hd]
        let v = self
            .v_proj
            .forward(x)
            .reshape([b, t, kv, hd])
            .swap_dims(1, 2); // [B, KV, T, hd]
        let (q, k) = (rope.apply(q), rope.apply(k));
        let (k, v) = match args.cache.as_deref_mut() {
            Some(cache) => cache.append(layer, k, v), // [B, KV, T_k, hd]
            None => (k, v),
        };
        let t_k = k.dims()[2];
        let n_rep = h / kv;
        let out = if t == 1 && n_rep > 1 {
            // Decode step: the n_rep query heads of a group share one kv head (HF `repeat_kv`
            // maps query head i to kv head i / n_rep), so they become n_rep query rows of that
            // kv head instead of copying the cache n_rep times. All keys are in the past, so
            // no causal mask is needed.
            let q = q.reshape([b, kv, n_rep, hd]); // [B, KV, n_rep, hd]
            let mask = args.mask.clone().map(|m| m.expand([b, kv, n_rep, t_k]));
            let options = AttentionModuleOptions {
                scale: None,
                softcap: None,
                is_causal: false,
            };
            attention(q, k, v, mask, None, options).reshape([b, h, 1, hd]) // [B, H, 1, hd]
        } else {
            let (k, v) = (repeat_kv(k, n_rep), repeat_kv(v, n_rep)); // [B, H, T_k, hd]
            let mask = args.mask.clone().map(|m| m.expand([b, h, t, t_k])); // [B, H, T, T_k]
            let options = AttentionModuleOptions {
                scale: None,
                softcap: None,
                is_causal: mask.is_none(),
            };
            attention(q, k, v, mask, None, options) // [B, H, T, hd]
        };
        self.o_proj
            .forward(out.swap_dims(1, 2).reshape([b, t, h * hd])) // [B, T, hidden]
    }
}

/// `[B, KV, T, hd]` → `[B, KV · n_rep, T, hd]`, each kv head repeated for its query group
/// (HF `repeat_kv`).
fn repeat_kv(x: Tensor<4>, n_rep: usize) -> Tensor<4> {
    if n_rep == 1 {
        return x;
    }
    let [b, kv, t, hd] = x.dims();
    x.unsqueeze_dim::<5>(2)
        .expand([b, kv, n_rep, t, hd])
        .reshape([b, kv * n_rep, t, hd])
}

/// One pre-norm decoder block: `x + attn(norm(x))`, then `x + mlp(norm(x))`.
#[derive(Module, Debug)]
pub struct DecoderLayer {
    /// Self-attention.
    pub self_attn: Attention,
    /// SwiGLU MLP.
    pub mlp: Mlp,
    /// Norm before attention.
    pub input_layernorm: RmsNorm,
    /// Norm before the MLP.
    pub post_attention_layernorm: RmsNorm,
}

impl DecoderLayer {
    /// The block's seven projections under their HF module names relative to the block
    /// (`self_attn.q_proj`, ..., `mlp.down_proj`), in HF order.
    pub fn projections(&self) -> [(&'static str, &Projection); 7] {
        let (a, m) = (&self.self_attn, &self.mlp);
        [
            ("self_attn.q_proj", &a.q_proj),
            ("self_attn.k_proj", &a.k_proj),
            ("self_attn.v_proj", &a.v_proj),
            ("self_attn.o_proj", &a.o_proj),
            ("mlp.gate_proj", &m.gate_proj),
            ("mlp.up_proj", &m.up_proj),
            ("mlp.down_proj", &m.down_proj),
        ]
    }

    /// [`projections`](Self::projections), mutable.
    pub fn projections_mut(&mut self) -> [(&'static str, &mut Projection); 7] {
        let (a, m) = (&mut self.self_attn, &mut self.mlp);
        [
            ("self_attn.q_proj", &mut a.q_proj),
            ("self_attn.k_proj", &mut a.k_proj),
            ("self_attn.v_proj", &mut a.v_proj),
            ("self_attn.o_proj", &mut a.o_proj),
            ("mlp.gate_proj", &mut m.gate_proj),
            ("mlp.up_proj", &mut m.up_proj),
            ("mlp.down_proj", &mut m.down_proj),
        ]
    }

    fn load<W: WeightSource>(w: &mut W, i: usize, c: &ModelConfig) -> Result<Self> {
        let name = format!("model.layers.{i}");
        Ok(Self {
            self_attn: Attention::load(w, &format!("{name}.self_attn"), c)?,
            mlp: Mlp::load(w, &format!("{name}.mlp"), c)?,
            input_layernorm: RmsNorm::load(
                w,
                &format!("{name}.input_layernorm"),
                c.hidden_size,
                c.rms_norm_eps,
            )?,
            post_attention_layernorm: RmsNorm::load(
                w,
                &format!("{name}.post_attention_layernorm"),
                c.hidden_size,
                c.rms_norm_eps,
            )?,
        })
    }
}

/// The decoder stack without the LM head (HF `Qwen2Model` / `LlamaModel`).
#[derive(Module, Debug)]
pub struct DecoderModel {
    /// Token embedding `[vocab, hidden]`.
    pub embed_tokens: Embedding,
    /// Decoder blocks.
    pub layers: Vec<DecoderLayer>,
    /// Final norm.
    pub norm: RmsNorm,
    /// Per-head width (for RoPE).
    pub head_dim: usize,
    /// RoPE base θ.
    pub rope_theta: f64,
}

/// A decoder-only causal language model of the Qwen2 / Llama family (HF `*ForCausalLM`).
#[derive(Module, Debug)]
pub struct CausalLm {
    /// The decoder stack (HF prefix `model.`).
    pub model: DecoderModel,
    /// Output projection `[hidden, vocab]`; `None` when tied to `model.embed_tokens`.
    pub lm_head: Option<Projection>,
}

impl CausalLm {
    /// A randomly initialised model: N(0, 0.02) matrices and embeddings, unit norm gains, zero
    /// biases, drawn from the device RNG (seed it first with `device.seed(..)`).
    ///
    /// # Panics
    /// If `config` is invalid; [`CausalLm::try_new`] returns a typed error instead.
    pub fn new(config: &ModelConfig, device: &Device) -> Self {
        Self::try_new(config, device).unwrap_or_else(|e| panic!("CausalLm::new: {e}"))
    }

    /// [`CausalLm::new`] that returns an error for an invalid config instead of panicking.
    ///
    /// # Errors
    /// [`Error::UnknownArchitecture`](crate::Error::UnknownArchitecture) or
    /// [`Error::InvalidConfig`](crate::Error::InvalidConfig) naming the field.
    pub fn try_new(config: &ModelConfig, device: &Device) -> Result<Self> {
        config.validate()?;
        Self::load(config, &mut RandomInit(device.clone()))
    }

    /// Builds the model from a weight source, in HF tensor order.
    pub(crate) fn load<W: WeightSource>(c: &ModelConfig, w: &mut W) -> Result<Self> {
        let embed = w.tensor(
            "model.embed_tokens.weight",
            [c.vocab_size, c.hidden_size],
            Init::Normal,
            false,
        )?;
        let layers = (0..c.num_hidden_layers)
            .map(|i| DecoderLayer::load(w, i, c))
            .collect::<Result<Vec<_>>>()?;
        let norm = RmsNorm::load(w, "model.norm", c.hidden_size, c.rms_norm_eps)?;
        let lm_head = if c.tie_word_embeddings {
            None
        } else {
            Some(Projection::load(
                w,
                "lm_head",
                c.hidden_size,
                c.vocab_size,
                false,
            )?)
        };
        Ok(Self {
            model: DecoderModel {
                embed_tokens: Embedding {
                    weight: Param::from_tensor(embed),
                },
                layers,
                norm,
                head_dim: c.head_dim(),
                rope_theta: c.rope_theta(),
            },
            lm_head,
        })
    }

    /// Causal logits for a batch of token ids at positions `0..T`.
    ///
    /// # Shapes
    /// `input_ids: [B, T]` → `[B, T, vocab]`.
    pub fn forward(&self, input_ids: Tensor<2, Int>) -> Tensor<3> {
        self.logits(self.forward_hidden(input_ids))
    }

    /// Final-norm hidden states at positions `0..T` (causal), `[B, T]` → `[B, T, hidden]`.
    pub fn forward_hidden(&self, input_ids: Tensor<2, Int>) -> Tensor<3> {
        self.hidden(
            input_ids,
            ForwardArgs {
                positions: Positions::Range(0),
                mask: None,
                cache: None,
            },
        )
    }

    /// Projects hidden states to logits: `[B, T, hidden]` → `[B, T, vocab]` (tied: `h · Eᵀ`).
    pub fn logits(&self, hidden: Tensor<3>) -> Tensor<3> {
        match &self.lm_head {
            Some(head) => head.forward(hidden),
            // One 2-D product against the transposed view: burn's `linear` would reshape the
            // non-contiguous `Eᵀ` to rank 3, which copies the whole `[V, hidden]` matrix on
            // every call (113 MB per decode step for SmolLM2).
            None => {
                let [b, t, h] = hidden.dims();
                let embed = compute(self.model.embed_tokens.weight.val());
                let vocab = embed.dims()[0];
                hidden
                    .reshape([b * t, h])
                    .matmul(embed.transpose())
                    .reshape([b, t, vocab])
            }
        }
    }

    /// The general forward pass: positions, optional mask and KV cache. `[B, T]` → `[B, T, hidden]`.
    pub(crate) fn hidden(&self, input_ids: Tensor<2, Int>, mut args: ForwardArgs<'_>) -> Tensor<3> {
        let [b, t] = input_ids.dims();
        let m = &self.model;
        let device = input_ids.device();
        let rope = match &args.positions {
            Positions::Range(start) => {
                let pos: Vec<i64> = (*start as i64..(start + t) as i64).collect();
                Rope::new(&pos, 1, t, m.head_dim, m.rope_theta, &device)
            }
            Positions::PerToken(pos) => {
                assert_eq!(
                    pos.len(),
                    b * t,
                    "PerToken positions must have B·T = {} entries",
                    b * t
                );
                Rope::new(pos, b, t, m.head_dim, m.rope_theta, &device)
            }
        };
        let mut x = compute(m.embed_tokens.forward(input_ids)); // [B, T, hidden]
        for (i, layer) in m.layers.iter().enumerate() {
            let a = layer.self_attn.forward(
                layer.input_layernorm.forward(x.clone()),
                i,
                &rope,
                &mut args,
            );
            x = x + a;
            x = x.clone() + layer.mlp.forward(layer.post_attention_layernorm.forward(x));
        }
        m.norm.forward(x)
    }

    /// Number of decoder blocks.
    pub fn num_layers(&self) -> usize {
        self.model.layers.len()
    }

    /// Vocabulary size (rows of the embedding).
    pub fn vocab_size(&self) -> usize {
        self.model.embed_tokens.weight.shape().dims::<2>()[0]
    }

    /// The device the parameters live on.
    pub fn device(&self) -> Device {
        self.model.embed_tokens.weight.val().device()
    }

    /// Number of distinct parameters (a tied head is counted once).
    pub fn num_params(&self) -> usize {
        Module::num_params(self)
    }

    /// Training FLOPs per token (forward + backward) for sequences of `seq_len` tokens, as in
    /// Kaplan et al. 2020 / PaLM appendix B: `6 · N_matmul + 12 · L · H · head_dim · seq_len`,
    /// where `N_matmul` counts every weight used in a matrix multiply (all projections and the
    /// LM head, tied or not) but not the embedding lookup, norms or biases.
    pub fn flops_per_token(&self, seq_len: usize) -> f64 {
        let [vocab, hidden] = self.model.embed_tokens.weight.shape().dims::<2>();
        let mut matmul = vocab * hidden;
        let mut attn = 0;
        for layer in &self.model.layers {
            for (_, l) in layer.projections() {
                matmul += l.weight.shape().num_elements();
            }
            let a = &layer.self_attn;
            attn += a.num_heads * a.head_dim;
        }
        6.0 * matmul as f64 + 12.0 * attn as f64 * seq_len as f64
    }
}
