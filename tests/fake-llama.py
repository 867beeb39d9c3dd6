#!/usr/bin/env python3
"""A stand-in for llama.cpp's tools in tests/t-bench-peers.sh, run as
`fake-llama.py TOOL ARGS...`. It logs its command line to $FAKE_LLAMA_LOG,
checks what scripts/bench-peers.py gives it and answers as the real tool
does, with fixed timings: llama-completion, llama-lookup and
llama-speculative print their summary lines on standard error (the prompt
token count that skipper's --dump-prompts gave for the prompt file, except
llama-completion's, 999, which the report must flag); llama-server answers
/health and one /completion, its decode time set by --spec-type and the
draft length, ngram-map-k's output one token off plain's."""
import http.server
import json
import os
import sys

tool, args = sys.argv[1], sys.argv[2:]
if args == ["--version"]:
    sys.stderr.write("version: 1 (fake)\n")
    sys.exit(0)
with open(os.environ["FAKE_LLAMA_LOG"], "a") as f:
    f.write(tool + " " + " ".join(args) + "\n")
opt = lambda k: args[args.index(k) + 1] if k in args else None


def cli():
    text = open(opt("-f"), encoding="utf-8").read()
    dump = os.path.join(os.path.dirname(opt("-f")), "dump.jsonl")
    n = next(len(r["prompt_ids"]) for r in map(json.loads, open(dump)) if r["prompt"] + "\n" == text)
    assert opt("--temp") == "0" and opt("-n") == "4", args
    print("some text")
    if tool == "llama-completion":
        sys.stderr.write("llama_perf_context_print: prompt eval time =     100.00 ms /   999 tokens\n"
                         "llama_perf_context_print:        eval time =     400.00 ms /     4 runs\n")
    else:
        s = "0.500" if tool == "llama-lookup" else "1.000"
        sys.stderr.write(f"encoded {n:4d} tokens in    0.100 seconds\ndecoded    5 tokens in    {s} seconds\n"
                         "n_draft   = 8\nn_predict = 5\nn_drafted = 6\nn_accept  = 3\n")


def server():
    if os.environ.get("FAKE_SERVER_FAIL"):
        sys.stderr.write("error: the fake server was told to fail\n")
        sys.exit(1)
    mode = opt("--spec-type") or "none"
    ms = {"none": 400, "ngram-simple": 200, "ngram-mod": 100 if opt("--spec-ngram-mod-n-max") else 250,
          "ngram-map-k": 500}[mode]
    served = []

    class H(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def reply(self, code, body):
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self.reply(200 if self.path == "/health" else 404, {"status": "ok"})

        def do_POST(self):
            req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            good = (self.path == "/completion" and isinstance(req.get("prompt"), list) and
                    all(isinstance(x, int) for x in req["prompt"]) and req.get("temperature") == 0 and
                    req.get("cache_prompt") is False and req.get("n_predict") == 4 and not served)
            served.append(1)
            if not good:
                return self.reply(400, {"error": "bad request " + json.dumps(req)})
            t = {"prompt_n": len(req["prompt"]), "cache_n": 0, "prompt_ms": 50.0, "predicted_n": 5,
                 "predicted_ms": ms}
            if mode != "none":
                t.update({"draft_n": 6, "draft_n_accepted": 3})
            out = [1, 2, 3, 4, 6 if mode == "ngram-map-k" else 5]
            self.reply(200, {"content": "x", "tokens": out, "timings": t})

    http.server.HTTPServer(("127.0.0.1", int(opt("--port"))), H).serve_forever()


server() if tool == "llama-server" else cli()
