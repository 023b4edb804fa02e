"""PyTorch/transformers reference of one GRPO update: peak memory and wall time.

The same update as one RL step of `configs/smollm2-gsm8k.toml` without the rollout
(docs/benchmarks.md, "Memory of the update"), written the way TRL's `GRPOTrainer` computes it:

- Policy: SmolLM2-135M-Instruct weights, `AutoModelForCausalLM.from_pretrained(dir,
  dtype=torch.float32)`, SDPA attention, train mode.
- Batch (fixed, synthetic, no generation): 8 prompts x 8 samples = 64 sequences. Every prompt is
  150 tokens (so no prompt padding); the 8 samples of a group share their prompt. Response lengths:
  31 of 64 are 256 tokens (48.4 %), the other 33 are `round(40 + 210 k / 32)` for k = 0..32
  (evenly spaced 40..250), and the 64 lengths are placed by `torch.randperm(64)` from a generator
  seeded with 0; mean 198.8 tokens. Token ids are `(i * 7919 + 13) % vocab` over the flattened
  `[64, 406]` grid (as `common.token_ids`), prompt ids taken from the group's first row. As in
  TRL, prompts are left-padded, responses right-padded to the longest response of the whole
  batch (256) with the pad id, and `attention_mask` is 0 on the padding.
- Advantages: one standard-normal draw per sequence (generator seeded 1), normalised within each
  group of 8 as TRL does: `(r - mean) / (std + 1e-4)`, `std` unbiased.
- Log-probs: the model with `logits_to_keep = 257` (the LM head only over the last response + 1
  positions, as TRL passes it), drop the last column, divide by the temperature 1.0 in place, then
  TRL's `selective_log_softmax` (f32 path: `gather` of the target logits minus a per-row
  `logsumexp`, one sequence at a time and stacked, to bound the peak); `--logps naive` uses
  `log_softmax(-1).gather(-1)` instead. The per-token entropy is computed under `no_grad` in chunks
  of 128 rows as TRL does for logging (`--no-entropy` skips it).
- Old log-probs: the current policy's, detached (ratio 1, TRL's shortcut when
  `num_iterations == 1`); no reference model (KL coefficient 0).
- Loss: PPO clip with epsilon 0.2 on both sides, `-min(ratio * A, clip(ratio) * A)`, aggregated as
  TRL's default `loss_type="dapo"`: the sum over the response tokens divided by the number of
  response tokens of the whole optimizer mini-batch (token mean). Each micro-batch divides by the
  mini-batch's count, so the accumulated gradient equals the one-pass gradient.
- Update: 2 optimizer mini-batches of 32 sequences; each is split into micro-batches of
  `--micro-batch-seqs` sequences (gradient accumulation; the last one smaller when the count
  does not divide 32, e.g. 10 x 3 + 2); then `clip_grad_norm_(1.0)` (TRL's
  `max_grad_norm` default) and `torch.optim.AdamW(lr=1e-6)` (betas 0.9/0.999, eps 1e-8, weight
  decay 0, the transformers defaults). `--gradient-checkpointing` turns on transformers'
  activation checkpointing with `use_reentrant=False` (TRL's default setting; TRL's `GRPOConfig`
  enables checkpointing by default).

Measures the wall time of the update (forward, backward and optimizer over the 64 sequences,
i.e. two optimizer steps; model loading and batch building excluded), and the peak resident memory
of the whole process: `ru_maxrss` and `VmHWM`. `--rss-limit-gb` stops the process cleanly (exit 3,
JSON with `"status": "over_limit"`) when `VmRSS` passes the limit, so that a configuration that
does not fit does not reach the kernel's OOM killer.
"""

import argparse
import os
import resource
import sys
import threading
import time
from pathlib import Path

from common import default_threads, emit, set_threads

PROMPT_LEN = 150
MAX_NEW = 256
PROMPTS = 8
GROUP = 8
AT_MAX = 31  # of 64 responses reach MAX_NEW
EPSILON = 0.2


