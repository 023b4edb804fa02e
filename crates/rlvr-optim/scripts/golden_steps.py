"""Golden numbers for rlvr-optim: two optimizer steps of Muon and Pion, computed independently.

This is a from-scratch NumPy (float64) transcription of the reference algorithms, written in the
PyTorch layout the references use (a Linear weight is [out, in]):
  * Muon: KellerJordan/Muon `muon.py` (EMA momentum via lerp, Nesterov blend, Frobenius
    normalisation, transpose when rows > cols, quintic (3.4445, -4.7750, 2.0315) x 5, scale
    sqrt(max(1, rows/cols)) or Moonshot's 0.2*sqrt(max(rows, cols)), decoupled weight decay).
  * Pion: OPTML-Group/Pion (promotion (1.875, -1.25, 0.375) x k_p, then suppression
    (0, 2.5, -1.5) x (k - k_p), scale_factor*sqrt(max(rows, cols)); per-head mode views q/k/v
    [H*d_h, d_in] as (H, d_h, d_in) and o_proj [d_out, H*d_h] as (d_out, H, d_h) -> (H, d_out, d_h)).

The Rust crate stores weights as burn does, [in, out]; every array written to the fixture is in
that layout (the transpose of the PyTorch one), so the test also checks the layout mapping.

Run:  python3 crates/rlvr-optim/scripts/golden_steps.py
Writes crates/rlvr-optim/tests/fixtures/golden_steps.json
"""

import json
import os

import numpy as np

MUON_Q = [(3.4445, -4.7750, 2.0315)]
PROMOTION = (1.875, -1.25, 0.375)
SUPPRESSION = (0.0, 2.5, -1.5)


def newton_schulz(g, schedule, eps=1e-7):
    """Keller's zeropower_via_newtonschulz5 with a per-step schedule, on the last two dims."""
    x = g.astype(np.float64)
    transpose = x.shape[-2] > x.shape[-1]
    if transpose:
        x = np.swapaxes(x, -1, -2)
    norm = np.sqrt((x * x).sum(axis=(-2, -1), keepdims=True))
    x = x / (norm + eps)
    for a, b, c in schedule:
        A = x @ np.swapaxes(x, -1, -2)
        B = b * A + c * A @ A
        x = a * x + B @ x
    if transpose:
        x = np.swapaxes(x, -1, -2)
    return x


def orthogonalize(u, case):
    """Whole-matrix or per-head iteration in PyTorch layout; returns (O, (rows, cols) of a block)."""
    sched = case["schedule"]
    head = case.get("per_head")
    if head is None:
        return newton_schulz(u, sched), u.shape
    h = head["heads"]
    if head["split_dim"] == 0:  # q/k/v: [H*d_h, d_in] -> (H, d_h, d_in)
        blocks = u.reshape(h, u.shape[0] // h, u.shape[1])
        o = newton_schulz(blocks, sched).reshape(u.shape)
        return o, blocks.shape[1:]
    # o_proj: [d_out, H*d_h] -> (d_out, H, d_h) -> (H, d_out, d_h)
    blocks = u.reshape(u.shape[0], h, u.shape[1] // h).transpose(1, 0, 2)
    o = newton_schulz(blocks, sched).transpose(1, 0, 2).reshape(u.shape)
    return o, blocks.shape[1:]


def scale(case, rows, cols):
    if case["scale"] == "aspect_ratio":
        return np.sqrt(max(1.0, rows / cols))
    return case["factor"] * np.sqrt(max(rows, cols))


def run(case, w0_torch, grads_torch):
    beta, lr, wd = case["momentum"], case["lr"], case["weight_decay"]
    buf = np.zeros_like(w0_torch)
    w = w0_torch.copy()
    for g in grads_torch:
        buf = buf + (1 - beta) * (g - buf)  # torch lerp_(g, 1 - beta)
        u = g + beta * (buf - g) if case["nesterov"] else buf  # g.lerp_(buf, beta)
        o, (rows, cols) = orthogonalize(u, case)
        w = w * (1 - lr * wd)
        w = w - lr * scale(case, rows, cols) * o
    return w


def main():
    rng = np.random.default_rng(20261203)
    cases = [
        # burn dims [in, out]; PyTorch dims are [out, in].
        dict(name="muon_aspect_ratio", kind="muon", dims=[6, 12], schedule=MUON_Q * 5,
             momentum=0.95, nesterov=True, lr=0.02, weight_decay=0.1, scale="aspect_ratio"),
        dict(name="muon_max_dim_wide", kind="muon", dims=[10, 4], schedule=MUON_Q * 5,
             momentum=0.9, nesterov=False, lr=0.01, weight_decay=0.0, scale="max_dim", factor=0.2),
        dict(name="pion_kp1_whole", kind="pion", dims=[7, 9], promotion_steps=1,
             momentum=0.95, nesterov=False, lr=0.003, weight_decay=0.01, scale="max_dim", factor=5.0),
        dict(name="pion_kp2_q_proj_per_head", kind="pion", dims=[8, 12], promotion_steps=2,
             per_head=dict(heads=4, split_dim=0),
             momentum=0.95, nesterov=True, lr=0.003, weight_decay=0.01, scale="max_dim", factor=5.0),
        dict(name="pion_kp2_o_proj_per_head", kind="pion", dims=[12, 8], promotion_steps=2,
             per_head=dict(heads=4, split_dim=1),
             momentum=0.95, nesterov=False, lr=0.003, weight_decay=0.0, scale="max_dim", factor=5.0),
    ]
    out = []
    for case in cases:
        if case["kind"] == "pion":
            kp = case["promotion_steps"]
            case["schedule"] = [PROMOTION] * kp + [SUPPRESSION] * (5 - kp)
        d_in, d_out = case["dims"]
        w0 = rng.standard_normal((d_out, d_in)) * 0.1  # PyTorch layout
        grads = [rng.standard_normal((d_out, d_in)) for _ in range(2)]
        w2 = run(case, w0, grads)
        rec = {k: v for k, v in case.items() if k != "schedule"}
        # Fixture arrays in burn layout [in, out], row-major.
        rec["w0"] = w0.T.ravel().tolist()
        rec["grads"] = [g.T.ravel().tolist() for g in grads]
        rec["expected"] = w2.T.ravel().tolist()
        out.append(rec)
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "golden_steps.json")
    with open(path, "w") as f:
        json.dump({"source": "scripts/golden_steps.py (numpy float64)", "cases": out}, f, indent=1)
        f.write("\n")
    print("wrote", os.path.normpath(path))


if __name__ == "__main__":
    main()
