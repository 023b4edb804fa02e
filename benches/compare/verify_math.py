"""math-verify on the same pairs as `bench_worker math`: the reference of the math verifier.

Reads the pairs `bench_worker math-pairs` writes (JSON lines {"dataset", "solution", "gold",
"expected"}); for each, `verify(parse("\\boxed{gold}"), parse(solution))` with math-verify's
defaults, single-threaded. The "warmup" pairs run first, untimed.
"""

import argparse
import json
import time

from common import emit


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pairs", required=True)
    a = p.parse_args()

    import warnings

    warnings.filterwarnings("ignore")
    from math_verify import parse, verify

    pairs = [json.loads(line) for line in open(a.pairs, encoding="utf-8") if line.strip()]
    per_set, total_items, total_s = {}, 0, 0.0
    for dataset in ["warmup", "gsm8k", "math500"]:
        items = [q for q in pairs if q["dataset"] == dataset]
        start = time.perf_counter()
        verdicts = []
        for q in items:
            try:
                ok = bool(verify(parse("\\boxed{" + q["gold"] + "}"), parse(q["solution"])))
            except Exception:  # math-verify raises on a few inputs; count as not verified
                ok = False
            verdicts.append(ok)
        secs = time.perf_counter() - start
        if dataset == "warmup":
            continue
        total_items += len(items)
        total_s += secs
        per_set[dataset] = {
            "items": len(items),
            "positives": sum(q["expected"] for q in items),
            "negatives": sum(not q["expected"] for q in items),
            "positives_verified": sum(q["expected"] and v for q, v in zip(items, verdicts)),
            "negatives_rejected": sum((not q["expected"]) and (not v) for q, v in zip(items, verdicts)),
            "secs": secs,
            "items_per_s": len(items) / secs if secs > 0 else None,
            "verdicts": verdicts,
        }
    emit({
        "workload": "math",
        "value": total_items / total_s,
        "unit": "items/s",
        "items": total_items,
        "secs": total_s,
        "datasets": per_set,
        "threads": 1,
    })


if __name__ == "__main__":
    main()
