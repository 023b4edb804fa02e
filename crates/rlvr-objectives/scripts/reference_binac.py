"""Independent reference for Bi-NAC's critic reward and group advantages (methods-extra §18).

Written from the spec, not from the Rust code: for each draft d and feedback m,
R_c = mean_j r1[d][m][j] - r0[d] - len_penalty * tokens / max_tokens - leak_penalty * leaked;
the M feedbacks of a draft and the G' revisions of a feedback are GRPO groups,
A = (x - mean) / (std + eps) with the Bessel-corrected std (Dr. GRPO: x - mean), and a group
of equal values gets 0. Writes crates/rlvr-objectives/tests/fixtures/binac_golden.json;
tests/binac.rs must match to 1e-6.

Run: python3 crates/rlvr-objectives/scripts/reference_binac.py
"""

import json
import math
import pathlib
import random


def group_adv(xs, estimator, eps):
    n = len(xs)
    mean = math.fsum(xs) / n
    if all(x == xs[0] for x in xs):
        return [0.0] * n
    if estimator == "group_mean":
        return [x - mean for x in xs]
    std = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
    return [(x - mean) / (std + eps) for x in xs]


def reference(case):
    cfg = case["config"]
    m, g = cfg["feedbacks"], cfg["revisions"]
    est, eps = case["estimator"], case["std_eps"]
    imp, crit, fadv, radv = [], [], [], []
    for d, r0 in enumerate(case["draft_rewards"]):
        group = []
        for k in range(m):
            f = d * m + k
            revs = case["revision_rewards"][f * g:(f + 1) * g]
            i = math.fsum(revs) / g - r0
            pen = cfg["length_penalty"] * case["feedback_tokens"][f] / cfg["feedback_max_tokens"]
            pen += cfg["leak_penalty"] if case["leaked"][f] else 0.0
            imp.append(i)
            group.append(i - pen)
            radv.extend(group_adv(revs, est, eps))
        crit.extend(group)
        fadv.extend(group_adv(group, est, eps))
    return {"improvement": imp, "critic_rewards": crit,
            "feedback_advantages": fadv, "revision_advantages": radv}


def main():
    rng = random.Random(18)
    cases = []
    for k in range(8):
        m, g = rng.choice([2, 3, 4]), rng.choice([2, 3])
        drafts = rng.randint(1, 4)
        cfg = {"feedbacks": m, "revisions": g, "feedback_max_tokens": rng.choice([8, 32]),
               "length_penalty": rng.choice([0.0, 0.1, 0.25]),
               "leak_penalty": rng.choice([0.0, 1.0, 0.5])}
        binary = k % 2 == 0  # verifier rewards in {0, 1}, or partial credit
        reward = (lambda: float(rng.randint(0, 1))) if binary else (lambda: round(rng.random(), 3))
        case = {
            "config": cfg,
            "estimator": "group_mean" if k == 5 else "group_std",
            "std_eps": 1e-6,
            "draft_rewards": [reward() for _ in range(drafts)],
            "feedback_tokens": [rng.randint(0, cfg["feedback_max_tokens"]) for _ in range(drafts * m)],
            "leaked": [rng.random() < 0.25 for _ in range(drafts * m)],
            "revision_rewards": [reward() for _ in range(drafts * m * g)],
        }
        case.update(reference(case))
        cases.append(case)
    out = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "binac_golden.json"
    out.write_text(json.dumps({"cases": cases}, indent=1) + "\n")
    print(f"wrote {len(cases)} cases to {out}")


if __name__ == "__main__":
    main()
