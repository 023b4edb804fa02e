"""Independent reference for the search environment's ranking (crates/rlvr-train/src/env/bm25.rs).

Okapi BM25 (Robertson and Zaragoza 2009, eq. 3.15) with Lucene's non-negative IDF,
k1 = 1.2, b = 0.75:

    score(q, d) = sum over query terms t (each occurrence) of
                  idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))
    idf(t)      = ln(1 + (N - n(t) + 0.5) / (n(t) + 0.5))

Terms are the lower-cased runs of letters and digits. Documents that share no term with the
query are left out; equal scores rank by corpus order. Computed here with plain Python dicts
and math.log over a hand-written corpus (documents of different lengths, repeated terms, case
and punctuation) and a few queries; writes
crates/rlvr-train/tests/fixtures/bm25_golden.json, which tests/env.rs reads.

Run: python3 crates/rlvr-train/scripts/reference_bm25.py (stdlib only)
"""

import json
import math
import pathlib
import re

K1, B = 1.2, 0.75


def terms(text):
    return [t.lower() for t in re.findall(r"[^\W_]+", text)]


def rank(corpus, query):
    docs = [terms(d) for d in corpus]
    n_docs = len(docs)
    avgdl = sum(len(d) for d in docs) / n_docs
    df = {}
    for d in docs:
        for t in set(d):
            df[t] = df.get(t, 0) + 1
    scores = []
    for i, d in enumerate(docs):
        s = 0.0
        for t in terms(query):
            tf = d.count(t)
            if tf == 0:
                continue
            idf = math.log(1 + (n_docs - df[t] + 0.5) / (df[t] + 0.5))
            s += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * len(d) / avgdl))
        if s > 0:
            scores.append((i, s))
    scores.sort(key=lambda x: (-x[1], x[0]))
    return scores


CORPUS = [
    "kabo: 412 people; kabo is near muna.",
    "muna: 377 people; muna is near kabo.",
    "zeti: 150 people; zeti is near muna.",
    "The river Kabo floods every spring, and the KABO bridge closes.",
    "A short note.",
    "Muna muna muna: a song about a town named muna, sung in muna and in zeti.",
    "people people people",
    "distance_kabo_muna = 12 km",
    "Ærø is an island; ærø has 6000 people.",
    "",
]

QUERIES = [
    "kabo",
    "muna",
    "kabo muna",
    "muna muna",
    "people",
    "zeti people",
    "KABO!",
    "nothing here",
    "ærø",
    "12 km",
]


def main():
    cases = [
        {"query": q, "ranked": [[i, s] for i, s in rank(CORPUS, q)]} for q in QUERIES
    ]
    out = pathlib.Path(__file__).resolve().parents[1] / "tests/fixtures/bm25_golden.json"
    out.write_text(json.dumps({"k1": K1, "b": B, "corpus": CORPUS, "cases": cases}, indent=1) + "\n")
    print(f"wrote {out} ({len(cases)} queries)")


if __name__ == "__main__":
    main()