def proc_status_kib(field):
    """A `kB` field of /proc/self/status (VmRSS, VmHWM), in KiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def find_model_dir():
    """The SmolLM2-135M-Instruct directory fetched by `cargo xtask fetch-model smollm2`."""
    root = Path(os.path.expanduser("~/.cache/rlvr-rs"))
    preferred = root / "smollm2-135m-instruct"
    if (preferred / "config.json").is_file() and (preferred / "model.safetensors").is_file():
        return preferred
    for cfg in sorted(root.rglob("config.json")):
        if (cfg.parent / "model.safetensors").is_file():
            return cfg.parent
    raise SystemExit(f"no directory with config.json and model.safetensors under {root}; "
                     "run `cargo xtask fetch-model smollm2` or pass --model")


def response_lengths():
    """The 64 response lengths (see the module doc): 31 x 256 and 33 evenly spaced in 40..250."""
    import torch

    n = PROMPTS * GROUP
    rest = n - AT_MAX
    lengths = [MAX_NEW] * AT_MAX + [round(40 + 210 * k / (rest - 1)) for k in range(rest)]
    order = torch.randperm(n, generator=torch.Generator().manual_seed(0))
    return torch.tensor(lengths, dtype=torch.int64)[order]


def build_batch(vocab, pad_id):
    """Prompt + response ids `[64, 406]`, attention mask, response mask `[64, 256]`, advantages."""
    import torch

    n = PROMPTS * GROUP
    width = PROMPT_LEN + MAX_NEW
    flat = (torch.arange(n * width, dtype=torch.int64) * 7919 + 13) % vocab
    ids = flat.reshape(n, width)
    # The samples of a group share the prompt of the group's first row.
    ids[:, :PROMPT_LEN] = ids[::GROUP, :PROMPT_LEN].repeat_interleave(GROUP, dim=0)
    lengths = response_lengths()
    cols = torch.arange(MAX_NEW).unsqueeze(0)
    response_mask = (cols < lengths.unsqueeze(1)).to(torch.int64)
    ids[:, PROMPT_LEN:] = torch.where(response_mask.bool(), ids[:, PROMPT_LEN:], pad_id)
    prompt_mask = torch.ones(n, PROMPT_LEN, dtype=torch.int64)
    attention_mask = torch.cat([prompt_mask, response_mask], dim=1)
    rewards = torch.randn(n, generator=torch.Generator().manual_seed(1))
    grouped = rewards.view(PROMPTS, GROUP)
    mean = grouped.mean(dim=1).repeat_interleave(GROUP)
    std = grouped.std(dim=1).repeat_interleave(GROUP)
    advantages = (rewards - mean) / (std + 1e-4)
    return ids, attention_mask, response_mask, advantages, lengths


def selective_log_softmax(logits, index):
    """TRL's `selective_log_softmax` (trl/trainer/utils.py), f32 path: `log_softmax` then
    `gather`, computed as the gathered logit minus a `logsumexp` taken one row at a time."""
    import torch

    selected = torch.gather(logits, dim=-1, index=index.unsqueeze(-1)).squeeze(-1)
    logsumexp = torch.stack([torch.logsumexp(row, dim=-1) for row in logits])
    return selected - logsumexp


def naive_log_softmax(logits, index):
    """`log_softmax` over the whole tensor, then `gather`."""
    import torch

    return torch.log_softmax(logits, dim=-1).gather(-1, index.unsqueeze(-1)).squeeze(-1)


def entropy_from_logits(logits, chunk_size=128):
    """TRL's `entropy_from_logits`: per-position entropy in chunks of `chunk_size` rows."""
    import torch

    flat = logits.reshape(-1, logits.shape[-1])
    out = []
    for chunk in flat.split(chunk_size, dim=0):
        logps = torch.log_softmax(chunk, dim=-1)
        out.append(-(torch.exp(logps) * logps).sum(-1))
    return torch.cat(out).reshape(logits.shape[:-1])


def micro_batch_backward(model, ids, attention_mask, response_mask, advantages, minibatch_tokens,
                         logps_fn, entropy):
    """Forward, clipped loss scaled by the mini-batch's token count, backward; returns the loss
    contribution and the masked entropy sum (both floats)."""
    import torch

    keep = response_mask.shape[1]
    out = model(input_ids=ids, attention_mask=attention_mask, logits_to_keep=keep + 1,
                use_cache=False)
    logits = out.logits[:, :-1, :]
    logits.div_(1.0)  # the sampling temperature, in place as TRL does
    logps = logps_fn(logits, ids[:, -keep:])
    entropy_sum = 0.0
    if entropy:
        with torch.no_grad():
            entropy_sum = (entropy_from_logits(logits) * response_mask).sum().item()
    old = logps.detach()
    ratio = torch.exp(logps - old)
    clipped = torch.clamp(ratio, 1 - EPSILON, 1 + EPSILON)
    adv = advantages.unsqueeze(1)
    per_token = -torch.min(ratio * adv, clipped * adv)
    loss = (per_token * response_mask).sum() / minibatch_tokens
    loss.backward()
    return loss.item(), entropy_sum


