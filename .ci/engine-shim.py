#!/usr/bin/env python3
"""A stdlib-only adapter between rlvr-rs's remote rollout client and an external engine.

rlvr-rs's client (crates/rlvr-train/src/rollout_engine/openai.rs) needs two things no external
engine gives as is: a `weights_version` in every completion reply, and
`POST /update_weights_from_disk {"model_path": DIR}` answering `{"success": true,
"weights_version": N}`. This proxy adds both, forwards everything else to the engine, and
records the first request/response pairs it sees (to study the wire shapes).

    engine-shim.py --listen PORT --upstream http://127.0.0.1:UPORT --engine vllm|llama-cpp \
        [--capture DIR] [--tokenizer tokenizer.json]

Weight sync per engine:
  vllm       POST /collective_rpc {"method": "reload_weights", "kwargs": {"weights_path": DIR}}
             (needs VLLM_SERVER_DEV_MODE=1): a real in-place reload of the HF directory.
  llama-cpp  the server has no reload endpoint (and loads GGUF, not a HF directory): the first
             sync is acknowledged without loading anything (the server already holds the
             starting policy, quantized), every later one is refused. Use it with
             rollout.sync_every larger than the run's optimizer steps: rollouts then come from
             the frozen starting policy (off-policy), which the mismatch metrics show.
"""
import argparse
import json
import os
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS = None
VOCAB = None
STATE = {"version": 0, "syncs": 0, "captured": 0}
LOCK = threading.Lock()


