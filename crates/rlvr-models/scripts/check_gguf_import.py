"""Checks an imported GGUF directory against transformers' own GGUF loader (manual check).

transformers dequantizes GGUF with the `gguf` package and undoes llama.cpp's q/k permutation
itself, so it is an independent implementation of what `rlvr-model import-gguf` does.

    python check_gguf_import.py FILE.gguf IMPORTED_DIR

Prints the largest absolute weight difference, the logits difference on one prompt between
transformers on the imported directory and transformers on the GGUF file, and whether the
two tokenizers agree on a few strings. Needs torch, transformers and gguf.
"""
import sys

import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer

gguf_path, out_dir = sys.argv[1], sys.argv[2]
import os
gdir, gname = os.path.split(os.path.abspath(gguf_path))

ref = AutoModelForCausalLM.from_pretrained(gdir, gguf_file=gname, dtype=torch.float32)
ours = load_file(os.path.join(out_dir, "model.safetensors"))
ref_sd = ref.state_dict()
worst = max(((k, (ref_sd[k].float() - v).abs().max().item()) for k, v in ours.items()), key=lambda kv: kv[1])
missing = sorted(set(ref_sd) - set(ours) - {"lm_head.weight"})
print(f"tensors: ours {len(ours)}, transformers {len(ref_sd)}, missing from ours: {missing}")
print(f"max |weight difference| = {worst[1]:.3g} (tensor {worst[0]})")

model = AutoModelForCausalLM.from_pretrained(out_dir, dtype=torch.float32)
tok = AutoTokenizer.from_pretrained(out_dir)
ref_tok = AutoTokenizer.from_pretrained(gdir, gguf_file=gname)
text = "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
ids = tok(text, return_tensors="pt", add_special_tokens=False).input_ids
with torch.no_grad():
    a = model(ids).logits
    b = ref(ids).logits
print(f"prompt ids: {ids[0].tolist()}")
print(f"max |logit difference| (imported dir vs GGUF, transformers both) = {(a - b).abs().max().item():.3g}; "
      f"logit magnitude {a.abs().max().item():.3g}")
out = model.generate(ids, max_new_tokens=12, do_sample=False)
print("transformers greedy on the imported dir:", repr(tok.decode(out[0, ids.shape[1]:])))
for s in ["Hello world", "The year 2024 had 366 days.", "café naïve — Zürich 東京", "<|im_start|>user\nhi<|im_end|>", "  two  spaces\n\ttab"]:
    x = tok(s, add_special_tokens=False).input_ids
    y = ref_tok(s, add_special_tokens=False).input_ids
    print(f"{s!r}: ours {x} {'==' if x == y else '!='} transformers-gguf {y}")
