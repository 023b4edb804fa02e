"""Independent reference for SCRL's advantages (methods-extra §11), written from the spec.

For a group of G responses to a prompt with L subproblems (the last the original problem):
r[i][k] = prod_{j<=k} c[i][j] for k < L and r[i][L] = reward[i] * prod_{j<L} c[i][j];
A[i][k] = (r[i][k] - mean_k) / (std_k + eps) with the Bessel-corrected std (Dr. GRPO:
r - mean), 0 for a position whose values are all equal. Token t of response i (characters
bounds[t]..bounds[t+1]) gets A[i][k] when its last character lies in segment k < L, else
A[i][L]; an empty token gets A[i][L]. Segment k runs from the end of the last answer found
before k (0 if none) to the end of answer k (empty when answer k is missing); with
answer_span_only it is answer k's own span. Writes tests/fixtures/scrl_golden.json;
tests/scrl.rs must match to 1e-6.

Run: python3 crates/rlvr-objectives/scripts/reference_scrl.py
"""

import json
import math
import pathlib
import random


def position_adv(xs, estimator, eps):
    n = len(xs)
    mean = math.fsum(xs) / n
    if all(x == xs[0] for x in xs):
        return [0.0] * n
    if estimator == "group_mean":
        return [x - mean for x in xs]
    std = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
    return [(x - mean) / (std + eps) for x in xs]


def token_advantages(resp, adv_k, span_only):
    """adv_k[k] for k = 0..L-1 (the last is the original problem's)."""
    L = len(adv_k)
    segments = []  # (start, end, k)
    last_end = 0
    for k in range(L - 1):
        span = resp["spans"][k]
        if span is None:
            continue
        start = span[0] if span_only else last_end
        segments.append((start, span[1], k))
        last_end = span[1]
    out = []
    b = resp["bounds"]
    for t in range(len(b) - 1):
        value = adv_k[L - 1]
        if b[t + 1] > b[t]:
            c = b[t + 1] - 1
            for (s, e, k) in segments:
                if s <= c < e:
                    value = adv_k[k]
        out.append(value)
    return out


def make_case(rng, groups, g, L, estimator, span_only, partial):
    responses = []
    for _ in range(groups * g):
        inter = [rng.random() < 0.6 for _ in range(L - 1)]
        reward = rng.choice([0.0, 0.5, 1.0]) if partial else float(rng.random() < 0.5)
        spans, pos = [], 0
        for _ in range(L):
            pos += rng.randint(0, 3)  # reasoning before the answer
            if rng.random() < 0.15:
                spans.append(None)
                continue
            width = rng.randint(1, 3)
            spans.append([pos, pos + width])
            pos += width
        total = pos + rng.randint(0, 3)
        cuts = sorted(rng.sample(range(1, total), min(total - 1, rng.randint(1, 6)))) if total > 1 else []
        bounds = [0] + cuts + [total, total]  # the last token is an empty end-of-text token
        responses.append({"intermediate": inter, "reward": reward, "spans": spans, "bounds": bounds})
    seq, tok = [], []
    for gi in range(groups):
        rows = responses[gi * g:(gi + 1) * g]
        r = []
        for resp in rows:
            prefix, ok = [], True
            for c in resp["intermediate"]:
                ok = ok and c
                prefix.append(1.0 if ok else 0.0)
            prefix.append(resp["reward"] if ok else 0.0)
            r.append(prefix)
        adv = [position_adv([r[j][k] for j in range(g)], estimator, 1e-6) for k in range(L)]
        for j, resp in enumerate(rows):
            a = [adv[k][j] for k in range(L)]
            seq.append(a[L - 1])
            tok.append(token_advantages(resp, a, span_only))
    return {
        "group_size": g, "estimator": estimator, "std_eps": 1e-6,
        "answer_span_only": span_only, "responses": responses,
        "sequence_advantages": seq, "token_advantages": tok,
    }


def main():
    rng = random.Random(20261206)
    cases = []
    for (groups, g, L, est, span_only, partial) in [
        (2, 4, 2, "group_std", False, False),
        (3, 8, 3, "group_std", False, False),
        (2, 6, 5, "group_std", True, False),
        (2, 4, 1, "group_std", False, True),
        (2, 5, 4, "group_mean", False, True),
        (1, 8, 3, "group_mean", True, False),
        (4, 4, 2, "group_std", False, True),
        (2, 8, 4, "group_std", True, True),
    ]:
        cases.append(make_case(rng, groups, g, L, est, span_only, partial))
    out = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "scrl_golden.json"
    out.write_text(json.dumps({"cases": cases}, indent=1) + "\n")
    print(f"wrote {len(cases)} cases to {out}")


if __name__ == "__main__":
    main()
