"""Independent reference for GeoX-style self-play rewards (methods-extra §21, [PROPOSED]
Absolute-Zero pattern).

Written from the spec, not from the Rust code: a proposal that does not run earns
invalid_reward; a valid one whose n solver answers have mean s earns 1 - s when 0 < s < 1,
else 0. The n answers to one proposed task are a GRPO group, A = (x - mean) / (std + eps) with
the Bessel-corrected std (group_mean: x - mean), and a group of equal values gets 0. Writes
crates/rlvr-objectives/tests/fixtures/geox_golden.json; tests/geox.rs must match to 1e-6.

Run: python3 crates/rlvr-objectives/scripts/reference_geox.py
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
    n = case["config"]["solver_samples"]
    rewards, rates, adv = [], [], []
    k = 0
    for v in case["valid"]:
        if not v:
            rewards.append(case["config"]["invalid_reward"])
            continue
        answers = case["solver_rewards"][k * n:(k + 1) * n]
        k += 1
        s = math.fsum(answers) / n
        rates.append(s)
        rewards.append(1.0 - s if 0.0 < s < 1.0 else 0.0)
        adv.extend(group_adv(answers, case["estimator"], case["std_eps"]))
    return {"proposer_rewards": rewards, "solve_rates": rates, "solver_advantages": adv}


def main():
    rng = random.Random(21)
    cases = []
    for k in range(8):
        n = rng.choice([2, 3, 4, 8])
        proposals = rng.randint(1, 6)
        valid = [rng.random() < 0.7 for _ in range(proposals)]
        if k == 0:
            valid = [False] * proposals  # nothing to solve
        case = {
            "config": {"solver_samples": n, "invalid_reward": rng.choice([-0.5, -1.0, 0.0])},
            "estimator": "group_mean" if k == 5 else "group_std",
            "std_eps": 1e-6,
            "valid": valid,
            "solver_rewards": [float(rng.randint(0, 1)) for _ in range(sum(valid) * n)],
        }
        case.update(reference(case))
        cases.append(case)
    out = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "geox_golden.json"
    out.write_text(json.dumps({"cases": cases}, indent=1) + "\n")
    print(f"wrote {len(cases)} cases to {out}")


if __name__ == "__main__":
    main()
