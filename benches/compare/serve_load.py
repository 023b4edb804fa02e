"""Throughput of an OpenAI-compatible server under N concurrent clients.

Each of `--clients` threads sends `--requests-per-client` POST /v1/completions requests one
after the other (stdlib only: threads + urllib), all with the same fixed prompt: `--prompt-len`
token ids `(i*7919 + 13) % vocab` (as bench_worker and generate.py build them) or `--prompt`
text. Every request asks for `--max-tokens` tokens at temperature 1 with `ignore_eos` (vLLM's
extension; rlvr-serve and vLLM honour it, others ignore it), a distinct seed, and
`return_token_ids` so that generated tokens are counted exactly (else `usage`).
One untimed warm-up request first. Prints one JSON line: generated tokens/s, requests/s,
p50/p95 latency.

    python serve_load.py --url http://127.0.0.1:8000 --clients 16 --max-tokens 64
"""

import argparse
import json
import statistics
import threading
import time
import urllib.request

from common import emit


def post(url, body, timeout):
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def generated_tokens(answer):
    choices = answer.get("choices", [])
    if choices and all("token_ids" in c for c in choices):
        return sum(len(c["token_ids"]) for c in choices)
    return answer["usage"]["completion_tokens"]


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", default="http://127.0.0.1:8000", help="server base URL")
    p.add_argument("--model", help="`model` field (default: the first of GET /v1/models)")
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--requests-per-client", type=int, default=1)
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--prompt-len", type=int, default=32, help="token-id prompt length")
    p.add_argument("--vocab", type=int, default=49152, help="vocabulary for the id prompt")
    p.add_argument("--prompt", help="a text prompt instead of token ids")
    p.add_argument("--timeout", type=float, default=600)
    a = p.parse_args()

    base = a.url.rstrip("/")
    model = a.model
    if model is None:
        with urllib.request.urlopen(base + "/v1/models", timeout=a.timeout) as r:
            model = json.loads(r.read())["data"][0]["id"]
    if a.prompt is not None:
        prompt = a.prompt
    else:
        prompt = [(i * 7919 + 13) % a.vocab for i in range(a.prompt_len)]
    url = base + "/v1/completions"

    def body(seed, max_tokens):
        return {
            "model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 1.0,
            "ignore_eos": True, "seed": seed, "return_token_ids": True,
        }

    post(url, body(0, 8), a.timeout)  # warm-up

    latencies, tokens, errors = [], [], []
    lock = threading.Lock()
    start_line = threading.Barrier(a.clients + 1)

    def client(c):
        start_line.wait()
        for r in range(a.requests_per_client):
            t0 = time.perf_counter()
            try:
                answer = post(url, body(1 + c * a.requests_per_client + r, a.max_tokens), a.timeout)
                n = generated_tokens(answer)
            except Exception as e:  # noqa: BLE001 - every failure is counted and reported
                with lock:
                    errors.append(repr(e))
                continue
            with lock:
                latencies.append(time.perf_counter() - t0)
                tokens.append(n)

    threads = [threading.Thread(target=client, args=(c,)) for c in range(a.clients)]
    for t in threads:
        t.start()
    start_line.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0

    emit({
        "workload": "serve_load",
        "url": base,
        "model": model,
        "clients": a.clients,
        "requests": len(latencies),
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "max_tokens": a.max_tokens,
        "prompt_len": a.prompt_len if a.prompt is None else None,
        "generated_tokens": sum(tokens),
        "wall_s": wall,
        "tokens_per_s": sum(tokens) / wall,
        "requests_per_s": len(latencies) / wall,
        "latency_p50_s": statistics.median(latencies) if latencies else None,
        "latency_p95_s": percentile(latencies, 0.95) if latencies else None,
    })


if __name__ == "__main__":
    main()
