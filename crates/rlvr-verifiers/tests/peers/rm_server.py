"""A reward service in OpenRLHF's remote-RM shape for the `http` verifier tests.

POST {"query": [...], "prompts": [...], "labels": [...]} -> {"rewards": [...]}, behaviour by path:
/ok        1.0 where query == prompt + label, else 0.0
/half      0.5 for every query
/flaky     HTTP 500 for the first two requests, then as /ok
/500       always HTTP 500
/wronglen  one reward too few
/notjson   a body that is not JSON
/nonnumber a string among the rewards
/range     3.0 for every query
/hang      sleeps 3 s before answering as /ok
GET /count?<path> returns how many POSTs that path received; GET /last the last POST body.
Prints the port it listens on (127.0.0.1, chosen by the OS) as its first line.
"""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

counts = {}
last = {"body": None}
lock = threading.Lock()


def ok_rewards(body):
    return [1.0 if q == p + str(l) else 0.0
            for q, p, l in zip(body["query"], body["prompts"], body["labels"])]


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, status, text):
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (the /hang tests)

    def do_GET(self):
        if self.path.startswith("/count?"):
            with lock:
                self.reply(200, json.dumps(counts.get(self.path[len("/count?"):], 0)))
        elif self.path == "/last":
            self.reply(200, json.dumps(last["body"]))
        else:
            self.reply(404, "{}")

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with lock:
            counts[self.path] = counts.get(self.path, 0) + 1
            n = counts[self.path]
            last["body"] = body
        q = body["query"]
        if self.path == "/ok":
            self.reply(200, json.dumps({"rewards": ok_rewards(body)}))
        elif self.path == "/half":
            self.reply(200, json.dumps({"rewards": [0.5] * len(q)}))
        elif self.path == "/flaky":
            if n <= 2:
                self.reply(500, '{"error": "warming up"}')
            else:
                self.reply(200, json.dumps({"rewards": ok_rewards(body)}))
        elif self.path == "/500":
            self.reply(500, '{"error": "model crashed"}')
        elif self.path == "/wronglen":
            self.reply(200, json.dumps({"rewards": [1.0] * (len(q) - 1)}))
        elif self.path == "/notjson":
            self.reply(200, "<html>bad gateway</html>")
        elif self.path == "/nonnumber":
            self.reply(200, json.dumps({"rewards": [1.0] + ["high"] * (len(q) - 1)}))
        elif self.path == "/range":
            self.reply(200, json.dumps({"rewards": [3.0] * len(q)}))
        elif self.path == "/hang":
            time.sleep(3)
            self.reply(200, json.dumps({"rewards": ok_rewards(body)}))
        else:
            self.reply(404, "{}")


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
