"""Batched sampling with a KV cache in transformers: the reference of `bench_worker generate`.

`--mode generate`: `model.generate` (do_sample, temperature 1, top_k 0, top_p 1, no EOS, exactly
`--new-tokens` tokens). `--mode loop`: a plain PyTorch loop over a `DynamicCache` (softmax,
multinomial), the lower bound of what transformers' own machinery costs. Same prompts as
bench_worker: `--batch` rows of `--prompt-len` ids `(i*7919 + 13) % vocab`; one untimed 8-token run first.
"""

import argparse
import time

from common import default_threads, emit, median, set_threads, token_ids


def load(args):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    if args.model:
        model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32, attn_implementation="sdpa")
    else:
        torch.manual_seed(0)
        cfg = AutoConfig.from_pretrained(args.config)
        model = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa", dtype=torch.float32)
    return model.eval()


def run_generate(model, ids, n, seed):
    import torch

    torch.manual_seed(seed)
    out = model.generate(
        ids,
        attention_mask=torch.ones_like(ids),
        max_new_tokens=n,
        min_new_tokens=n,
        do_sample=True,
        temperature=1.0,
        top_k=0,
        top_p=1.0,
        pad_token_id=0,
        eos_token_id=None,
    )
    return out.shape[0] * (out.shape[1] - ids.shape[1])


def run_loop(model, ids, n, seed):
    import torch
    from transformers import DynamicCache

    torch.manual_seed(seed)
    with torch.inference_mode():
        cache = DynamicCache(config=model.config)
        logits = model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1).logits[:, -1]
        produced = 0
        for step in range(n):
            nxt = torch.multinomial(torch.softmax(logits, dim=-1), 1)
            produced += nxt.shape[0]
            if step + 1 == n:
                break
            logits = model(input_ids=nxt, past_key_values=cache, use_cache=True).logits[:, -1]
    return produced


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", help="HF model directory (weights loaded)")
    p.add_argument("--config", help="directory holding config.json (random init)")
    p.add_argument("--mode", choices=["generate", "loop"], default="generate")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--prompt-len", type=int, default=32)
    p.add_argument("--new-tokens", type=int, default=128)
    p.add_argument("--iters", type=int, default=1)
    p.add_argument("--threads", type=int, default=default_threads())
    a = p.parse_args()

    import warnings

    import torch

    warnings.filterwarnings("ignore")
    set_threads(a.threads)
    model = load(a)
    model.generation_config.eos_token_id = None
    ids = token_ids(a.batch, a.prompt_len, model.config.vocab_size)
    run = run_generate if a.mode == "generate" else run_loop
    with torch.inference_mode():
        run(model, ids, 8, 1)
        times, produced = [], 0
        for i in range(a.iters):
            start = time.perf_counter()
            produced = run(model, ids, a.new_tokens, i)
            times.append(time.perf_counter() - start)
    secs = median(times)
    emit({
        "workload": "generate",
        "mode": a.mode,
        "value": produced / secs,
        "unit": "new tokens/s",
        "run_s": times,
        "new_tokens_total": produced,
        "params": sum(p.numel() for p in model.parameters()),
        "batch": a.batch, "prompt_len": a.prompt_len, "new_tokens": a.new_tokens,
        "threads": torch.get_num_threads(),
    })


if __name__ == "__main__":
    main()
