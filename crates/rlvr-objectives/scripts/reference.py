"""Independent reference for rlvr-objectives' golden tests.

Implements the formulas of the method specification (GRPO family §1, NFPO §2, OWPO §3,
Mu-GRPO §4, NSR §5) directly in PyTorch float64, on one fixed small batch, and writes the loss
and its gradient with respect to logp for each case into
tests/fixtures/objectives_golden.json. The Rust tests read the same inputs and must match to 1e-5.

Run: python crates/rlvr-objectives/scripts/reference.py (needs torch and numpy)
"""

import json
import math
import pathlib

import numpy as np
import torch

torch.set_default_dtype(torch.float64)

B, T, G = 8, 6, 4
LENGTHS = [6, 4, 5, 3, 6, 2, 5, 4]
REWARDS = [1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0]

# Ratio values near any decision boundary used below are rejected, so float32 (Rust) and
# float64 (here) classify every token the same way.
RATIO_BOUNDARIES = [0.5, 0.8, 1.0, 1.2, 1.28, 1.5, 2.0, 3.0, 1.0 - 3e-4, 1.0 + 4e-4]
MARGIN = 5e-3


def f32(x):
    return np.asarray(x, dtype=np.float32).astype(np.float64)


def near(x, points, margin=MARGIN):
    return any(abs(x - p) < margin for p in points)


def make_inputs():
    rng = np.random.RandomState(20260601)
    mask = np.zeros((B, T))
    for i, n in enumerate(LENGTHS):
        mask[i, :n] = 1.0
    logp = rng.uniform(-3.0, -0.1, size=(B, T))
    delta = np.zeros((B, T))
    for i in range(B):
        for t in range(T):
            while True:
                d = rng.uniform(-1.3, 1.5)
                if not near(math.exp(d), RATIO_BOUNDARIES):
                    break
            delta[i, t] = d
    old = logp - delta
    ref_gap = np.zeros((B, T))
    for i in range(B):
        for t in range(T):
            while True:
                e = rng.uniform(-1.0, 1.0)
                if not near(abs(e), [0.0, math.log(2.0)]):
                    break
            ref_gap[i, t] = e
    ref = logp - ref_gap
    sampler = old - rng.uniform(-0.9, 0.9, size=(B, T))
    entropy = rng.uniform(0.1, 3.0, size=(B, T))
    u = rng.uniform(0.0, 1.0, size=(B, T))
    # Padding positions carry arbitrary (finite) values: they must not matter.
    return {k: f32(v) for k, v in dict(logp=logp, old_logp=old, ref_logp=ref, sampler_logp=sampler,
                                       entropy=entropy, mask=mask, u=u).items()}


def advantages(rewards, est, eps=1e-6):
    r = np.asarray(rewards, dtype=np.float64).reshape(-1, G)
    mean = r.mean(axis=1, keepdims=True)
    std = r.std(axis=1, ddof=1, keepdims=True)
    if est == "group_std":
        a = (r - mean) / (std + eps)
    elif est == "group_mean":
        a = r - mean
    elif est == "batch_std":
        a = (r - mean) / (np.asarray(rewards).std(ddof=1) + eps)
    elif est == "rloo":
        a = r - (r.sum(axis=1, keepdims=True) - r) / (G - 1)
    return a.reshape(-1)


