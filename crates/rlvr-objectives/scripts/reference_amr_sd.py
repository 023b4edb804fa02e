"""Independent reference for the AMR-SD stage of rlvr-objectives (gate and annealing).

Implements the formulas of the method specification (methods-extra.md section 16, steps 2-4)
directly in numpy float64, vectorized over tokens (np.where / np.clip instead of the Rust
per-token branch), on hand-written cases, and writes tests/fixtures/amr_sd_golden.json. The Rust
test (tests/amr_sd.rs) feeds the same inputs to the pure functions and to `StagesConfig::apply`
and must match to 1e-6.

CIG_t = hint_logp_t - logp_t;
A > 0: m_t = 1 + lam * min(m_max, relu(CIG_t - tau_pos));
A < 0: m_t = 1 + lam * min(m_max, relu(-CIG_t - tau_neg));
A = 0 or no hint: m_t = 1. Token advantage A * m_t; offset A * (m_t - 1).
lam_k = lam0 * max(0, 1 - k / K), K = anneal_steps or max(1, run_steps // 2).

Run: python crates/rlvr-objectives/scripts/reference_amr_sd.py (needs numpy)
"""

import json
import pathlib

import numpy as np

EPS = 1e-6


def f32(xs):
    return [float(np.float32(x)) for x in xs]


def multipliers(cig, adv, lam, tau_pos, tau_neg, m_max):
    cig = np.asarray(cig, dtype=np.float64)
    excess = np.sign(adv) * cig - np.where(adv > 0, tau_pos, tau_neg)
    gated = np.clip(excess, 0.0, m_max) if adv != 0 else np.zeros_like(cig)
    return 1.0 + lam * gated


