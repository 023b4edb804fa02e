"""Reference values for the ECPO reward (methods-extra §20), written from the spec in stdlib
Python, independently of the Rust code: `tests/ecpo.rs` checks the verifier against them.

    python3 crates/rlvr-verifiers/scripts/reference_ecpo.py > crates/rlvr-verifiers/tests/fixtures/ecpo_golden.json

Definitions (the spec's [PROPOSED] composition):
- relevance(c) = number of intent attributes c has in some span; gain = 2^rel - 1;
  NDCG@k = sum_i gain_i / log2(i + 1) (i = 1-based rank) over the listed items, divided by
  the same sum over the best ordering of the roster's relevances.
- validity = cited spans that exist and whose subject is the listed candidate / cited spans.
- evidence cycle = share of listed items whose cited spans, read without the item's ID, all
  exist, share one subject, that subject is the item, and state all of the item's intent
  attributes (at least one).
- CertNDCG = NDCG with the gains of non-recovered items set to 0.
- reward = gate * (l1 NDCG + l2 validity + l3 cycle) / (l1 + l2 + l3); the gate is 0 for an
  answer that is not `ID digits( ID digits)*;` with <= k distinct roster IDs, at least
  min(k, candidates of relevance >= 1) of them, and no span cited twice by one item.
"""

import json
import math
import re

STORE_A = {
    "intent": ["R", "B"],
    "spans": [["KA", "R"], ["MO", "B"], ["KA", "B"], ["LU", "R"], ["ZE", "G"]],
    "k": 2,
}
# Two candidates tie at relevance 1, a relevance-2 one supported by three spans (one off-intent).
STORE_B = {
    "intent": ["S", "T"],
    "spans": [["QX", "S"], ["PD", "T"], ["QX", "W"], ["VN", "S"], ["QX", "T"]],
    "k": 2,
}

# A single relevant candidate: min(k, relevant) = 1.
STORE_C = {
    "intent": ["G", "W"],
    "spans": [["PA", "R"], ["NB", "W"], ["PA", "S"], ["TQ", "B"]],
    "k": 2,
}

CASES = [
    (STORE_A, "KA13 MO2;"),  # ideal and certified
    (STORE_A, "KA13 LU4;"),  # the tied alternative: also ideal
    (STORE_A, "MO2 KA13;"),  # swapped
    (STORE_A, "KA1 MO2;"),  # incomplete certificate for KA
    (STORE_A, "KA12 MO2;"),  # KA cites MO's span
    (STORE_A, "KA13 MO9;"),  # a span that does not exist
    (STORE_A, "KA13 ZE5;"),  # the hard negative, certified by its own span
    (STORE_A, "KA13;"),  # gate: one item where two are relevant
    (STORE_A, "ZE5;"),  # gate: only the hard negative
    (STORE_C, "NB2;"),  # one relevant candidate: one item is the full list
    (STORE_A, "KA31 MO2; and more"),  # citation order and trailing text do not matter
    (STORE_A, "KA13 MO2"),  # gate: no `;`
    (STORE_A, "KA13 QQ2;"),  # gate: not on the roster
    (STORE_A, "KA13 KA1;"),  # gate: repeated candidate
    (STORE_A, "KA13 MO2 LU4;"),  # gate: k exceeded
    (STORE_A, "KA133;"),  # gate: repeated citation
    (STORE_B, "QX15 PD2;"),  # ideal: QX's off-intent span left out
    (STORE_B, "QX135 VN4;"),  # citing the off-intent span too is still recovered
    (STORE_B, "QX3 PD2;"),  # only the off-intent span: valid, not recovered
    (STORE_B, "PD2 VN4;"),  # misses the best candidate
]

WEIGHTS = [(0.5, 0.25, 0.25), (1.0, 0.0, 0.0), (0.0, 1.0, 3.0)]


def parse(response, store):
    if ";" not in response:
        return None
    body = response.lstrip().split(";", 1)[0]
    words = body.split(" ")
    if body.strip() == "":
        return None
    roster = {s for s, _ in store["spans"]}
    items = []
    for w in words:
        m = re.fullmatch(r"([A-Z]+)([0-9]+)", w)
        if not m:
            return None
        cid, digits = m.group(1), [int(d) for d in m.group(2)]
        if len(set(digits)) != len(digits) or cid in [i[0] for i in items] or cid not in roster:
            return None
        items.append((cid, digits))
    if len(items) > store["k"]:
        return None
    relevant = sum(1 for c in roster if rel(store, c) > 0)
    if len(items) < min(store["k"], relevant):
        return None
    return items


def rel(store, c):
    return len({a for s, a in store["spans"] if s == c and a in store["intent"]})


def dcg(rels):
    return sum((2**r - 1) / math.log2(i + 1) for i, r in enumerate(rels, start=1))


def recovered(store, cid, cited):
    spans = store["spans"]
    if any(j < 1 or j > len(spans) for j in cited):
        return False
    subjects = {spans[j - 1][0] for j in cited}
    attested = {spans[j - 1][1] for j in cited} & set(store["intent"])
    support = {a for s, a in spans if s == cid and a in store["intent"]}
    return subjects == {cid} and len(support) > 0 and attested == support


def terms(store, items):
    roster = sorted({s for s, _ in store["spans"]})
    ideal = dcg(sorted((rel(store, c) for c in roster), reverse=True)[: store["k"]])
    got = dcg([rel(store, c) for c, _ in items])
    cert = dcg([rel(store, c) if recovered(store, c, cited) else 0 for c, cited in items])
    n_cited = sum(len(cited) for _, cited in items)
    n_valid = sum(
        1
        for c, cited in items
        for j in cited
        if 1 <= j <= len(store["spans"]) and store["spans"][j - 1][0] == c
    )
    n_rec = sum(1 for c, cited in items if recovered(store, c, cited))
    return {
        "ndcg": got / ideal,
        "validity": n_valid / n_cited,
        "cycle": n_rec / len(items),
        "cert_ndcg": cert / ideal,
    }


def main():
    out = []
    for store, response in CASES:
        items = parse(response, store)
        case = dict(store)
        case["response"] = response
        if items is None:
            case["gate"] = False
            case["terms"] = {"ndcg": 0.0, "validity": 0.0, "cycle": 0.0, "cert_ndcg": 0.0}
            case["rewards"] = [0.0 for _ in WEIGHTS]
        else:
            t = terms(store, items)
            case["gate"] = True
            case["terms"] = t
            case["rewards"] = [
                (l1 * t["ndcg"] + l2 * t["validity"] + l3 * t["cycle"]) / (l1 + l2 + l3)
                for l1, l2, l3 in WEIGHTS
            ]
        case["passed"] = case["terms"]["cert_ndcg"] >= 1 - 1e-9
        out.append(case)
    print(json.dumps({"weights": WEIGHTS, "cases": out}, indent=1))


if __name__ == "__main__":
    main()