PRESETS = {
    "grpo": dict(adv_estimator="group_std", eps_low=0.2, eps_high=0.2, aggregation="seq_mean_token_mean",
                 kl_coef=0.04, ratio_level="token"),
    "dapo": dict(adv_estimator="group_std", eps_low=0.2, eps_high=0.28, aggregation="token_mean", kl_coef=0.0,
                 ratio_level="token"),
    "dr_grpo": dict(adv_estimator="group_mean", eps_low=0.2, eps_high=0.2, aggregation="seq_mean_token_sum_norm",
                    kl_coef=0.0, ratio_level="token"),
    "gspo": dict(adv_estimator="group_std", eps_low=3e-4, eps_high=4e-4, aggregation="seq_mean_token_mean",
                 kl_coef=0.0, ratio_level="sequence"),
    "rloo": dict(adv_estimator="rloo", eps_low=0.2, eps_high=0.2, aggregation="token_mean", kl_coef=0.0,
                 ratio_level="token"),
}
PRESETS["nfpo"] = dict(PRESETS["dapo"], trace_len=4, trace_clip=True)
PRESETS["owpo"] = dict(PRESETS["dapo"], **{"lambda": 1.0}, weight_min=0.5, weight_max=2.0)
PRESETS["mu_grpo"] = dict(PRESETS["dapo"], eps_low=0.5, eps_high=1.0, dual_clip_c=3.0, veto_threshold=2.0,
                          veto_inclusive=True)
PRESETS["nsr"] = dict(PRESETS["dapo"], rescue_mode="uniform", u_min=0.0, band_width=0.1, band_prob=0.5,
                      band_decay="constant")
COMMON = dict(std_eps=1e-6, dual_clip_c=0.0, two_sided_delta=0.0, norm_len=1024, kl_estimator="k3",
              entropy_coef=0.0, tis="off", tis_level="token", tis_cap=2.0)


def resolve(config):
    k = dict(COMMON)
    k.update(PRESETS[config["kind"]])
    k.update({key: v for key, v in config.items() if key != "kind"})
    return k


def aggregate(x, m, mode, norm_len):
    n = m.sum(dim=1)
    live = (n > 0).sum().clamp(min=1)
    if mode == "token_mean":
        return (x * m).sum() / m.sum().clamp(min=1)
    if mode == "seq_mean_token_mean":
        return ((x * m).sum(dim=1) / n.clamp(min=1)).sum() / live
    if mode == "seq_mean_token_sum":
        return (x * m).sum() / live
    if mode == "seq_mean_token_sum_norm":
        return (x * m).sum() / (live * norm_len)
    raise ValueError(mode)


def kl_term(logp, ref, est):
    if est == "k1":
        return logp - ref
    if est == "k2":
        return 0.5 * (logp - ref) ** 2
    x = torch.clamp(ref - logp, -20, 20)
    k3 = torch.clamp(torch.exp(x) - x - 1, -10, 10)
    if est == "k3":
        return k3
    k2 = 0.5 * (logp - ref) ** 2
    return k2 + (k3 - k2).detach()


