"""PyTorch eager training step: the reference of `bench_worker train-step`.

Same shape (the HF config.json both sides read), random init, f32, the same batch of ids; per-token
log-probs (LM head on positions 0..T-2 only, log_softmax, gather), mean negative log-likelihood,
backward, torch.optim.AdamW(lr 1e-4, betas 0.9/0.999, eps 1e-8, wd 0.01).
"""

import argparse
import os
import time

from common import default_threads, emit, median, set_threads, token_ids


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--config", required=True, help="directory holding config.json")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--iters", type=int, default=3)
    p.add_argument("--threads", type=int, default=default_threads())
    a = p.parse_args()

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    set_threads(a.threads)
    torch.manual_seed(0)
    cfg = AutoConfig.from_pretrained(a.config)
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa", dtype=torch.float32)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    ids = token_ids(a.batch, a.seq, cfg.vocab_size)
    targets = ids[:, 1:].unsqueeze(-1)
    scored = a.batch * (a.seq - 1)
    times, losses = [], []
    for i in range(a.warmup + a.iters):
        start = time.perf_counter()
        hidden = model.model(input_ids=ids).last_hidden_state[:, :-1]
        logits = model.lm_head(hidden)
        logp = torch.log_softmax(logits, dim=-1).gather(-1, targets).squeeze(-1)
        loss = -logp.sum() / scored
        loss_value = loss.item()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        secs = time.perf_counter() - start
        if i >= a.warmup:
            times.append(secs)
        losses.append(loss_value)
    step_s = median(times)
    tokens = a.batch * a.seq
    emit({
        "workload": "train_step",
        "value": tokens / step_s,
        "unit": "tokens/s",
        "step_s": times,
        "params": sum(p.numel() for p in model.parameters()),
        "batch": a.batch, "seq": a.seq,
        "loss": losses,
        "threads": torch.get_num_threads(),
        "attn": model.config._attn_implementation,
    })


if __name__ == "__main__":
    main()
