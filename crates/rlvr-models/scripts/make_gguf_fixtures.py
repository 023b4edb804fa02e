"""Makes the GGUF test fixtures in tests/fixtures/gguf/ with the `gguf` package (llama.cpp's
gguf-py, an implementation independent of ours).

- blocks.json: two random blocks of each supported ggml type (F16, BF16, Q8_0, Q4_0, Q4_1,
  Q4_K, Q6_K) as hex bytes, and their values as dequantized by `gguf.quants.dequantize`.
- tiny-llama.gguf / tiny-qwen2.gguf: the tiny parity checkpoints of tests/fixtures/tiny-*
  (weights in F32) written by `gguf.GGUFWriter` the way llama.cpp's `convert_hf_to_gguf.py`
  writes them: llama.cpp tensor names, and for Llama the q/k rows permuted with llama.cpp's
  `permute` (copied below), with the byte-level BPE vocabulary of tests/fixtures/tokenizer.
  Importing them must give back the HF tensors exactly, hence the recorded parity logits.

    python crates/rlvr-models/scripts/make_gguf_fixtures.py   (gguf 0.19.0, numpy 2.4.6)
"""
import json
from pathlib import Path

import gguf
import numpy as np
from gguf import GGMLQuantizationType as Q
from safetensors.numpy import load_file

HERE = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
OUT = HERE / "gguf"
OUT.mkdir(exist_ok=True)
rng = np.random.default_rng(7)

# ---- blocks ----
# (type, bytes per block, byte offsets of f16 scale fields to make finite)
LAYOUT = {
    "Q8_0": (Q.Q8_0, 34, [0]),
    "Q4_0": (Q.Q4_0, 18, [0]),
    "Q4_1": (Q.Q4_1, 20, [0, 2]),
    "Q4_K": (Q.Q4_K, 144, [0, 2]),
    "Q6_K": (Q.Q6_K, 210, [208]),
}
blocks = {}
for name, (qt, size, f16s) in LAYOUT.items():
    raw = rng.integers(0, 256, size=(2, size), dtype=np.uint8)
    for b in range(2):
        for off in f16s:
            raw[b, off:off + 2] = np.frombuffer(np.float16(rng.uniform(-0.1, 0.1)).tobytes(), np.uint8)
    values = gguf.quants.dequantize(raw, qt).reshape(-1)
    blocks[name] = {"hex": raw.tobytes().hex(), "values": [float(v) for v in values]}
x = rng.standard_normal(16).astype(np.float32)
blocks["F16"] = {"hex": x.astype(np.float16).tobytes().hex(),
                 "values": [float(v) for v in x.astype(np.float16).astype(np.float32)]}
bf = gguf.quants.quantize(x, Q.BF16)
blocks["BF16"] = {"hex": bf.tobytes().hex(),
                  "values": [float(v) for v in gguf.quants.dequantize(bf, Q.BF16).reshape(-1)]}
(OUT / "blocks.json").write_text(json.dumps(blocks, indent=1) + "\n")


# ---- tiny checkpoints ----
def permute(weights, n_head, n_head_kv):  # llama.cpp convert_hf_to_gguf.py, LlamaModel.permute
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return (weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:])
            .swapaxes(1, 2)
            .reshape(weights.shape))


NAMES = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
}
LAYER = {
    "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
    "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}


def gguf_name(hf):
    if hf in NAMES:
        return NAMES[hf]
    parts = hf.split(".")  # model.layers.N.<module...>.<kind>
    return f"blk.{parts[2]}.{LAYER['.'.join(parts[3:-1])]}.{parts[-1]}"


tok = json.loads((HERE / "tokenizer" / "tokenizer.json").read_text())
vocab = sorted(tok["model"]["vocab"].items(), key=lambda kv: kv[1])
assert [i for _, i in vocab] == list(range(len(vocab)))
special = {t["id"] for t in tok["added_tokens"] if t["special"]}
tok_cfg = json.loads((HERE / "tokenizer" / "tokenizer_config.json").read_text())

for model in ["tiny-llama", "tiny-qwen2"]:
    cfg = json.loads((HERE / model / "config.json").read_text())
    arch = cfg["model_type"]
    w = gguf.GGUFWriter(str(OUT / f"{model}.gguf"), arch=arch)
    w.add_name(model)
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_head_count_kv(cfg["num_key_value_heads"])
    theta = cfg.get("rope_theta") or cfg["rope_parameters"]["rope_theta"]
    w.add_rope_freq_base(theta)
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_rope_dimension_count(cfg["hidden_size"] // cfg["num_attention_heads"])
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list([t for t, _ in vocab])
    w.add_token_types([3 if i in special else 1 for _, i in vocab])
    w.add_token_merges([f"{a} {b}" for a, b in tok["model"]["merges"]])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_pad_token_id(0)
    w.add_chat_template(tok_cfg["chat_template"])
    tensors = load_file(str(HERE / model / "model.safetensors"))
    h, hkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    for name in sorted(tensors):
        if name == "lm_head.weight" and cfg["tie_word_embeddings"]:
            continue
        data = tensors[name].astype(np.float32)
        if arch == "llama" and ".q_proj." in name:
            data = permute(data, h, h)
        if arch == "llama" and ".k_proj." in name:
            data = permute(data, h, hkv)
        w.add_tensor(gguf_name(name), data)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(model, (OUT / f"{model}.gguf").stat().st_size, "bytes")
