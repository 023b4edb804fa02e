#!/usr/bin/env python3
"""Generation throughput of an OpenAI-compatible /v1/completions endpoint at a concurrency.

    engine-throughput.py URL TEMPLATE.json CONCURRENCY [MAX_TOKENS] [ROUNDS]

TEMPLATE.json: a request body as rlvr-rs's client sends it (token-id prompt, n = 1, seed,
logprobs = 0, return_token_ids). CONCURRENCY × ROUNDS requests with distinct seeds go out,
CONCURRENCY in flight; prints the generated tokens (from usage.completion_tokens) per second
of wall time and the mean request latency, as one JSON line.
"""
import json
import sys
import threading
import time
import urllib.request

url, template, conc = sys.argv[1].rstrip("/"), json.load(open(sys.argv[2])), int(sys.argv[3])
max_tokens = int(sys.argv[4]) if len(sys.argv) > 4 else 64
rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 2
total = conc * rounds
lock = threading.Lock()
state = {"next": 0, "tokens": 0, "lat": [], "errors": 0}


def worker():
    while True:
        with lock:
            i = state["next"]
            state["next"] += 1
        if i >= total:
            return
        body = dict(template, max_tokens=max_tokens, seed=1000 + i)
        req = urllib.request.Request(url + "/v1/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        t = time.time()
        try:
            with urllib.request.urlopen(req, timeout=1800) as r:
                reply = json.loads(r.read())
            n = reply["usage"]["completion_tokens"]
        except Exception:  # noqa: BLE001
            with lock:
                state["errors"] += 1
            continue
        with lock:
            state["tokens"] += n
            state["lat"].append(time.time() - t)


start = time.time()
threads = [threading.Thread(target=worker) for _ in range(conc)]
for th in threads:
    th.start()
for th in threads:
    th.join()
wall = time.time() - start
lat = state["lat"]
print(json.dumps({
    "concurrency": conc, "requests": total, "errors": state["errors"],
    "max_tokens": max_tokens, "generated_tokens": state["tokens"],
    "wall_s": round(wall, 2), "tokens_per_s": round(state["tokens"] / wall, 1),
    "mean_latency_s": round(sum(lat) / max(len(lat), 1), 2),
    "load_avg_1m_after": open("/proc/loadavg").read().split()[0],
}))
