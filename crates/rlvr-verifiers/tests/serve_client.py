"""A client of `rlvr-verify serve` written the way another framework would call it: standard
library only (urllib). Run by tests/serve.rs as `python3 tests/serve_client.py http://HOST:PORT`;
exits 0 after every check passed, else 1 with the failed check on stderr."""

import base64
import json
import sys
import urllib.error
import urllib.request

BASE = sys.argv[1].rstrip("/")
checks = 0


def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(BASE + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def expect(cond, what, got=None):
    global checks
    if not cond:
        sys.stderr.write("FAILED: %s; got %r\n" % (what, got))
        sys.exit(1)
    checks += 1


# GET /health
status, health = call("GET", "/health")
expect(status == 200 and health["status"] == "ok", "health is ok", health)
expect({"math", "code", "rubric"} <= set(health["kinds"]), "health lists the kinds", health)

# POST /verify, math: right, wrong, unparseable, and a malformed item in place.
status, reply = call("POST", "/verify", {"kind": "math", "items": [
    {"id": "a", "response": "so the answer is \\boxed{\\frac{1}{2}}", "answer": "0.5"},
    {"id": "b", "response": "#### 7", "answer": "8"},
    {"id": "c", "response": "I do not know", "answer": "8"},
    {"id": "d", "answer": "1"},
]})
expect(status == 200, "verify math answers 200", reply)
res = reply["results"]
expect([r["id"] for r in res] == ["a", "b", "c", "d"], "results keep item order", res)
expect(res[0]["passed"] is True and res[0]["reward"] == 1.0, "1/2 equals 0.5", res[0])
expect(res[1]["outcome"] == "wrong" and res[1]["reward"] == 0.0, "7 is not 8", res[1])
expect(res[2]["reward"] == 0.0 and not res[2]["passed"], "no answer scores 0", res[2])
expect("response" in res[3]["error"] and res[3]["index"] == 3, "malformed item named", res[3])

# POST /verify, code: MBPP asserts with partial credit, and HumanEval check.
status, reply = call("POST", "/verify", {"kind": "code", "items": [
    {"id": 1, "response": "```python\ndef sq(x):\n    return x * x\n```",
     "tests": ["assert sq(2) == 4", "assert sq(3) == 9"]},
    {"id": 2, "response": "def sq(x):\n    return 4",
     "tests": ["assert sq(2) == 4", "assert sq(3) == 9"]},
    {"id": 3, "response": "def inc(x):\n    return x + 1", "entry_point": "inc",
     "test": "def check(candidate):\n    assert candidate(1) == 2\n"},
]})
expect(status == 200, "verify code answers 200", reply)
res = reply["results"]
expect(res[0]["outcome"] == "correct" and res[0]["reward"] == 1.0, "correct program", res[0])
expect(res[1]["outcome"] == "partial" and res[1]["reward"] == 0.5, "one of two tests", res[1])
expect(res[2]["passed"] is True, "HumanEval check passes", res[2])

# POST /run_code in SandboxFusion's shape.
status, reply = call("POST", "/run_code", {"code": "print(sum(range(10)))", "language": "python"})
expect(status == 200 and reply["status"] == "Success", "run_code success", reply)
run = reply["run_result"]
expect(run["status"] == "Finished" and run["return_code"] == 0, "finished with 0", run)
expect(run["stdout"] == "45\n", "stdout is 45", run)
expect(reply["compile_result"] is None and reply["files"] == {}, "python has no compile step",
       reply)
expect(isinstance(run["execution_time"], float), "execution_time is a float", run)

status, reply = call("POST", "/run_code", {
    "code": "import sys\nname = input()\nprint('hi', name, open('in/data.txt').read())\n"
            "sys.stderr.write('bye')\nsys.exit(2)",
    "language": "python", "stdin": "ann\n",
    "files": {"in/data.txt": base64.b64encode(b"xyz").decode()}})
run = reply["run_result"]
expect(reply["status"] == "Failed" and run["return_code"] == 2, "exit 2 is Failed", reply)
expect(run["stdout"] == "hi ann xyz\n" and run["stderr"] == "bye", "stdin, files, stderr", run)

status, reply = call("POST", "/run_code", {"code": "while True:\n    pass",
                                           "language": "python", "run_timeout": 1})
run = reply["run_result"]
expect(reply["status"] == "Failed" and run["status"] == "TimeLimitExceeded",
       "endless loop hits the limit", reply)
expect(run["return_code"] is None, "no return code after a kill", run)

status, reply = call("POST", "/run_code", {"code": "print(", "language": "python"})
expect(reply["status"] == "Failed" and "SyntaxError" in reply["run_result"]["stderr"],
       "syntax error is a failed run", reply)

# Bad requests: the field is named.
status, reply = call("POST", "/run_code", {"language": "python"})
expect(status == 400 and "`code`" in reply["error"], "missing code is 400", reply)
status, reply = call("POST", "/run_code", {"code": "print(1)", "language": "cpp"})
expect(status == 400 and "`language`" in reply["error"], "other language is 400", reply)
status, reply = call("POST", "/verify", {"kind": "poetry", "items": []})
expect(status == 400 and "`kind`" in reply["error"], "unknown kind is 400", reply)
status, reply = call("GET", "/nowhere")
expect(status == 404, "unknown path is 404", reply)

print("serve_client: %d checks passed" % checks)