def anneal(lam0, k, anneal_steps, run_steps):
    horizon = anneal_steps if anneal_steps is not None else max(1, run_steps // 2)
    return lam0 * max(0.0, 1.0 - k / horizon)


def grpo(rewards, g):
    r = np.asarray(rewards, dtype=np.float64).reshape(-1, g)
    out = np.zeros_like(r)
    for i, row in enumerate(r):
        if np.all(row == row[0]):
            continue
        out[i] = (row - row.mean()) / (row.std(ddof=1) + EPS)
    return out.reshape(-1)


def main():
    out = {}
    d = dict(tau_pos=0.5, tau_neg=1.0, m_max=1.0)
    gate_cases = [
        # Positive: below, exactly at, above tau_pos, and past the cap.
        dict(cig=[0.25, 0.5, 1.0, 3.0], adv=2.0, lam=0.5, **d),
        # The same CIG on a negative rollout: nothing passes tau_neg.
        dict(cig=[0.25, 0.5, 1.0, 3.0], adv=-2.0, lam=0.5, **d),
        # Negative: exactly at -tau_neg, past it, past the cap, and a positive CIG.
        dict(cig=[-1.0, -1.25, -2.5, 0.75], adv=-0.5, lam=0.5, **d),
        # A = 0: m = 1 whatever the CIG.
        dict(cig=[5.0, -5.0], adv=0.0, lam=0.5, **d),
        # lambda = 0 (after the annealing): m = 1.
        dict(cig=[5.0, -5.0], adv=1.0, lam=0.0, **d),
        # A smaller cap and other thresholds, lambda above 1.
        dict(cig=[0.125, 0.375, 2.0, -0.5], adv=0.75, lam=2.0, tau_pos=0.0, tau_neg=0.25,
             m_max=0.3),
        dict(cig=[0.125, -0.375, -2.0, -0.25], adv=-1.5, lam=2.0, tau_pos=0.0, tau_neg=0.25,
             m_max=0.3),
    ]
    for c in gate_cases:
        m = multipliers(c["cig"], c["adv"], c["lam"], c["tau_pos"], c["tau_neg"], c["m_max"])
        c["multipliers"] = [float(x) for x in m]
        c["offsets"] = [float(x) for x in c["adv"] * (m - 1.0)]
    out["gate"] = gate_cases

    # Annealing: lam0 = 0.5, K = 10 (set) at k = 0, K/2, K, past K; K from run_steps = 20.
    ks = [0, 5, 10, 12]
    out["anneal"] = {
        "lambda0": 0.5,
        "anneal_steps": 10,
        "steps": ks,
        "set": [anneal(0.5, k, 10, 0) for k in ks],
        "run_steps": 20,
        "from_run": [anneal(0.5, k, None, 20) for k in ks],
        "run_steps_odd": 7,
        "from_odd_run": [anneal(0.5, k, None, 7) for k in [0, 1, 2, 3, 4]],
    }

    # The stage: two groups of 4 under GRPO, step 0, lam0 = 0.5, run_steps = 4 (K = 2).
    # Row 2 has no hint (empty), group 2 is all-correct (A = 0).
    rewards = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    logp = [
        [-1.0, -2.0, -0.5],
        [-0.25, -3.0],
        [-1.0, -1.0, -1.0],
        [-2.0, -0.125, -0.75, -1.5],
        [-0.5, -0.5],
        [-1.0],
        [-0.25, -0.25],
        [-2.0, -2.0],
    ]
    hint = [
        [-0.25, -2.0, 0.0],  # CIG (0.75, 0, 0.5): gated 0.25, 0, 0 (exactly tau_pos)
        [-2.0, -0.5],  # CIG (-1.75, 2.5): gated 0.75, 0 on a negative row
        [],  # no hint
        [0.0, -0.25, -0.125, -1.0],  # CIG (2, -0.125, 0.625, 0.5): capped 1, 0, 0.125, 0
        [0.0, 0.0],  # all-correct group: A = 0, m = 1
        [-0.5],
        [-0.25, -0.25],
        [0.0, 0.0],
    ]
    lam = anneal(0.5, 0, None, 4)
    adv = grpo(rewards, 4)
    token_adv, offsets = [], []
    n_gate = gated = m_sum = 0.0
    cig_pos = cig_neg = n_pos = n_neg = 0.0
    rows = 0
    for i in range(len(rewards)):
        if not hint[i]:
            token_adv.append([float(adv[i])] * len(logp[i]))
            offsets.append([])
            continue
        rows += 1
        cig = np.asarray(hint[i], dtype=np.float64) - np.asarray(logp[i], dtype=np.float64)
        m = multipliers(cig, adv[i], lam, 0.5, 1.0, 1.0)
        token_adv.append([float(x) for x in adv[i] * m])
        offsets.append([float(x) for x in adv[i] * (m - 1.0)])
        if adv[i] != 0:
            n_gate += len(m)
            gated += float(np.sum(m > 1.0))
            m_sum += float(np.sum(m))
            if adv[i] > 0:
                cig_pos += float(np.sum(cig))
                n_pos += len(cig)
            else:
                cig_neg += float(np.sum(cig))
                n_neg += len(cig)
    out["stage"] = {
        "rewards": rewards,
        "logp": logp,
        "hint_logp": hint,
        "lambda0": 0.5,
        "run_steps": 4,
        "advantages": f32(adv),
        "token_advantages": token_adv,
        "offsets": offsets,
        "metrics": {
            "shaping/amr_sd_lambda": lam,
            "shaping/amr_sd_hint_rows": rows,
            "shaping/amr_sd_gated_frac": gated / max(n_gate, 1),
            "shaping/amr_sd_m_mean": m_sum / n_gate if n_gate else 1.0,
            "shaping/amr_sd_cig_pos_mean": cig_pos / max(n_pos, 1),
            "shaping/amr_sd_cig_neg_mean": cig_neg / max(n_neg, 1),
        },
        # At step 2 = K the annealing has ended: lambda 0, no offsets.
        "late_step": 2,
        "late_lambda": anneal(0.5, 2, None, 4),
    }

    path = pathlib.Path(__file__).resolve().parent.parent / "tests/fixtures/amr_sd_golden.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