def post(path, body, timeout=600):
    req = urllib.request.Request(
        ARGS.upstream + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def capture(name, obj):
    if not ARGS.capture:
        return
    os.makedirs(ARGS.capture, exist_ok=True)
    with open(os.path.join(ARGS.capture, name), "w") as f:
        json.dump(obj, f, indent=1)


def byte_level_table():
    """GPT-2's byte-level BPE alphabet: byte -> the character that stands for it in the vocab."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


class Vocab:
    """The model's tokenizer.json vocabulary (byte-level BPE, as SmolLM2's): ids <-> text."""

    def __init__(self, path):
        tok = json.load(open(path))
        self.id_to_tok = {i: t for t, i in tok["model"]["vocab"].items()}
        self.special = {a["id"]: a["content"] for a in tok.get("added_tokens", [])}
        self.id_to_tok.update(self.special)
        self.tok_to_id = {t: i for i, t in self.id_to_tok.items()}
        self.enc = byte_level_table()
        self.dec = {c: b for b, c in self.enc.items()}

    def decode(self, ids):
        out = bytearray()
        for i in ids:
            t = self.id_to_tok[i]
            out += t.encode() if i in self.special else bytes(self.dec[c] for c in t)
        return out.decode("utf-8")

    def piece_id(self, piece):
        """The id of the one token whose text is `piece`."""
        t = piece if piece in self.tok_to_id and self.tok_to_id[piece] in self.special else (
            "".join(self.enc[b] for b in piece.encode("utf-8")))
        if t not in self.tok_to_id:
            raise ValueError(f"piece {piece!r} is not one token of the vocabulary")
        return self.tok_to_id[t]


def llama_token_ids(choice):
    """llama-cpp-python returns no token ids: its logprobs.tokens are the decoded pieces (a token
    that is part of a UTF-8 character comes back as "" and cannot be recovered: the request
    then fails). Each piece is looked up in the vocabulary."""
    return [VOCAB.piece_id(p) for p in choice["logprobs"]["tokens"]]


def llama_request(body):
    """llama-cpp-python's CreateCompletionRequest takes `prompt: str | list[str]` (a list of
    token ids is a 422), and samples with min_p = 0.05, repeat_penalty = 1.1 and top_k = 40
    unless told otherwise. The token ids are detokenized (and the text checked to tokenize back
    to the same ids), and those samplers are switched off so the engine samples from the
    softmax at the requested temperature, as rlvr-rs does."""
    prompt = body["prompt"]
    if isinstance(prompt, list) and all(isinstance(t, int) for t in prompt):
        # /extras/detokenize drops special tokens (<|im_start|> ...): decode with the vocab.
        text = VOCAB.decode(prompt)
        st2, raw2 = post("/extras/tokenize", {"input": text or ""})
        back = json.loads(raw2).get("tokens") if st2 == 200 else None
        if text is None or back != prompt:
            raise ValueError("the token-id prompt does not round-trip through llama.cpp's "
                             f"tokenizer ({len(prompt)} ids, {len(back or [])} back)")
        prompt = text
    sent = {k: v for k, v in body.items() if k != "return_token_ids"}
    sent.update(prompt=prompt, min_p=0.0, repeat_penalty=1.0)
    if not sent.get("top_k"):
        sent["top_k"] = 0
    return sent


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        try:
            with urllib.request.urlopen(ARGS.upstream + self.path, timeout=10) as r:
                self.reply(r.status, json.loads(r.read() or b"{}"))
        except Exception as e:  # noqa: BLE001
            self.reply(502, {"error": {"message": str(e)}})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        if self.path == "/update_weights_from_disk":
            return self.sync(body)
        if self.path != "/v1/completions":
            st, raw = post(self.path, body)
            return self.reply(st, json.loads(raw or b"{}"))
        sent = body
        if ARGS.engine == "vllm" and isinstance(body.get("seed"), int) and body["seed"] >= 2**63:
            # vLLM's seed is at most 2^63 - 1 (HTTP 400 above); rlvr-rs's request seeds are u64.
            sent = dict(body, seed=body["seed"] & (2**63 - 1))
        if ARGS.engine == "llama-cpp":
            try:
                sent = llama_request(body)
            except ValueError as e:
                return self.reply(400, {"error": {"message": f"shim: {e}"}})
        st, raw = post("/v1/completions", sent)
        try:
            reply = json.loads(raw)
        except ValueError:
            return self.reply(502, {"error": {"message": raw[:300].decode(errors="replace")}})
        with LOCK:
            n = STATE["captured"]
            STATE["captured"] += 1
        if n < 2:
            capture(f"completion-{n}.request.json", body)
            if sent is not body:
                capture(f"completion-{n}.engine-request.json", sent)
            capture(f"completion-{n}.engine-response.json", reply)
        if st == 200:
            try:
                for c in reply.get("choices", []):
                    if ARGS.engine == "llama-cpp" and "token_ids" not in c:
                        c["token_ids"] = llama_token_ids(c)
                        c["logprobs"]["token_logprobs"] = [
                            float(x) for x in c["logprobs"]["token_logprobs"]
                        ]
            except (ValueError, KeyError, TypeError) as e:
                return self.reply(502, {"error": {"message": f"shim: {e}"}})
            reply["weights_version"] = STATE["version"]
        if n < 2:
            capture(f"completion-{n}.shim-response.json", reply)
        self.reply(st, reply)

    def sync(self, body):
        path = body.get("model_path", "")
        with LOCK:
            if ARGS.engine == "vllm":
                st, raw = post(
                    "/collective_rpc",
                    {"method": "reload_weights", "kwargs": {"weights_path": path}},
                )
                if st != 200:
                    return self.reply(200, {"success": False, "message": raw.decode(errors="replace")[:500]})
            elif STATE["syncs"] > 0:
                return self.reply(200, {
                    "success": False,
                    "message": "llama-cpp-python has no weight reload endpoint; only the first "
                    "sync (the starting policy it already serves) is acknowledged. Set "
                    "rollout.sync_every above train.steps.",
                })
            STATE["syncs"] += 1
            STATE["version"] += 1
            out = {"success": True, "weights_version": STATE["version"], "model_path": path,
                   "engine": ARGS.engine,
                   "loaded": ARGS.engine == "vllm"}
        capture(f"sync-{STATE['syncs']}.json", {"request": body, "response": out})
        return self.reply(200, out)


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--listen", type=int, required=True)
    p.add_argument("--upstream", required=True)
    p.add_argument("--engine", choices=["vllm", "llama-cpp"], required=True)
    p.add_argument("--capture")
    p.add_argument("--tokenizer", help="tokenizer.json of the model (llama-cpp: ids <-> text)")
    ARGS = p.parse_args()
    global VOCAB
    if ARGS.engine == "llama-cpp":
        VOCAB = Vocab(ARGS.tokenizer)
    ARGS.upstream = ARGS.upstream.rstrip("/")
    ThreadingHTTPServer(("127.0.0.1", ARGS.listen), Handler).serve_forever()


if __name__ == "__main__":
    main()
