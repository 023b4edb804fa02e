"""Independent reference for the token-credit stages of rlvr-objectives: CEPO and OPPO.

Implements the formulas of the method specification (methods-extra.md: OPPO section 14, CEPO
section 15) directly in numpy float64, vectorized over tokens (cumulative sums instead of the
Rust loop), on hand-written cases, and writes tests/fixtures/token_credit_golden.json. The Rust
tests (tests/token_credit.rs) feed the same inputs to the pure functions and to
`StagesConfig::apply` and must match to 1e-6.

CEPO: w_t = clip(exp(sign(A) delta_t), 1 - eps_w, 1 + eps_w); A_t = A ((1 - lam) + lam w_t);
lam = max(0, lam_init (1 - step / warmup)) (linear) or lam_init (constant).
OPPO: p0 = clip(pass_rate, 1/(2G), 1 - 1/(2G)); d = clip(lo - l, -c, c);
p_t = min(1, p0 exp(cumsum d)) for t < T; A_t = p_t - p_{t-1} (t < T), A_T = r - p_{T-1};
optionally divided by (unbiased group std + eps); all-equal groups zeroed unless kept.

Run: python crates/rlvr-objectives/scripts/reference_token_credit.py (needs numpy)
"""

import json
import pathlib

import numpy as np

EPS = 1e-6


def f32(xs):
    return [float(np.float32(x)) for x in xs]


def cepo_lambda(lam_init, warmup, step, schedule):
    if schedule == "constant":
        return lam_init
    return max(0.0, lam_init * (1.0 - step / warmup))


def cepo_tokens(delta, adv, lam, eps_w):
    delta = np.asarray(delta, dtype=np.float64)
    w = np.clip(np.exp(np.sign(adv) * delta), 1.0 - eps_w, 1.0 + eps_w)
    return adv * ((1.0 - lam) + lam * w)


def grpo(rewards, g):
    r = np.asarray(rewards, dtype=np.float64).reshape(-1, g)
    out = np.zeros_like(r)
    for i, row in enumerate(r):
        if np.all(row == row[0]):
            continue
        out[i] = (row - row.mean()) / (row.std(ddof=1) + EPS)
    return out.reshape(-1)


def oppo_tokens(logp, oracle, reward, pass_rate, g, clip):
    logp = np.asarray(logp, dtype=np.float64)
    oracle = np.asarray(oracle, dtype=np.float64)
    n = len(logp)
    floor = 1.0 / (2.0 * g)
    p0 = min(max(pass_rate, floor), 1.0 - floor)
    d = np.clip(oracle - logp, -clip, clip)
    p = np.minimum(1.0, p0 * np.exp(np.cumsum(d[: n - 1])))
    prev = np.concatenate([[p0], p])  # p_0 .. p_{T-1}
    adv = np.empty(n)
    adv[: n - 1] = p - prev[: n - 1]
    adv[n - 1] = reward - prev[n - 1]
    return adv, p0


