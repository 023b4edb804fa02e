"""Independent reference for ReBel's estimator (methods-extra §19), stdlib only.

Written from the spec, not from the Rust code, and computed differently: returns by their
closed-form sums (R_bel[t] = sum_k gamma^(k-t) r_bel[k], R_env[t] = gamma^(T-1-t) R), belief
groups by sorting (prompt, key) pairs, group means by explicit sums. For each case it writes
the per-sequence A_task and per-token offsets w_step * (N(R_env) + N(R_bel)) into
crates/rlvr-objectives/tests/fixtures/rebel_golden.json; tests/rebel.rs must match to 1e-6.

Run: python3 crates/rlvr-objectives/scripts/reference_rebel.py
"""

import json
import pathlib
import random


def belief_reward(step, cfg):
    fmt = 1.0 if step["format_ok"] else -1.0
    return cfg["state_weight"] * step["state"] + cfg["task_weight"] * step["task"] + cfg["format_weight"] * fmt


def reference(rewards, episodes, lens, g, cfg):
    gamma, n = cfg["discount"], len(rewards)
    adv = [0.0] * n
    off = [[0.0] * l for l in lens]
    for p in range(n // g):
        rows = list(range(p * g, (p + 1) * g))
        mean_r = sum(rewards[i] for i in rows) / g
        entries = []  # (key, row, step, R_env, R_bel)
        for i in rows:
            adv[i] = rewards[i] - mean_r
            steps = episodes[i]
            T = len(steps)
            r = [belief_reward(s, cfg) for s in steps]
            for t in range(T):
                r_bel = sum(gamma ** (k - t) * r[k] for k in range(t, T))
                r_env = gamma ** (T - 1 - t) * rewards[i]
                key = steps[t]["key"]
                entries.append(("" if key is None else "k:" + key, i, t, r_env, r_bel))
        entries.sort(key=lambda e: e[0])
        j = 0
        while j < len(entries):
            k = j
            while k < len(entries) and entries[k][0] == entries[j][0]:
                k += 1
            members = entries[j:k]
            if len(members) > 1:
                env_mean = sum(e[3] for e in members) / len(members)
                bel_mean = sum(e[4] for e in members) / len(members)
                for _, i, t, r_env, r_bel in members:
                    a = cfg["step_weight"] * ((r_env - env_mean) + (r_bel - bel_mean))
                    s = episodes[i][t]
                    for tok in range(s["start"], s["end"]):
                        off[i][tok] = a
            j = k
    return adv, off


def random_case(rng, prompts, g, cfg, keys):
    rewards, episodes, lens = [], [], []
    for _ in range(prompts * g):
        rewards.append(rng.choice([0.0, 1.0, 0.5]))
        steps, at = [], 0
        for _ in range(rng.randint(1, 4)):
            at += rng.randint(0, 2)  # observation tokens before the step
            width = rng.randint(1, 3)
            steps.append({
                "start": at, "end": at + width,
                "key": rng.choice(keys),
                "state": float(rng.choice([0, 1])), "task": float(rng.choice([0, 1])),
                "format_ok": rng.random() < 0.8,
            })
            at += width
        rewards_len = at + rng.randint(0, 2)
        episodes.append(steps)
        lens.append(rewards_len)
    return rewards, episodes, lens


def main():
    rng = random.Random(19)
    default = dict(discount=0.95, step_weight=0.5, state_weight=0.3, task_weight=0.4, format_weight=0.1)
    configs = [
        default,
        dict(discount=0.5, step_weight=1.0, state_weight=1.0, task_weight=0.0, format_weight=0.0),
        dict(discount=1.0, step_weight=0.25, state_weight=0.0, task_weight=1.0, format_weight=0.5),
    ]
    keys = ["(1,9)", "(5,9)", "(5,6)", None]
    cases = []
    for c, cfg in enumerate(configs):
        for prompts, g in [(1, 2), (2, 4), (3, 3)]:
            rewards, episodes, lens = random_case(rng, prompts, g, cfg, keys)
            adv, off = reference(rewards, episodes, lens, g, cfg)
            cases.append({"config": cfg, "group_size": g, "rewards": rewards, "episodes": episodes,
                          "response_lens": lens, "advantages": adv, "token_offsets": off})
    path = pathlib.Path(__file__).resolve().parent.parent / "tests/fixtures/rebel_golden.json"
    path.write_text(json.dumps({"cases": cases}, indent=1) + "\n")
    print(f"wrote {len(cases)} cases to {path}")


if __name__ == "__main__":
    main()
