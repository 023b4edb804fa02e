"""Independent reference for DelTA's token coefficients and its self-normalized loss.

Implements methods-extra.md section 13 (a) directly in numpy float64, vectorized: each pool's
responses become a [responses, vocabulary] count matrix, F+/F- are matrix products with the
advantage weights |A_i|/|y_i|, and the coefficients are read back by fancy indexing (no
per-token loop, unlike the Rust code). Writes tests/fixtures/delta_golden.json; the Rust test
(tests/delta.rs) feeds the same inputs to `delta`, to `StagesConfig::apply` and to
`ObjectiveConfig::loss` with `PolicyBatch::with_token_coef`, and must match to 1e-6.

Coefficients: F+(v) = sum_{A_i>0} A_i count_i(v)/|y_i|, F-(v) = sum_{A_i<0} |A_i| count_i(v)/|y_i|,
P = F / sum F, q = P+ / (P+ + P- + eps), c = clip((2q)^k, c_min, c_max) on positive responses,
clip((2(1-q))^k, ...) on negative ones; A = 0 or a one-sided pool: c = 1.

Loss (clipped surrogate, token ratios, no KL): rho = exp(logp - old), l = -A rho unless clipped
(A > 0, rho > 1 + eps_high or A < 0, rho < 1 - eps_low: value -A clip(rho), no gradient);
token_mean: L = sum c m l / sum c m; seq_mean_token_mean: L = mean_i (sum_t c m l / sum_t c m)
over rows with tokens. Gradient w.r.t. logp by hand: d l / d logp = -A rho where not clipped.

Run: python crates/rlvr-objectives/scripts/reference_delta.py (needs numpy)
"""

import json
import pathlib

import numpy as np


def pool_coefficients(tokens, adv, kappa, c_min, c_max, eps):
    adv = np.asarray(adv, dtype=np.float64)
    vocab = 1 + max((max(t) for t in tokens if t), default=0)
    counts = np.zeros((len(tokens), vocab))
    lens = np.array([len(t) for t in tokens], dtype=np.float64)
    for i, t in enumerate(tokens):
        np.add.at(counts[i], np.asarray(t, dtype=np.int64), 1.0)
    freq = counts / np.maximum(lens, 1.0)[:, None]
    pos = np.where((adv > 0) & (lens > 0), adv, 0.0)
    neg = np.where((adv < 0) & (lens > 0), -adv, 0.0)
    f_pos, f_neg = pos @ freq, neg @ freq
    if f_pos.sum() <= 0 or f_neg.sum() <= 0:
        return [[1.0] * len(t) for t in tokens]
    p_pos, p_neg = f_pos / f_pos.sum(), f_neg / f_neg.sum()
    q = p_pos / (p_pos + p_neg + eps)
    out = []
    for t, a in zip(tokens, adv):
        ids = np.asarray(t, dtype=np.int64)
        if a == 0 or len(t) == 0:
            out.append([1.0] * len(t))
            continue
        side = q[ids] if a > 0 else 1.0 - q[ids]
        out.append(list(np.clip((2.0 * side) ** kappa, c_min, c_max)))
    return out


def coefficients(tokens, adv, g, scope, kappa, c_min, c_max, eps):
    size = g if scope == "group" else len(tokens)
    out = []
    for s in range(0, len(tokens), size):
        out += pool_coefficients(tokens[s : s + size], adv[s : s + size], kappa, c_min, c_max, eps)
    return out


def grpo(rewards, g, eps=1e-6):
    r = np.asarray(rewards, dtype=np.float64).reshape(-1, g)
    out = np.zeros_like(r)
    for i, row in enumerate(r):
        if np.all(row == row[0]):
            continue
        out[i] = (row - row.mean()) / (row.std(ddof=1) + eps)
    return out.reshape(-1)


def loss_and_grad(logp, old, adv, mask, coef, mode, eps_low, eps_high):
    rho = np.exp(logp - old)
    a = adv[:, None] * np.ones_like(logp)
    clipped = ((a > 0) & (rho > 1 + eps_high)) | ((a < 0) & (rho < 1 - eps_low))
    value = np.where(clipped, -a * np.clip(rho, 1 - eps_low, 1 + eps_high), -a * rho)
    dvalue = np.where(clipped, 0.0, -a * rho)
    w = coef * mask
    if mode == "token_mean":
        return (w * value).sum() / w.sum(), w * dvalue / w.sum()
    live = mask.sum(axis=1) > 0
    per_row = w.sum(axis=1)
    denom = np.where(per_row > 0, per_row, 1.0)
    loss = ((w * value).sum(axis=1) / denom)[live].sum() / live.sum()
    grad = w * dvalue / denom[:, None] / live.sum()
    return loss, grad