def loss_and_grad(inp, config, adv_vec):
    kind = config["kind"]
    k = resolve(config)
    logp = torch.tensor(inp["logp"], requires_grad=True)
    old = torch.tensor(inp["old_logp"])
    ref = torch.tensor(inp["ref_logp"])
    mask = torch.tensor(inp["mask"])
    A = torch.tensor(adv_vec)[:, None].expand(B, T)
    el, eh = k["eps_low"], k["eps_high"]

    lr = torch.clamp(logp - old, -20, 20)
    if k["ratio_level"] == "token":
        w = torch.exp(lr)
    else:  # GSPO-token, spec §1.9
        seq = (lr * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)
        w = torch.exp(torch.clamp(logp - logp.detach() + seq.detach()[:, None], max=10))

    l1_w = torch.minimum(w, torch.tensor(k["two_sided_delta"])) if k["two_sided_delta"] > 0 else w
    L1 = -A * l1_w
    L2 = -A * torch.clamp(w, 1 - el, 1 + eh)
    L = torch.maximum(L1, L2)  # spec §1.3

    m_eff = mask.clone()
    if kind == "nfpo":  # spec §2
        wd = w.detach()
        c = torch.clamp(wd, 1 - el, 1 + eh) if k["trace_clip"] else wd
        trace = torch.ones(B, T)
        for i in range(B):
            n = int(mask[i].sum())
            for t in range(n):
                for j in range(t + 1, min(t + k["trace_len"] - 1, n - 1) + 1):
                    trace[i, t] = trace[i, t] * c[i, j]
        M = ~(((A > 0) & (wd > 1 + eh)) | ((A < 0) & (wd < 1 - el)))
        L = torch.where(M, -trace * w * A, L)
    if kind == "nsr":  # spec §5
        wd = w.detach()
        u01 = torch.tensor(inp["u"])
        cand_hi = (A > 0) & (wd > 1 + eh)
        cand_lo = (A < 0) & (wd < 1 - el)
        if k["rescue_mode"] == "uniform":
            u = k["u_min"] + (1 - k["u_min"]) * u01
            res_hi = cand_hi & (u * wd <= 1 + eh)
            res_lo = cand_lo & (u <= wd / (1 - el))
            L = torch.where(res_hi, -A * u * w, torch.where(res_lo, -A * w, L))
        else:
            far_hi, far_lo = (1 + eh) * (1 + k["band_width"]), (1 - el) / (1 + k["band_width"])
            if k["band_decay"] == "constant":
                p_hi = p_lo = torch.full((B, T), k["band_prob"])
            else:
                p_hi = k["band_prob"] * (far_hi - wd) / (far_hi - (1 + eh))
                p_lo = k["band_prob"] * (wd - far_lo) / ((1 - el) - far_lo)
            res_hi = cand_hi & (wd <= far_hi) & (u01 < p_hi)
            res_lo = cand_lo & (wd >= far_lo) & (u01 < p_lo)
            L = torch.where(res_hi | res_lo, -A * w, L)
    if k["dual_clip_c"] > 0:
        L = torch.where(A < 0, torch.minimum(L, -A * k["dual_clip_c"]), L)
    if kind == "owpo":  # spec §3
        d = torch.sign(A) * (logp.detach() - ref)
        L = L * torch.clamp(torch.exp(-k["lambda"] * d), k["weight_min"], k["weight_max"])
    if kind == "mu_grpo":  # spec §4, explicit loop
        wd = w.detach()
        for i in range(B):
            if adv_vec[i] >= 0:
                continue
            for t in range(T):
                if mask[i, t] == 1 and wd[i, t] > k["veto_threshold"]:
                    start = t if k["veto_inclusive"] else t + 1
                    m_eff[i, start:] = 0
                    break
    if k["tis"] != "off":
        gap = torch.tensor(inp["old_logp"]) - torch.tensor(inp["sampler_logp"])
        if k["tis_level"] == "sequence":
            gap = (gap * mask).sum(dim=1, keepdim=True).expand(B, T)
        tw = torch.exp(torch.clamp(gap, -20, 20))
        if k["tis"] == "truncate":
            L = L * torch.clamp(tw, max=k["tis_cap"])
        else:
            m_eff = m_eff * (tw <= k["tis_cap"]).double()

    loss = aggregate(L, m_eff, k["aggregation"], k["norm_len"])
    if k["kl_coef"] > 0:
        loss = loss + k["kl_coef"] * aggregate(kl_term(logp, ref, k["kl_estimator"]), m_eff, k["aggregation"],
                                                k["norm_len"])
    if k["entropy_coef"] != 0:
        loss = loss - k["entropy_coef"] * aggregate(torch.tensor(inp["entropy"]), m_eff, k["aggregation"],
                                                    k["norm_len"])
    loss.backward()
    return loss.item(), logp.grad.numpy().reshape(-1).tolist(), k


