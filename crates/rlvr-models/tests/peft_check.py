"""PyPI peft against rlvr-models' LoRA files (run by tests/lora.rs `peft_loads_our_adapter`).

Arguments: BASE_DIR ADAPTER_DIR MERGED_DIR EXPECTED_JSON. Loads the HF base with transformers,
our adapter with `peft.PeftModel.from_pretrained`, and checks (1) the logits equal the ones
rlvr-models computed with the adapter attached, (2) the adapter changes the base's logits (so a
silently skipped adapter cannot pass), (3) peft's `merge_and_unload` weights equal our merged HF
directory. Prints "peft check: ok ..." on success, exits non-zero otherwise.
"""

import json
import sys

import torch
from peft import PeftModel
from transformers import AutoModelForCausalLM


def main():
    base_dir, adapter_dir, merged_dir, expected_path = sys.argv[1:5]
    with open(expected_path) as f:
        expected = json.load(f)
    ids = torch.tensor(expected["ids"], dtype=torch.long)
    ours = torch.tensor(expected["logits"], dtype=torch.float32)

    base = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32)
    base.eval()
    with torch.no_grad():
        base_logits = base(input_ids=ids).logits.flatten()
    model = PeftModel.from_pretrained(base, adapter_dir)
    model.eval()
    with torch.no_grad():
        peft_logits = model(input_ids=ids).logits.flatten()
    diff = (peft_logits - ours).abs().max().item()
    moved = (peft_logits - base_logits).abs().max().item()
    if not diff < 1e-4:
        sys.exit(f"logits differ from rlvr-models by {diff}")
    if not moved > 1e-3:
        sys.exit(f"the adapter does not change the base model's logits ({moved})")

    merged = model.merge_and_unload().state_dict()
    ours_merged = AutoModelForCausalLM.from_pretrained(merged_dir, dtype=torch.float32).state_dict()
    worst = 0.0
    for name, tensor in merged.items():
        if name not in ours_merged:
            if name == "lm_head.weight":
                continue
            sys.exit(f"our merged directory lacks {name}")
        worst = max(worst, (tensor - ours_merged[name]).abs().max().item())
    if not worst < 1e-5:
        sys.exit(f"merged weights differ by {worst}")
    print(f"peft check: ok (logits max diff {diff:.2e}, adapter effect {moved:.2e}, merged weights max diff {worst:.2e})")


if __name__ == "__main__":
    main()
