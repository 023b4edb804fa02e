//! llama.cpp tensor names → Hugging Face names, and the query/key row permutation llama.cpp
//! applies to Llama checkpoints (and its inverse).
//!
//! llama.cpp's converter (`convert_hf_to_gguf.py`, `LlamaModel.permute`) reorders the rows of
//! `q_proj` (with `n_head`) and `k_proj` (with `n_head_kv`) so that its RoPE kernel can rotate
//! adjacent pairs `(2i, 2i+1)` instead of HF's halves `(i, i + d/2)`:
//! `w.reshape(n_head, 2, d/2, ...).swapaxes(1, 2).reshape(w.shape)`. Within head `h`, GGUF row
//! `h·d + 2i + j` is therefore HF row `h·d + j·d/2 + i` (`j ∈ {0, 1}`, `i < d/2`).
//! Qwen2 checkpoints are converted without this permutation.

/// The HF name of llama.cpp tensor `name` (`blk.3.attn_q.weight` →
/// `model.layers.3.self_attn.q_proj.weight`), or `None` for a tensor without a counterpart.
pub fn hf_tensor_name(name: &str) -> Option<String> {
    let fixed = match name {
        "token_embd.weight" => Some("model.embed_tokens.weight"),
        "output_norm.weight" => Some("model.norm.weight"),
        "output.weight" => Some("lm_head.weight"),
        _ => None,
    };
    if let Some(f) = fixed {
        return Some(f.to_owned());
    }
    let rest = name.strip_prefix("blk.")?;
    let (layer, rest) = rest.split_once('.')?;
    let layer: usize = layer.parse().ok()?;
    let (module, kind) = rest.rsplit_once('.')?;
    if kind != "weight" && kind != "bias" {
        return None;
    }
    let hf = match module {
        "attn_norm" => "input_layernorm",
        "ffn_norm" => "post_attention_layernorm",
        "attn_q" => "self_attn.q_proj",
        "attn_k" => "self_attn.k_proj",
        "attn_v" => "self_attn.v_proj",
        "attn_output" => "self_attn.o_proj",
        "ffn_gate" => "mlp.gate_proj",
        "ffn_up" => "mlp.up_proj",
        "ffn_down" => "mlp.down_proj",
        _ => return None,
    };
    Some(format!("model.layers.{layer}.{hf}.{kind}"))
}

/// Maps row indices of a `[rows, cols]` q/k projection with `n_head` heads; `to_hf` selects the
/// direction. Returns `None` unless `rows` is a multiple of `2 · n_head`.
fn permute_rows(data: &[f32], rows: usize, n_head: usize, to_hf: bool) -> Option<Vec<f32>> {
    if n_head == 0
        || rows == 0
        || !rows.is_multiple_of(2 * n_head)
        || !data.len().is_multiple_of(rows)
    {
        return None;
    }
    let cols = data.len() / rows;
    let d = rows / n_head;
    let half = d / 2;
    let mut out = vec![0.0; data.len()];
    for h in 0..n_head {
        for i in 0..half {
            for j in 0..2 {
                let gguf_row = h * d + 2 * i + j;
                let hf_row = h * d + j * half + i;
                let (src, dst) = if to_hf {
                    (gguf_row, hf_row)
                } else {
                    (hf_row, gguf_row)
                };
                out[dst * cols..(dst + 1) * cols]
                    .copy_from_slice(&data[src * cols..(src + 1) * cols]);
            }
        }
    }
    Some(out)
}

/// Undoes llama.cpp's q/k permutation: `data` is a row-major `[rows, cols]` weight (or a
/// `[rows]` bias, `cols = 1`) as stored in GGUF; the result is in HF's `rotate_half` layout.
/// `n_head` is `n_head` for `q_proj` and `n_head_kv` for `k_proj`. `None` unless `rows` is a
/// multiple of `2 · n_head` and `data.len()` of `rows`.
pub fn unpermute_qk_rows(data: &[f32], rows: usize, n_head: usize) -> Option<Vec<f32>> {
    permute_rows(data, rows, n_head, true)
}

/// llama.cpp's q/k permutation (HF layout → GGUF layout), the inverse of [`unpermute_qk_rows`].
pub fn permute_qk_rows(data: &[f32], rows: usize, n_head: usize) -> Option<Vec<f32>> {
    permute_rows(data, rows, n_head, false)
}
