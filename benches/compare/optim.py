"""Muon and Pion steps in PyTorch: the reference of `bench_worker optim`.

The same update as rlvr-optim (crates/rlvr-optim/src/{matrix_step,newton_schulz,muon,pion}.rs)
with its defaults, operation for operation:
  1. momentum, SGD form: v <- beta*v + g (v_0 = g); u = g + beta*v (Nesterov, Muon) or u = v (Pion);
  2. Newton-Schulz: transpose if rows > cols; X = u / max(||u||_F, 1e-7); five steps of
     A = X X^T; X = a X + (b A + c A A) X, with Muon's (3.4445, -4.7750, 2.0315) or Pion's
     suppression (0, 2.5, -1.5) (the a X term skipped when a = 0); after a step with |a| < 1,
     entries below 1e-8 in magnitude are set to 0 (rlvr-optim's FLUSH_TO_ZERO);
  3. W <- W (1 - lr wd), wd = 0.01;
  4. W <- W - lr * factor * sqrt(max(rows, cols)) * O, factor 0.2 (Muon) or 5.0 (Pion).
One untimed warm-state step, `--warmup` untimed steps, then `--iters` timed steps.
"""

import argparse
import time

from common import default_threads, emit, median, set_threads

MUON = (3.4445, -4.7750, 2.0315)
PION_SUPPRESSION = (0.0, 2.5, -1.5)
FLUSH_TO_ZERO = 1e-8


def orthogonalize(g, schedule, eps=1e-7):
    transpose = g.shape[-2] > g.shape[-1]
    x = g.mT if transpose else g
    x = x / x.norm().clamp_min(eps)
    for a, b, c in schedule:
        gram = x @ x.mT
        poly = b * gram + c * (gram @ gram)
        bx = poly @ x
        x = bx if a == 0.0 else a * x + bx
        if abs(a) < 1.0:
            x = x.masked_fill(x.abs() < FLUSH_TO_ZERO, 0.0)
    return x.mT if transpose else x


class MatrixStep:
    def __init__(self, kind):
        self.beta = 0.95
        self.nesterov = kind == "muon"
        self.schedule = [MUON] * 5 if kind == "muon" else [PION_SUPPRESSION] * 5
        self.factor = 0.2 if kind == "muon" else 5.0
        self.wd = 0.01
        self.buf = None

    def step(self, lr, w, g):
        if self.buf is None:
            self.buf = g.clone()
        else:
            self.buf.mul_(self.beta).add_(g)
        u = g.add(self.buf, alpha=self.beta) if self.nesterov else self.buf
        o = orthogonalize(u, self.schedule)
        w.mul_(1.0 - lr * self.wd)
        w.add_(o, alpha=-lr * self.factor * max(w.shape) ** 0.5)
        return w


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kind", choices=["muon", "pion"], required=True)
    p.add_argument("--rows", type=int, required=True)
    p.add_argument("--cols", type=int, required=True)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--threads", type=int, default=default_threads())
    a = p.parse_args()

    import torch

    set_threads(a.threads)
    torch.manual_seed(0)
    w = torch.randn(a.rows, a.cols)
    g = torch.randn(a.rows, a.cols)
    opt = MatrixStep(a.kind)
    with torch.no_grad():
        opt.step(1e-3, w, g)
        times = []
        for i in range(a.warmup + a.iters):
            start = time.perf_counter()
            opt.step(1e-3, w, g)
            w.sum().item()
            secs = time.perf_counter() - start
            if i >= a.warmup:
                times.append(secs)
    ms = 1e3 * median(times)
    emit({
        "workload": "optim",
        "kind": a.kind,
        "rows": a.rows, "cols": a.cols,
        "value": 1e3 / ms,
        "unit": "steps/s",
        "step_ms": ms,
        "step_s": times,
        "threads": torch.get_num_threads(),
    })


if __name__ == "__main__":
    main()
