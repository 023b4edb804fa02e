"""Conformance of rlvr-serve with the official `openai` Python client.

Usage: python openai_conformance.py BASE_URL MODEL_NAME   (BASE_URL like http://127.0.0.1:8000)
Run by .ci/openai-conformance, which starts the server on a tiny random model. Each check talks
to the server through the client's typed API, so a response shape the client cannot parse fails.
"""

import sys
import traceback

import openai
from openai import OpenAI

BASE, MODEL = sys.argv[1], sys.argv[2]
client = OpenAI(base_url=f"{BASE}/v1", api_key="unused", max_retries=0, timeout=120)


def extra(obj, name):
    """A field outside OpenAI's schema (pydantic keeps it in model_extra)."""
    return (obj.model_extra or {}).get(name)


def check_models():
    models = client.models.list()
    assert [m.id for m in models.data] == [MODEL], models


def check_completion_with_logprobs():
    r = client.completions.create(
        model=MODEL, prompt="hello world", max_tokens=8, temperature=0.7, seed=3, logprobs=2,
        extra_body={"return_token_ids": True},
    )
    assert r.object == "text_completion"
    c = r.choices[0]
    assert isinstance(c.text, str)
    assert c.finish_reason in ("stop", "length")
    lp = c.logprobs
    n = r.usage.completion_tokens
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == n >= 1, lp
    assert all(x <= 0 for x in lp.token_logprobs)
    assert all(len(t) == 2 for t in lp.top_logprobs)
    assert len(extra(c, "token_ids")) == n
    assert len(extra(c, "prompt_token_ids")) == r.usage.prompt_tokens == 11
    assert r.usage.total_tokens == r.usage.prompt_tokens + n
    assert extra(r, "weights_version") == 0


def check_n_choices():
    r = client.completions.create(model=MODEL, prompt=[5, 6, 7], max_tokens=5, n=3, seed=1)
    assert sorted(c.index for c in r.choices) == [0, 1, 2]


def check_chat():
    r = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
        max_tokens=6, temperature=0, logprobs=True, top_logprobs=2, n=2,
    )
    assert r.object == "chat.completion"
    assert len(r.choices) == 2
    # Greedy: both choices agree.
    assert r.choices[0].message.content == r.choices[1].message.content
    for c in r.choices:
        assert c.message.role == "assistant"
        content = c.logprobs.content
        assert len(content) >= 1
        for entry in content:
            assert entry.logprob <= 0
            assert bytes(entry.bytes).decode("utf-8") == entry.token
            assert len(entry.top_logprobs) == 2


def check_streaming_matches_plain():
    kwargs = dict(model=MODEL, prompt="stream", max_tokens=10, temperature=1.0, seed=11)
    plain = client.completions.create(**kwargs).choices[0].text
    pieces, reasons = [], []
    for chunk in client.completions.create(stream=True, **kwargs):
        for c in chunk.choices:
            pieces.append(c.text)
            if c.finish_reason:
                reasons.append(c.finish_reason)
    assert "".join(pieces) == plain, (pieces, plain)
    assert len(reasons) == 1

    messages = [{"role": "user", "content": "tell me"}]
    plain = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=8, seed=2)
    text, usage, role = "", None, None
    stream = client.chat.completions.create(
        model=MODEL, messages=messages, max_tokens=8, seed=2, stream=True,
        stream_options={"include_usage": True},
    )
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for c in chunk.choices:
            role = role or c.delta.role
            text += c.delta.content or ""
    assert role == "assistant"
    assert text == plain.choices[0].message.content
    assert usage.completion_tokens == plain.usage.completion_tokens


def check_errors():
    try:
        client.completions.create(model=MODEL, prompt="x", n=0)
        raise AssertionError("n = 0 accepted")
    except openai.BadRequestError as e:
        assert e.status_code == 400
        assert e.body["code"] == "invalid_value", e.body
        assert e.body["param"] == "n", e.body
    try:
        client.chat.completions.create(model="no-such-model", messages=[{"role": "user", "content": "x"}])
        raise AssertionError("unknown model accepted")
    except openai.NotFoundError as e:
        assert e.status_code == 404


CHECKS = [
    check_models,
    check_completion_with_logprobs,
    check_n_choices,
    check_chat,
    check_streaming_matches_plain,
    check_errors,
]

passed = failed = 0
for check in CHECKS:
    try:
        check()
        passed += 1
        print(f"ok   {check.__name__}")
    except Exception:  # noqa: BLE001 - report every failing check
        failed += 1
        print(f"FAIL {check.__name__}")
        traceback.print_exc()
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