def check_nsr_margins(inp):
    """NSR's rescue decisions compare u·ρ with 1 + ε_h and u·(1 − ε_l) with ρ: keep them away from ties."""
    ratio = np.exp(np.clip(inp["logp"] - inp["old_logp"], -20, 20))
    for u_min in (0.0, 0.5):
        u = u_min + (1 - u_min) * inp["u"]
        gaps = np.concatenate([np.abs(u * ratio - 1.28).ravel(), np.abs(u * 0.8 - ratio).ravel()])
        assert gaps.min() > 1e-4, f"NSR draw too close to a decision boundary (u_min={u_min})"
    for eh, el in ((0.28, 0.2),):
        far_hi, far_lo = (1 + eh) * 1.3, (1 - el) / 1.3
        p_hi = 0.7 * (far_hi - ratio) / (far_hi - (1 + eh))
        p_lo = 0.7 * (ratio - far_lo) / ((1 - el) - far_lo)
        assert np.abs(inp["u"] - p_hi).min() > 1e-4 and np.abs(inp["u"] - p_lo).min() > 1e-4


CASES = [
    ("grpo", {"kind": "grpo"}),
    ("dapo", {"kind": "dapo"}),
    ("dr_grpo", {"kind": "dr_grpo", "norm_len": 8}),
    ("gspo", {"kind": "gspo"}),
    ("gspo_batch_std", {"kind": "gspo", "adv_estimator": "batch_std"}),
    ("rloo", {"kind": "rloo"}),
    ("grpo_dual_k1_seqsum", {"kind": "grpo", "dual_clip_c": 3.0, "kl_estimator": "k1", "kl_coef": 0.1,
                             "aggregation": "seq_mean_token_sum"}),
    ("grpo_k2_entropy", {"kind": "grpo", "kl_estimator": "k2", "entropy_coef": 0.01}),
    ("grpo_k3st", {"kind": "grpo", "kl_estimator": "k3_st"}),
    ("dapo_two_sided", {"kind": "dapo", "two_sided_delta": 1.5}),
    ("dapo_tis_token_truncate", {"kind": "dapo", "tis": "truncate", "tis_cap": 1.5}),
    ("dapo_tis_seq_mask", {"kind": "dapo", "tis": "mask", "tis_level": "sequence", "tis_cap": 2.0}),
    ("nfpo_n3", {"kind": "nfpo", "trace_len": 3}),
    ("nfpo_n4_noclip", {"kind": "nfpo", "trace_len": 4, "trace_clip": False}),
    ("owpo", {"kind": "owpo"}),
    ("mu_grpo", {"kind": "mu_grpo"}),
    ("mu_grpo_exclusive", {"kind": "mu_grpo", "veto_threshold": 1.5, "veto_inclusive": False}),
    ("nsr_uniform", {"kind": "nsr"}),
    ("nsr_uniform_umin", {"kind": "nsr", "u_min": 0.5}),
    ("nsr_band_linear", {"kind": "nsr", "rescue_mode": "band", "band_width": 0.3, "band_prob": 0.7,
                         "band_decay": "linear"}),
]


def main():
    inp = make_inputs()
    seq_gap = ((inp["old_logp"] - inp["sampler_logp"]) * inp["mask"]).sum(axis=1)
    assert not any(near(g, [math.log(2.0)], 1e-3) for g in seq_gap), "sequence TIS weight too close to cap"
    check_nsr_margins(inp)
    cases = []
    for name, config in CASES:
        k = resolve(config)
        adv = advantages(REWARDS, k["adv_estimator"], k["std_eps"])
        adv32 = f32(adv)
        loss, grad, _ = loss_and_grad(inp, config, adv32)
        cases.append(dict(name=name, config=config, advantages=adv.tolist(), loss=loss, grad=grad))
    out = dict(
        note="Generated by scripts/reference.py (PyTorch float64) from the spec formulas; do not edit.",
        B=B, T=T, group_size=G, rewards=REWARDS,
        inputs={key: v.reshape(-1).tolist() for key, v in inp.items()},
        cases=cases,
    )
    path = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "objectives_golden.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    for c in cases:
        print(f"{c['name']:28s} loss {c['loss']:+.6f}  |grad|_1 {sum(abs(g) for g in c['grad']):.6f}")


if __name__ == "__main__":
    main()