DEFAULT = dict(kappa=1.0, c_min=0.1, c_max=3.0, eps=1e-8)

CASES = [
    # Shared id 5 (c ~ 1), side-specific 7 (positive) and 9 (negative): c = 2.
    dict(name="shared_and_specific", g=2, scope="group", tokens=[[5, 7], [5, 9]], adv=[1.0, -1.0]),
    # One-sided group (all A > 0) and a group with A = 0 in it.
    dict(name="one_sided_and_zero", g=3, scope="group",
         tokens=[[1, 2], [2, 3, 3], [4], [1, 1], [2], [1, 2, 2]], adv=[1.0, 0.5, 0.2, 0.7, -0.7, 0.0]),
    # A positive response whose id 2 is mostly negative: q = 0.05/1.05, 2q = 0.0952 -> c_min.
    dict(name="clip_low", g=2, scope="group", tokens=[[1] * 19 + [2], [2]], adv=[1.0, -1.0]),
    # kappa = 2: side-specific tokens reach (2q)^2 = 4 -> c_max = 3; unequal |A| and lengths.
    dict(name="clip_high_kappa2", g=4, scope="group", kappa=2.0,
         tokens=[[1, 2, 3], [1, 4], [1, 5, 5, 2], [6]], adv=[0.8, 1.2, -0.4, -1.6]),
    # The same rows pooled over the batch: group 1 is one-sided alone, two-sided in the batch.
    dict(name="batch_scope", g=2, scope="batch",
         tokens=[[1, 2], [3, 4], [1, 3], [2, 2, 5]], adv=[1.0, 0.5, -1.0, 0.0]),
    dict(name="group_scope_same_rows", g=2, scope="group",
         tokens=[[1, 2], [3, 4], [1, 3], [2, 2, 5]], adv=[1.0, 0.5, -1.0, 0.0]),
    # Repeated ids, an empty response, eps = 0.1 and c_min = 0.5.
    dict(name="repeats_empty_eps", g=4, scope="group", eps=0.1, c_min=0.5,
         tokens=[[7, 7, 7, 8], [], [8, 9], [7, 9, 9, 9, 10]], adv=[1.5, 0.3, -0.5, -1.0]),
]


def main():
    out = {"cases": []}
    for case in CASES:
        k = {**DEFAULT, **{key: case[key] for key in DEFAULT if key in case}}
        c = coefficients(case["tokens"], case["adv"], case["g"], case["scope"], **k)
        out["cases"].append({**case, **k, "expected": c})

    # Through the stages: GRPO's group-std advantages (eps 1e-6) from rewards, then DelTA.
    stage = dict(g=3, rewards=[1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.5],
                 tokens=[[1, 2, 3], [1, 4], [4, 4, 2], [5], [5, 6], [6], [7, 8], [8, 9, 9], [7]])
    adv = grpo(stage["rewards"], stage["g"])
    stage["advantages"] = adv.tolist()
    stage["expected"] = coefficients(stage["tokens"], adv, stage["g"], "group", **DEFAULT)
    out["stage"] = stage

    # Loss case: 4 sequences, T = 5, mask with one short row and one empty row.
    rng = np.random.default_rng(13)
    b, t = 4, 5
    old = rng.uniform(-2.0, -0.2, size=(b, t))
    logp = old + rng.uniform(-0.4, 0.4, size=(b, t))
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [0, 0, 0, 0, 0], [1, 1, 1, 1, 0]], float)
    adv = np.array([1.2, -0.7, 0.5, -1.1])
    coef = np.where(mask > 0, rng.uniform(0.1, 3.0, size=(b, t)), 1.0)
    loss_cases = []
    for mode in ["token_mean", "seq_mean_token_mean"]:
        for name, c in [("delta", coef), ("ones", np.ones_like(coef))]:
            loss, grad = loss_and_grad(logp, old, adv, mask, c, mode, 0.2, 0.28)
            loss_cases.append({"mode": mode, "coef_name": name, "coef": c.ravel().tolist(),
                               "loss": loss, "grad": grad.ravel().tolist()})
    out["loss"] = {"B": b, "T": t, "eps_low": 0.2, "eps_high": 0.28,
                   "logp": logp.ravel().tolist(), "old_logp": old.ravel().tolist(),
                   "mask": mask.ravel().tolist(), "advantages": adv.tolist(), "cases": loss_cases}
    path = pathlib.Path(__file__).resolve().parent.parent / "tests/fixtures/delta_golden.json"
    path.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
