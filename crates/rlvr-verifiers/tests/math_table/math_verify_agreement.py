"""Agreement of rlvr-verify and Math-Verify with the hand-labelled set `bare_answers.tsv`.

Not a runtime dependency: run it by hand in a virtual environment.

    python3 -m venv /tmp/mvenv && /tmp/mvenv/bin/pip install math-verify==0.9.0
    cd crates/rlvr-verifiers/tests/math_table
    /tmp/mvenv/bin/python math_verify_agreement.py --write-inputs /tmp/bare.jsonl
    cargo run --release -p rlvr-verifiers --bin rlvr-verify -- --kind math \
        --input /tmp/bare.jsonl --output /tmp/bare.out
    /tmp/mvenv/bin/python math_verify_agreement.py --ours /tmp/bare.out [--misses]

Both forms of every row are scored: the answer alone ("bare") and inside a response (the
`response` column, else the template by row number, as in `tests/math_bare.rs`). Math-Verify is
called as its README shows: `verify(parse(gold), parse(response))`, with the gold wrapped in
`$...$` so that its LaTeX extraction sees it.
"""

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent

TEMPLATES = [
    "Let me work through this carefully.\n\nTherefore, the final answer is $\\boxed{%s}$.",
    "We simplify step by step. So the answer is $%s$.",
    "Putting the pieces together, we obtain $%s$.",
]


def cases():
    out = []
    for line in (HERE / "bare_answers.tsv").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t")
        category, gold, answer, label = cols[:4]
        row = len(out)
        if len(cols) > 4:
            response = cols[4].replace("<br>", "\n")
        else:
            response = TEMPLATES[row % 3] % answer
        out.append(
            {
                "row": row,
                "category": category,
                "gold": gold,
                "label": {"y": True, "n": False, "?": None}[label],
                "forms": {"bare": answer, "response": response},
            }
        )
    return out


def math_verify_passes(gold, response):
    from math_verify import parse, verify

    try:
        return bool(verify(parse("$" + gold + "$"), parse(response)))
    except Exception:  # a crash of the grader is a failed check
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--write-inputs", help="write rlvr-verify's input JSONL here and stop")
    ap.add_argument("--ours", help="rlvr-verify's output JSONL for the written inputs")
    ap.add_argument("--misses", action="store_true", help="list every disagreement")
    args = ap.parse_args()
    data = cases()
    if args.write_inputs:
        with open(args.write_inputs, "w") as f:
            for c in data:
                for form, response in c["forms"].items():
                    rec = {"id": f"{c['row']}:{form}", "response": response, "answer": c["gold"]}
                    f.write(json.dumps(rec) + "\n")
        print(f"wrote {2 * len(data)} items to {args.write_inputs}")
        return
    if not args.ours:
        sys.exit("need --write-inputs or --ours")
    ours = {}
    for line in open(args.ours):
        rec = json.loads(line)
        ours[rec["id"]] = bool(rec["passed"])
    # tallies[grader][form] = counts
    tallies = defaultdict(lambda: defaultdict(lambda: defaultdict(int)))
    per_category = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    misses = []
    for c in data:
        for form, response in c["forms"].items():
            verdicts = {
                "rlvr-verify": ours[f"{c['row']}:{form}"],
                "Math-Verify": math_verify_passes(c["gold"], response),
            }
            for grader, passed in verdicts.items():
                t = tallies[grader][form]
                if c["label"] is None:
                    t["ambiguous"] += 1
                    t["ambiguous_pass"] += passed
                    continue
                t["n"] += 1
                if passed == c["label"]:
                    t["agree"] += 1
                    per_category[(grader, form)][c["category"]][0] += 1
                else:
                    t["false_pass" if passed else "false_fail"] += 1
                    misses.append((grader, form, c["category"], c["gold"], response, c["label"]))
                per_category[(grader, form)][c["category"]][1] += 1
    print("| grader | form | agreement (unambiguous) | false passes | false fails | ambiguous rows passed |")
    print("| --- | --- | --- | --- | --- | --- |")
    for grader in ["rlvr-verify", "Math-Verify"]:
        for form, name in [("bare", "bare answer"), ("response", "in a response")]:
            t = tallies[grader][form]
            print(
                f"| {grader} | {name} | {t['agree']}/{t['n']} ({100 * t['agree'] / t['n']:.1f} %) "
                f"| {t['false_pass']} | {t['false_fail']} | {t['ambiguous_pass']}/{t['ambiguous']} |"
            )
    print()
    cats = sorted({cat for d in per_category.values() for cat in d})
    cols = [(g, f) for g in ["rlvr-verify", "Math-Verify"] for f in ["bare", "response"]]
    print("| category | " + " | ".join(f"{g} {f}" for g, f in cols) + " |")
    print("| --- |" + " --- |" * len(cols))
    for cat in cats:
        cells = []
        for key in cols:
            a, n = per_category[key][cat]
            cells.append(f"{a}/{n}")
        print(f"| {cat} | " + " | ".join(cells) + " |")
    if args.misses:
        print()
        for grader, form, cat, gold, response, label in misses:
            print(f"{grader:12} {form:8} [{cat}] gold {gold!r} response {response!r}: want {label}")


if __name__ == "__main__":
    main()