class RssWatch:
    """Polls VmRSS; past `limit_kib` it prints the JSON result and ends the process (exit 3)."""

    def __init__(self, limit_kib, record):
        self.limit_kib = limit_kib
        self.record = record
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.wait(0.02):
            rss = proc_status_kib("VmRSS")
            if rss > self.limit_kib:
                record = dict(self.record)  # the main thread may still be updating its own
                start = record.pop("_start", None)
                record.update({
                    "status": "over_limit",
                    "rss_at_stop_mib": rss / 1024,
                    "vmhwm_mib": proc_status_kib("VmHWM") / 1024,
                    "update_elapsed_s": None if start is None else time.perf_counter() - start,
                })
                emit(record)
                os._exit(3)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", help="HF directory with config.json + model.safetensors "
                   "(default: found under ~/.cache/rlvr-rs)")
    p.add_argument("--micro-batch-seqs", type=int, default=32,
                   help="sequences per forward/backward pass (gradient accumulation); 32 = one pass "
                   "per mini-batch")
    p.add_argument("--mini-batch-seqs", type=int, default=32, help="sequences per optimizer step")
    p.add_argument("--gradient-checkpointing", action="store_true")
    p.add_argument("--logps", choices=["selective", "naive"], default="selective",
                   help="TRL's selective_log_softmax, or log_softmax then gather")
    p.add_argument("--no-entropy", action="store_true", help="skip TRL's no-grad entropy")
    p.add_argument("--lr", type=float, default=1e-6)
    p.add_argument("--threads", type=int, default=default_threads())
    p.add_argument("--rss-limit-gb", type=float, default=0.0,
                   help="stop cleanly (exit 3) when VmRSS passes this many GB (1e9 bytes); 0 = off")
    a = p.parse_args()
    n = PROMPTS * GROUP
    if a.mini_batch_seqs <= 0 or n % a.mini_batch_seqs:
        p.error(f"--mini-batch-seqs must divide {n}")
    if a.micro_batch_seqs <= 0:
        p.error("--micro-batch-seqs must be positive")

    import torch
    import transformers
    from transformers import AutoModelForCausalLM

    set_threads(a.threads)
    torch.manual_seed(0)
    record = {
        "workload": "grpo_update",
        "micro_batch_seqs": a.micro_batch_seqs,
        "mini_batch_seqs": a.mini_batch_seqs,
        "gradient_checkpointing": a.gradient_checkpointing,
        "logps": a.logps,
        "entropy": not a.no_entropy,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "loadavg_start": os.getloadavg(),
    }
    watch = None
    if a.rss_limit_gb > 0:
        record["rss_limit_gb"] = a.rss_limit_gb
        watch = RssWatch(int(a.rss_limit_gb * 1e9 / 1024), record)
        watch.thread.start()

    model_dir = Path(a.model) if a.model else find_model_dir()
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32,
                                                 attn_implementation="sdpa")
    model.config.use_cache = False
    if a.gradient_checkpointing:
        kwargs = {"use_reentrant": False}
        if hasattr(model, "activation_checkpointing_enable"):  # transformers >= 5.x's name
            model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=0.0)
    cfg = model.config
    pad_id = cfg.pad_token_id if cfg.pad_token_id is not None else cfg.eos_token_id
    ids, attention_mask, response_mask, advantages, lengths = build_batch(cfg.vocab_size, pad_id)
    logps_fn = selective_log_softmax if a.logps == "selective" else naive_log_softmax
    record.update({
        "model": str(model_dir),
        "attn": cfg._attn_implementation,
        "sequences": n,
        "prompt_len": PROMPT_LEN,
        "response_mean": lengths.float().mean().item(),
        "response_at_max": int((lengths == MAX_NEW).sum()),
        "padded_tokens_per_pass":
            min(a.micro_batch_seqs, a.mini_batch_seqs) * (PROMPT_LEN + MAX_NEW),
        "rss_before_update_mib": proc_status_kib("VmRSS") / 1024,
    })

    start = time.perf_counter()
    record["_start"] = start
    losses, grad_norms, passes, minibatch_s, entropy_total = [], [], [], [], 0.0
    for m0 in range(0, n, a.mini_batch_seqs):
        t0 = time.perf_counter()
        rows = slice(m0, m0 + a.mini_batch_seqs)
        minibatch_tokens = response_mask[rows].sum().clamp(min=1).to(torch.float32)
        loss = 0.0
        for u0 in range(m0, m0 + a.mini_batch_seqs, a.micro_batch_seqs):
            r = slice(u0, min(u0 + a.micro_batch_seqs, m0 + a.mini_batch_seqs))
            part, ent = micro_batch_backward(model, ids[r], attention_mask[r], response_mask[r],
                                             advantages[r], minibatch_tokens, logps_fn,
                                             not a.no_entropy)
            loss += part
            entropy_total += ent
            passes.append(time.perf_counter() - t0)
            print(f"mini-batch {m0 // a.mini_batch_seqs} rows {r.start}..{r.stop}: "
                  f"{passes[-1]:.1f} s, VmRSS {proc_status_kib('VmRSS') / 1024:.0f} MiB",
                  file=sys.stderr, flush=True)
        grad_norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).item())
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss)
        minibatch_s.append(time.perf_counter() - t0)
    update_s = time.perf_counter() - start
    record.pop("_start")
    if watch is not None:
        watch.stop.set()

    record.update({
        "status": "ok",
        "update_s": update_s,
        "minibatch_s": minibatch_s,
        "passes": len(passes),
        "loss": losses,
        "grad_norm": grad_norms,
        "mean_entropy": entropy_total / response_mask.sum().item() if not a.no_entropy else None,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "vmhwm_mib": proc_status_kib("VmHWM") / 1024,
        "loadavg_end": os.getloadavg(),
    })
    emit(record)


if __name__ == "__main__":
    main()
