"""A reward program for the `command` verifier tests; its behaviour is chosen by the response.

- "sleep:X": sleep X seconds, then reward 1
- "crash": write dying words to stderr and exit with status 3
- "garbage": write a line that is not JSON
- "range": reward 2.5
- anything else: reward 1 when the response equals the record's `answer`, else 0
Every good reply carries the process id and the request's keys in `details`.
"""
import json
import os
import sys
import time

for line in sys.stdin:
    request = json.loads(line)
    response = request["response"]
    if response.startswith("sleep:"):
        time.sleep(float(response.split(":")[1]))
        reward = 1.0
    elif response == "crash":
        sys.stderr.write("dying words from pid %d\n" % os.getpid())
        sys.stderr.flush()
        sys.exit(3)
    elif response == "garbage":
        print("this is not json", flush=True)
        continue
    elif response == "range":
        reward = 2.5
    else:
        reward = 1.0 if response == request.get("answer") else 0.0
    details = {"pid": os.getpid(), "keys": sorted(request)}
    print(json.dumps({"reward": reward, "details": details}), flush=True)