def oppo_group(logps, oracles, rewards, passed, g, clip, scale, keep):
    out = []
    for gi in range(len(rewards) // g):
        rows = range(gi * g, (gi + 1) * g)
        r = np.asarray([rewards[i] for i in rows], dtype=np.float64)
        rate = float(np.mean([passed[i] for i in rows]))
        if np.all(r == r[0]):
            factor = 1.0 if keep else 0.0
        elif scale:
            factor = 1.0 / (r.std(ddof=1) + EPS)
        else:
            factor = 1.0
        for i in rows:
            a, _ = oppo_tokens(logps[i], oracles[i], rewards[i], rate, g, clip)
            out.append(list(a * factor))
    return out


def main():
    rng = np.random.RandomState(19)
    cepo_cases = []
    # Hand-written: both clip sides, an unclipped token, A < 0, A = 0, lambda 1 and 0.5.
    hand = [
        ([0.5, -0.5, 0.1, 0.0], 1.5, 1.0, 0.2),
        ([0.5, -0.5, 0.1, -0.05], -0.8, 0.5, 0.2),
        ([2.0, -2.0], 0.0, 1.0, 0.2),
        ([0.3, -0.02, 0.15], 0.7, 0.25, 0.1),
    ]
    for delta, adv, lam, eps_w in hand:
        delta = f32(delta)
        cepo_cases.append(
            {"delta": delta, "advantage": adv, "lambda": lam, "eps_w": eps_w,
             "expected": list(cepo_tokens(delta, np.float32(adv), lam, eps_w))}
        )
    # CEPO inside the stages: GRPO on rewards, then CEPO at step 0 of warmup 4 (lambda 1),
    # two groups of 4 (one all-correct, delta 0 there, as the trainer sends).
    rewards = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    lens = [3, 2, 4, 1, 2, 3, 2, 2]
    deltas = []
    for i, n in enumerate(lens):
        deltas.append([0.0] * n if i >= 4 else f32(rng.uniform(-0.4, 0.4, n)))
    adv = grpo(rewards, 4).astype(np.float32)
    lam = cepo_lambda(0.8, 4, 0, "linear")
    tokens = [list(cepo_tokens(d, a, lam, 0.2)) for d, a in zip(deltas, adv)]
    pos = [d for dl, a in zip(deltas, adv) if a > 0 for d in dl]
    neg = [d for dl, a in zip(deltas, adv) if a < 0 for d in dl]
    all_tok = [(a, t) for dl, a, tl in zip(deltas, adv, tokens) for t in tl]
    cepo_stage = {
        "rewards": rewards, "group_size": 4, "deltas": deltas,
        "lambda_init": 0.8, "warmup_steps": 4, "eps_w": 0.2,
        "advantages": [float(a) for a in adv], "token_advantages": tokens, "lambda": lam,
        "metrics": {
            "shaping/cepo_lambda": lam,
            "shaping/cepo_delta_pos_mean": float(np.mean(pos)),
            "shaping/cepo_delta_neg_mean": float(np.mean(neg)),
            "shaping/cepo_wrong_pos_frac": float(np.mean(np.asarray(pos) < 0)),
            "shaping/cepo_wrong_neg_frac": float(np.mean(np.asarray(neg) > 0)),
            "shaping/cepo_adv_abs_before": float(np.mean([abs(a) for a, _ in all_tok])),
            "shaping/cepo_adv_abs_after": float(np.mean([abs(t) for _, t in all_tok])),
        },
    }
    lambdas = {
        "linear": [cepo_lambda(0.5, 25, s, "linear") for s in range(0, 30, 5)],
        "constant": [cepo_lambda(0.5, 25, s, "constant") for s in range(0, 30, 5)],
    }

    oppo_cases = []
    hand = [
        # p0 = 0.5; moderate deltas, reward 1.
        ([-1.0, -2.0, -0.5, -1.5], [-0.8, -2.3, -0.1, -1.0], 1.0, 0.5, 4, 5.0),
        # Saturation: the running sum passes log 1, then drops back below it.
        ([-2.0, -1.0, -1.0, -3.0, -1.0], [-1.5, -0.8, -2.2, -3.5, -1.0], 1.0, 0.75, 4, 5.0),
        # Clip: |delta| = 7 and 6 > 5; all-wrong group (p0 = 1/(2G) = 1/16), reward 0.
        ([-9.0, -0.5, -4.0], [-2.0, -6.5, -3.0], 0.0, 0.0, 8, 5.0),
        # One token: A_1 = r - p0; clip knob 1.
        ([-0.3], [-0.1], 0.0, 1.0, 4, 1.0),
    ]
    for logp, oracle, r, rate, g, clip in hand:
        logp, oracle = f32(logp), f32(oracle)
        a, p0 = oppo_tokens(logp, oracle, r, rate, g, clip)
        oppo_cases.append(
            {"logp": logp, "oracle_logp": oracle, "reward": r, "pass_rate": rate,
             "group_size": g, "delta_clip": clip, "expected": list(a), "p0": p0}
        )
    # OPPO inside the stages: 3 groups of 3 (mixed, all-correct, mixed with a reward of 0.5).
    rewards = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.5, 1.0, 0.0]
    passed = [r >= 1.0 for r in rewards]
    lens = [3, 4, 2, 2, 3, 1, 4, 2, 3]
    logps = [f32(rng.uniform(-3.0, -0.05, n)) for n in lens]
    oracles = [f32(np.asarray(lp) + rng.uniform(-1.5, 1.5, len(lp))) for lp in logps]
    stage = {"rewards": rewards, "passed": passed, "group_size": 3, "logp": logps,
             "oracle_logp": oracles, "variants": []}
    for scale, keep in [(True, False), (False, True)]:
        stage["variants"].append(
            {"scale_by_group_std": scale, "keep_collapsed": keep,
             "token_advantages": oppo_group(logps, oracles, rewards, passed, 3, 5.0, scale, keep)}
        )

    out = {"cepo": cepo_cases, "cepo_stage": cepo_stage, "cepo_lambdas": lambdas,
           "oppo": oppo_cases, "oppo_stage": stage}
    path = pathlib.Path(__file__).resolve().parent.parent / "tests/fixtures/token_credit_golden.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
