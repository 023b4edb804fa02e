"""Reward for the bundled arithmetic task (`kind = "command"`): 1 when the last number of the
response equals the record's `answer`, else 0. Reads one JSON request per line on stdin, writes
one JSON verdict per line on stdout."""
import json, re, sys

NUMBER = re.compile(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
for line in sys.stdin:
    request = json.loads(line)
    numbers = NUMBER.findall(request["response"])
    ok = bool(numbers) and float(numbers[-1].replace(",", "")) == float(request["answer"])
    outcome = "correct" if ok else ("wrong" if numbers else "unparseable")
    print(json.dumps({"reward": float(ok), "outcome": outcome}), flush=True)
