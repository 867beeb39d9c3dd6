#!/usr/bin/env python3
"""skipper next to llama.cpp on Spec-Bench prompts, one interleaved run:
prompt by prompt, `skipper bench` runs every skipper configuration (and
checks each greedy output against plain decoding), then llama.cpp's
llama-completion (plain), llama-lookup (prompt lookup), llama-speculative
(draft model) and llama-server (plain and its draft-free speculative modes)
run the same prompt before the next one. skipper says which prompts a run
takes and how it formats and tokenizes them (`skipper bench
--dump-prompts`); llama.cpp gets the same text, llama-server the same token
ids. Writes a Markdown table per category (decode tokens/s, speedup against
skipper `none`, llama.cpp plain and llama.cpp's best speculative mode,
acceptance), CSV data and an SVG chart. A benchmark command, not a test:
run it on a quiet machine. `--help` lists the options."""
import argparse
import csv
import html
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request

ME = "bench-peers"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LLAMA_BUILT = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                           "skipper/llama.cpp/llama_cpp_python-0.3.36/vendor/llama.cpp/build/bin")
ALL_POLICIES = ("none,lookup,bo-static,swift,clasp,knn-router,knapspec,bo-static+lookup,swift+lookup,"
                "clasp+lookup,knn-router+lookup,knapspec+lookup")
# llama.cpp's tools (each run as its own process) and llama-server's modes
CLI_PEERS = ("plain", "lookup", "speculative")
SERVER_MODES = ("ngram-simple", "ngram-mod", "ngram-map-k")
ALL_PEERS = CLI_PEERS + ("server",) + SERVER_MODES
# The draft lengths each llama-server mode runs with besides its defaults,
# chosen on llama-server's own counts of drafted and accepted tokens per
# verify pass over Spec-Bench prompts (doc/benchmarks.md, "llama-server's
# draft lengths"); --server-args replaces them.
SERVER_ARGS = {
    "ngram-simple": ["--spec-ngram-simple-size-n 3 --spec-ngram-simple-size-m 8"],
    "ngram-mod": ["--spec-ngram-mod-n-match 12 --spec-ngram-mod-n-min 2 --spec-ngram-mod-n-max 8"],
    "ngram-map-k": ["--spec-ngram-map-k-size-n 3 --spec-ngram-map-k-size-m 8"],
}
BEST = "llama.cpp best speculative mode"


class Failure(Exception):
    """An error that ends the run: the message, and the exit status."""

    def __init__(self, msg, status=1):
        super().__init__(msg)
        self.status = status


def say(msg):
    sys.stderr.write(f"{ME}: {msg}\n")
    sys.stderr.flush()


def count(least):
    def parse(s):
        if not s.isdigit():
            raise argparse.ArgumentTypeError(f"expected a whole number, got '{s}'")
        if int(s) < least:
            raise argparse.ArgumentTypeError(f"expected a number >= {least}, got '{s}'")
        return int(s)
    return parse


class Help(argparse.RawDescriptionHelpFormatter):
    def _split_lines(self, text, width):
        return textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=False)


def parse_args(argv):
    data = (os.path.join(os.path.dirname(ROOT), "shared/data/spec_bench/question.jsonl") + "," +
            os.path.join(ROOT, "scripts/data/code-edit.jsonl"))
    tuned = "; ".join(f"{m}: {' | '.join(a)}" for m, a in SERVER_ARGS.items())
    p = argparse.ArgumentParser(
        prog="scripts/bench-peers.py", formatter_class=Help,
        description="Compare skipper with llama.cpp on Spec-Bench prompts (greedy decoding), both engines\n"
        "prompt by prompt in one interleaved run, and write DIR/results.md, DIR/runs.csv,\n"
        "DIR/summary.csv, DIR/chart.svg and the raw logs under DIR/raw/.",
        epilog="Environment: SKIPPER (the skipper command; default ./skipper of the build tree,\n"
        "else skipper on PATH), SKIPPER_PLUGIN_PATH and SKIPPER_DATA_PATH (default the tree's\n"
        ".libs and conf when run from a build tree), LLAMA_BIN.\n"
        "Exit status: 0 on success; 1 when a skipper configuration's output differs from\n"
        "none's (the files are complete and say which) or on any error (then nothing is left\n"
        "behind); 2 on a usage error.")
    p.add_argument("--data", default=data, metavar="FILE[,FILE...]",
                   help='prompts, JSON lines with "category", "question_id" and "turns", read as skipper bench '
                   "reads them, the files one after the other (a prompt without an id is named by its line in that "
                   "sequence; default: ../shared/data/spec_bench/question.jsonl "
                   "beside the source tree, then scripts/data/code-edit.jsonl, the category code_editing)")
    p.add_argument("--categories", default="", metavar="LIST",
                   help="comma-separated categories, in this order (default: every category, in file order)")
    p.add_argument("--per-category", type=count(1), default=3, metavar="N",
                   help="the first N prompts of each category (default 3)")
    p.add_argument("--tokens", type=count(1), default=128, metavar="N", help="new tokens per prompt (default 128)")
    p.add_argument("--threads", type=count(1), default=2, metavar="N", help="CPU threads, both engines (default 2)")
    p.add_argument("--warmup", type=count(0), default=1, metavar="N",
                   help="untimed runs of the first N prompts of each category by every configuration before "
                   "measuring (default 1)")
    p.add_argument("--reps", type=count(1), default=1, metavar="N",
                   help="measure every prompt N times: the whole run (warm-up included) repeated N times over, the "
                   "figures totals over all rounds; more rounds average out a machine whose speed drifts (default 1)")
    p.add_argument("--ctx", type=count(64), default=4096, metavar="N", help="context size, both engines (default 4096)")
    p.add_argument("--draft-vocab", default="auto", metavar="N|auto",
                   help="skipper's draft passes compute the LM head over the N most frequent tokens ([generate] "
                   "draft_vocab; the ranking ships for the benchmark models); 0: the whole vocabulary; auto: the "
                   "shipped ranking's 32768 for the policies that draft with the model (default auto)")
    p.add_argument("--model", default="qwen2.5-coder-1.5b", metavar="NAME|FILE",
                   help="target model, a scripts/fetch-model.sh name or a GGUF file (default qwen2.5-coder-1.5b)")
    p.add_argument("--draft-model", default="qwen2.5-coder-0.5b", metavar="NAME|FILE",
                   help="draft model of llama-speculative (default qwen2.5-coder-0.5b)")
    p.add_argument("--policies", default=ALL_POLICIES, metavar="LIST",
                   help="skipper configurations: none, lookup, lookup-context (lookup without the corpus n-grams), "
                   "a policy NAME or NAME+lookup (the policy with context lookup beside it); none is always run; a "
                   "policy that has no profile for the model is left out with a note (default: all of "
                   f"{ALL_POLICIES.replace(',', ', ')})")
    p.add_argument("--peers", default=",".join(ALL_PEERS), metavar="LIST",
                   help="llama.cpp configurations: plain (llama-completion), lookup (llama-lookup), speculative "
                   "(llama-speculative), server (llama-server without speculation), ngram-simple, ngram-mod, "
                   "ngram-map-k (llama-server --spec-type MODE, once with its defaults and once with each "
                   "--server-args of the mode), or none (default: all of them)")
    p.add_argument("--server-args", action="append", default=[], metavar="MODE=ARGS",
                   help="llama-server options (its draft lengths) for one more run of MODE beside its defaults; "
                   "may be given several times, also for one mode (a sweep); MODE= alone: its defaults only. "
                   f"Default: {tuned}")
    p.add_argument("--llama-bin", default=os.environ.get("LLAMA_BIN", ""), metavar="DIR",
                   help="llama.cpp binaries (default: $LLAMA_BIN, else the build of scripts/build-llamacpp.sh, "
                   f"{LLAMA_BUILT})")
    p.add_argument("--out", default="", metavar="DIR",
                   help="output directory, must not exist or be empty (default bench-peers-YYYYmmdd-HHMMSS)")
    a = p.parse_args(argv)
    if a.draft_vocab != "auto" and not a.draft_vocab.isdigit():
        p.error(f"argument --draft-vocab: expected a whole number or auto, got '{a.draft_vocab}'")

    items = ["none"]
    for x in a.policies.split(","):
        if x == "none":
            continue
        if not re.fullmatch(r"[A-Za-z0-9_.-]+(\+lookup)?", x):
            p.error(f"--policies: bad item '{x}' (none, lookup, NAME or NAME+lookup; only NAME+lookup combines)")
        if x.endswith("+lookup") and x[:-7] in ("none", "lookup", "lookup-context"):
            p.error(f"--policies: bad item '{x}' (NAME+lookup takes a policy NAME)")
        if x in items:
            p.error(f"--policies: '{x}' is listed twice")
        items.append(x)
    a.policies = items
    peers = []
    for x in a.peers.split(","):
        if x == "none":
            continue
        if x not in ALL_PEERS:
            p.error(f"--peers: unknown '{x}' ({', '.join(ALL_PEERS)} or none)")
        if x in peers:
            p.error(f"--peers: '{x}' is listed twice")
        peers.append(x)
    a.peers = peers
    server_args = {m: list(v) for m, v in SERVER_ARGS.items()}
    given = set()
    for x in a.server_args:
        mode, eq, args = x.partition("=")
        if not eq or mode not in SERVER_MODES:
            p.error(f"--server-args: expected MODE=ARGS with MODE one of {', '.join(SERVER_MODES)}, got '{x}'")
        try:
            words = shlex.split(args)
        except ValueError as e:
            p.error(f"--server-args {x}: {e}")
        if not all(w.startswith("--spec-") or re.fullmatch(r"\d+", w) for w in words):
            p.error(f"--server-args {x}: only llama-server's --spec-* options and their numbers")
        if mode not in given:
            server_args[mode] = []
            given.add(mode)
        if words and " ".join(words) not in server_args[mode]:
            server_args[mode].append(" ".join(words))
    a.server_args = server_args
    a.cats = [c for c in a.categories.split(",") if c]
    for c in a.cats:
        if a.cats.count(c) > 1:
            p.error(f"--categories: '{c}' is listed twice")
    return a


def peer_runs(a):
    """(run id, peer, mode, server options) of every llama.cpp run per prompt, in run order."""
    runs = []
    for peer in a.peers:
        if peer in CLI_PEERS:
            runs.append((peer, peer, None, ""))
        elif peer == "server":
            runs.append(("server", peer, None, ""))
        else:
            runs.append((f"server-{peer}", peer, peer, ""))
            for i, args in enumerate(a.server_args[peer], 1):
                runs.append((f"server-{peer}-{i}", peer, peer, args))
    return runs


def program(peer):
    """The llama.cpp program a peer runs."""
    return {"plain": "llama-completion", "lookup": "llama-lookup",
            "speculative": "llama-speculative"}.get(peer, "llama-server")


def peer_label(run, names):
    rid, peer, mode, args = run
    if peer == "plain":
        return "llama.cpp plain"
    if peer == "lookup":
        return "llama.cpp lookup"
    if peer == "speculative":
        return f"llama.cpp speculative ({names['draft']} → {names['model']})"
    if peer == "server":
        return "llama.cpp server plain"
    if not args:
        return f"llama.cpp server {mode}"
    short = re.sub(r" (?=[a-z])", ", ", re.sub(rf"--spec-{mode}-", "", args))
    return f"llama.cpp server {mode} ({short})"


# --------------------------------------------------------------- running


def run(cmd, out, err, env=None):
    """Run cmd with stdout and stderr into the files out and err; its status."""
    with open(out, "wb") as fo, open(err, "wb") as fe:
        return subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe, env=env).returncode


def tail(path, n=20):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


def amx_hint(status):
    try:
        flags = open("/proc/cpuinfo").read()
    except OSError:
        flags = ""
    if status < 0 and re.search(r"\bamx_(tile|int8)\b", flags):
        return (" (this CPU has AMX: llama.cpp's native build crashes on multi-row batches there; "
                "scripts/build-llamacpp.sh builds without AMX)")
    return ""


class Skipper:
    """The skipper command with the run's common settings."""

    def __init__(self, a, model):
        env = dict(os.environ)
        if env.get("SKIPPER"):
            cmd = env["SKIPPER"]
        elif os.access(os.path.join(ROOT, "skipper"), os.X_OK):
            cmd = os.path.join(ROOT, "skipper")
            if os.path.isdir(os.path.join(ROOT, ".libs")):
                env.setdefault("SKIPPER_PLUGIN_PATH", os.path.join(ROOT, ".libs"))
            if os.path.isdir(os.path.join(ROOT, "conf/profiles")):
                env.setdefault("SKIPPER_DATA_PATH", os.path.join(ROOT, "conf"))
        else:
            cmd = shutil.which("skipper")
            if not cmd:
                raise Failure("no skipper command: build the tree (./configure && make) or install skipper, "
                              "or set SKIPPER")
        self.cmd, self.env = cmd, env
        self.common = ["-m", model, "--set", f"model.threads={a.threads}", "--set", f"model.ctx={a.ctx}",
                       "--set", f"generate.draft_vocab={a.draft_vocab}"]

    def bench(self, args, out, err):
        return run([self.cmd, "bench"] + self.common + args, out, err, self.env)

    def version(self):
        r = subprocess.run([self.cmd, "--version"], capture_output=True, text=True, env=self.env)
        return (r.stdout.splitlines() or ["unknown"])[0]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Llama:
    """llama.cpp's tools and llama-server on the run's model and settings."""

    def __init__(self, a, model, draft):
        self.a, self.model, self.draft, self.bin = a, model, draft, a.llama_bin
        t = str(a.threads)
        self.common = ["-m", model, "-n", str(a.tokens), "--temp", "0", "-t", t, "-tb", t, "-c", str(a.ctx)]
        self.server = None

    def cli(self, peer, prompt_file, log):
        """One run of llama-completion, -lookup or -speculative: its standard
        error in log, its text beside it (.out)."""
        t = str(self.a.threads)
        extra = {"plain": ["-no-cnv"], "lookup": [],
                 "speculative": ["-md", self.draft or "", "-td", t, "-tbd", t]}[peer]
        cmd = [os.path.join(self.bin, program(peer))] + self.common + ["-f", prompt_file, "--no-escape"] + extra
        status = run(cmd, log[:-4] + ".out", log)
        if status != 0:
            sys.stderr.write(tail(log))
            raise Failure(f"{os.path.basename(cmd[0])} failed with status {status} on {prompt_file} (log above)"
                          + amx_hint(status))

    def server_cmd(self, mode, args, port):
        t = str(self.a.threads)
        cmd = [os.path.join(self.bin, "llama-server"), "-m", self.model, "-t", t, "-tb", t, "-c", str(self.a.ctx),
               "-np", "1", "--host", "127.0.0.1", "--port", str(port)]
        if mode:
            cmd += ["--spec-type", mode] + shlex.split(args)
        return cmd

    def serve(self, ids, mode, args, log):
        """One request on a llama-server started for it: the prompt's ids,
        greedy, no prompt cache. A fresh server per request, as llama.cpp's
        tools are fresh processes, so that nothing one prompt leaves (ngram-mod
        and ngram-map-k keep the n-grams of earlier requests) helps another.
        Its standard error in log, the response in .json beside it."""
        port = free_port()
        cmd = self.server_cmd(mode, args, port)
        with open(log, "wb") as fe:
            self.server = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=fe, stderr=subprocess.STDOUT)
        try:
            self.wait_ready(port, cmd, log)
            body = {"prompt": ids, "n_predict": self.a.tokens, "temperature": 0, "cache_prompt": False,
                    "return_tokens": True, "stream": False}
            req = urllib.request.Request(f"http://127.0.0.1:{port}/completion", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=3600) as r:
                    res = json.load(r)
            except (urllib.error.URLError, OSError, ValueError) as e:
                time.sleep(0.5)
                sys.stderr.write(tail(log))
                raise Failure(f"llama-server ({' '.join(cmd)}): the request failed: {e}" +
                              amx_hint(self.server.poll() or 0))
        finally:
            self.stop()
        with open(log[:-4] + ".json", "w", encoding="utf-8") as f:
            json.dump(res, f)

    def wait_ready(self, port, cmd, log):
        """Until /health answers 200; a server that exits or stays silent
        fails the run."""
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:
            status = self.server.poll()
            if status is not None:
                sys.stderr.write(tail(log))
                raise Failure(f"llama-server did not start ({' '.join(cmd)}; log above)" + amx_hint(status))
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        raise Failure(f"llama-server did not answer on port {port} within 900 s ({' '.join(cmd)}; see {log})")

    def stop(self):
        s, self.server = self.server, None
        if s and s.poll() is None:
            s.terminate()
            try:
                s.wait(30)
            except subprocess.TimeoutExpired:
                s.kill()
                s.wait()

    def version(self):
        for name in ("llama-completion", "llama-server", "llama-lookup", "llama-speculative"):
            path = os.path.join(self.bin, name)
            if os.access(path, os.X_OK):
                r = subprocess.run([path, "--version"], capture_output=True, text=True)
                m = re.search(r"^version: (.*)$", r.stdout + r.stderr, re.M)
                if m:
                    return m.group(1)
        return "unknown"


# --------------------------------------------------------------- results of the peers


def llama_run(path, tool):
    """Decode statistics from the standard error of a llama.cpp tool."""
    try:
        s = open(path, encoding="utf-8", errors="replace").read()
    except OSError:
        raise Failure(f"{path}: missing")
    last = lambda pat: ([None] + list(re.finditer(pat, s)))[-1]  # the summary comes last
    if tool == "plain":  # llama-completion: libllama's perf counters
        p = last(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
        e = last(r"(?<!prompt )eval time =\s*([\d.]+) ms /\s*(\d+) runs")
        if not p or not e:
            raise Failure(f"{path}: no 'prompt eval time' / 'eval time' lines: did llama-completion finish?")
        n = int(e.group(2))
        return {"prompt_tokens": int(p.group(2)), "generated": n + 1, "tokens": n,
                "seconds": float(e.group(1)) / 1e3, "drafted": 0, "accepted": 0}
    enc = last(r"encoded\s+(\d+) tokens in\s+([\d.]+) seconds")
    dec = last(r"decoded\s+(\d+) tokens in\s+([\d.]+) seconds")
    dr = last(r"n_drafted\s*=\s*(\d+)")
    ac = last(r"n_accept\s*=\s*(\d+)")
    if not (enc and dec and dr and ac):
        raise Failure(f"{path}: no 'encoded'/'decoded'/n_drafted/n_accept lines: did llama-{tool} finish?")
    n = int(dec.group(1))
    # the timer starts after the prompt pass, whose logits give the first
    # token: count the tokens after it, as skipper does
    return {"prompt_tokens": int(enc.group(1)), "generated": n, "tokens": max(n - 1, 0),
            "seconds": float(dec.group(2)), "drafted": int(dr.group(1)), "accepted": int(ac.group(1))}


def server_run(path):
    """Decode statistics from llama-server's response: its timings count
    from the first token (which the prompt pass yields) to the last."""
    try:
        res = json.load(open(path, encoding="utf-8"))
        t = res["timings"]
        n = int(t["predicted_n"])
        return {"prompt_tokens": int(t["prompt_n"]) + int(t.get("cache_n", 0)), "generated": n,
                "tokens": max(n - 1, 0), "seconds": float(t["predicted_ms"]) / 1e3,
                "drafted": int(t.get("draft_n", 0)), "accepted": int(t.get("draft_n_accepted", 0)),
                "output": res.get("tokens")}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise Failure(f"{path}: not a llama-server /completion response with timings ({e})")


# --------------------------------------------------------------- the chart


def svg_chart(path, groups, series, values, title="Decode speedup vs skipper none (greedy; higher is faster)"):
    """Grouped bars: values[s][g] = speedup of series s in group g."""
    colors = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
              "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#1b9e77", "#d95f02"]
    top = max([1.2] + [v for row in values for v in row if v is not None]) * 1.1
    step = next(s for s in (0.1, 0.25, 0.5, 1, 2, 5, 10, 20) if top / s <= 10)
    bw = 9
    gw = len(series) * bw + 14
    left, right, ph, ptop = 60, 40 + 7 * max(len(x) for x in series), 320, 30
    w, h = max(left + gw * len(groups) + right, left + 8 * len(title)), ptop + ph + 110
    y = lambda v: ptop + ph - v / top * ph
    o = ['<?xml version="1.0" encoding="UTF-8"?>',
         f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
         f'<rect width="{w}" height="{h}" fill="white"/>',
         f'<text x="{left}" y="18" font-size="13">{title}</text>']
    t = 0.0
    while t <= top:
        o.append(f'<line x1="{left}" x2="{left + gw * len(groups)}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#ddd"/>')
        o.append(f'<text x="{left - 6}" y="{y(t) + 4:.1f}" text-anchor="end">{t:g}</text>')
        t = round(t + step, 6)
    for gi, g in enumerate(groups):
        x0 = left + gi * gw + 7
        for si in range(len(series)):
            v = values[si][gi]
            if v is None:
                continue
            o.append(f'<rect x="{x0 + si * bw}" y="{y(v):.1f}" width="{bw - 1}" height="{ph + ptop - y(v):.1f}" '
                     f'fill="{colors[si % len(colors)]}"><title>{html.escape(series[si])}, {html.escape(g)}: '
                     f'{v:.2f}x</title></rect>')
        cx = x0 + len(series) * bw / 2
        o.append(f'<text transform="translate({cx:.1f},{ptop + ph + 12}) rotate(40)">{html.escape(g)}</text>')
    o.append(f'<line x1="{left}" x2="{left + gw * len(groups)}" y1="{y(1):.1f}" y2="{y(1):.1f}" stroke="black" '
             'stroke-dasharray="4 3"/>')
    o.append(f'<line x1="{left}" x2="{left}" y1="{ptop}" y2="{ptop + ph}" stroke="black"/>')
    lx = left + gw * len(groups) + 16
    for si, s in enumerate(series):
        o.append(f'<rect x="{lx}" y="{ptop + si * 18}" width="12" height="12" fill="{colors[si % len(colors)]}"/>')
        o.append(f'<text x="{lx + 18}" y="{ptop + si * 18 + 10}">{html.escape(s)}</text>')
    o.append("</svg>")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(o) + "\n")


# --------------------------------------------------------------- the run


class Bench:
    def __init__(self, a, out, command):
        self.a, self.out, self.command = a, out, command
        self.notes, self.mismatch = [], False
        self.start = time.time()

    def model_file(self, opt, name):
        if os.path.isfile(name):
            return os.path.abspath(name)
        r = subprocess.run([os.path.join(ROOT, "scripts/fetch-model.sh"), name], stdout=subprocess.PIPE, text=True)
        path = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
        if r.returncode != 0 or not path.startswith("/"):
            raise Failure(f"{opt} {name}: neither a file nor a model scripts/fetch-model.sh knows (see --list)")
        return path

    def prepare(self):
        """The prompts, as skipper selects, formats and tokenizes them."""
        a, out = self.a, self.out
        with open(f"{out}/prompts/data.jsonl", "wb") as f:
            for path in self.data:
                with open(path, "rb") as src:
                    body = src.read()
                f.write(body if body.endswith(b"\n") or not body else body + b"\n")
        args = ["--data", f"{out}/prompts/data.jsonl", "--per-category", str(a.per_category),
                "--dump-prompts", f"{out}/prompts/dump.jsonl"]
        if a.cats:
            args += ["--categories", ",".join(a.cats)]
        if self.sk.bench(args, f"{out}/raw/dump.out", f"{out}/raw/dump.err") != 0:
            sys.stderr.write(tail(f"{out}/raw/dump.err"))
            raise Failure("skipper bench --dump-prompts failed (above)")
        os.remove(f"{out}/raw/dump.out")
        os.remove(f"{out}/raw/dump.err")
        rows = [json.loads(line) for line in open(f"{out}/prompts/dump.jsonl", encoding="utf-8")]
        order = []
        for r in rows:
            if r["category"] not in order:
                order.append(r["category"])
        for c in a.cats:
            if c not in order:
                raise Failure(f"--categories: '{c}' is not a category of {','.join(self.data)}", 2)
        first = rows[0]
        if first["template"] == "none":
            self.template = "none (the prompt as is)"
        else:
            system = json.dumps(first["system"]) if first["system"] is not None else "none"
            self.template = f"{first['template']}, system prompt {system}"
        self.plan, k = [], 0
        for ci, cat in enumerate(a.cats or order, 1):
            prompts = []
            for r in (r for r in rows if r["category"] == cat):
                k += 1
                pf = f"p{k:04d}"
                # the prompt as skipper bench reads it, and as llama.cpp's
                # tools read it (-f drops one final newline: one more for it)
                with open(f"{out}/prompts/{pf}.jsonl", "w", encoding="utf-8") as f:
                    f.write(json.dumps({"question_id": r["id"], "category": cat, "turns": [r["user"]]}) + "\n")
                with open(f"{out}/prompts/{pf}.txt", "w", encoding="utf-8") as f:
                    f.write(r["prompt"] + "\n")
                prompts.append({"file": pf, "id": r["id"], "ids": r["prompt_ids"], "user": r["user"]})
            self.plan.append({"id": f"c{ci:02d}", "category": cat, "prompts": prompts})
        with open(f"{out}/prompts/plan.json", "w") as f:
            json.dump({"template": self.template, "categories": [
                {"id": c["id"], "category": c["category"], "prompts": [{"file": p["file"], "id": p["id"]}
                                                                      for p in c["prompts"]]}
                for c in self.plan]}, f, indent=1)
        shortest = min((p for c in self.plan for p in c["prompts"]), key=lambda p: len(p["user"]))
        shutil.copy(f"{out}/prompts/{shortest['file']}.jsonl", f"{out}/prompts/probe.jsonl")

    def skipper_items(self):
        """skipper bench --policies items; a policy without a profile for the
        model is left out with a note."""
        a, out = self.a, self.out
        self.labels, items, checked = ["none"], ["none"], {}
        for p in a.policies[1:]:
            base = p[:-7] if p.endswith("+lookup") else p
            if base not in checked:
                checked[base] = True
                if base not in ("lookup", "lookup-context"):
                    say(f"checking that policy {base} starts on this model")
                    err = f"{out}/raw/probe.err"
                    if self.sk.bench(["--data", f"{out}/prompts/probe.jsonl", "--policies", base, "--max-tokens", "2",
                                      "--warmup", "0"], os.devnull, err) != 0:
                        m = re.search(r"no [a-z]* profile", tail(err, 1000))
                        if not m:
                            sys.stderr.write(tail(err))
                            raise Failure(f"skipper cannot run policy {base} on {self.model} (see above)")
                        checked[base] = False
                        self.note(f"skipper {base} and {base}+lookup left out: {m.group(0)} for "
                                  f"{os.path.basename(self.model)} (`skipper calibrate --policy {base}` writes one)")
                    os.remove(err)
            if not checked[base]:
                continue
            self.labels.append(p)
            if p.endswith("+lookup"):
                ini = f"; bench-peers: policy {base} with context lookup beside it\n[policy]\nname = {base}\nlookup = yes\n"
            elif p == "lookup-context":
                ini = "; bench-peers: context lookup without the corpus n-grams\n[policy]\nname = lookup\n[lookup]\nngrams = off\n"
            else:
                items.append(p)
                continue
            with open(f"{out}/configs/{p}.ini", "w") as f:
                f.write(ini)
            items.append(f"{out}/configs/{p}.ini")
        self.items = ",".join(items)

    def note(self, line):
        self.notes.append(line)
        say(line)

    def prompt(self, raw, tag, c, k, p, warm):
        """One prompt: every skipper configuration, then every llama.cpp one."""
        a = self.a
        n = len(c["prompts"])
        say(f"{tag}: prompt {k}/{n}: skipper bench, {len(self.labels)} configurations "
            f"({int(time.time() - self.start)} s)")
        pre = f"{raw}/prompt-{p['file']}"
        status = self.sk.bench(["--data", f"{self.out}/prompts/{p['file']}.jsonl", "--policies", self.items,
                                "--max-tokens", str(a.tokens), "--warmup", "1" if warm else "0", "--out", pre],
                               pre + ".table", pre + ".err")
        for suffix in ("jsonl", "err"):
            if os.path.exists(f"{pre}.{suffix}"):
                with open(f"{pre}.{suffix}", "rb") as src, open(f"{raw}/skipper-{c['id']}.{suffix}", "ab") as dst:
                    dst.write(src.read())
        if status != 0:
            body = open(pre + ".jsonl").read() if os.path.exists(pre + ".jsonl") else ""
            if status == 1 and '"matches_baseline":false' in body:
                say(f"{tag}: a skipper configuration's output differs from none's (listed at the end)")
                self.mismatch = True
            else:
                sys.stderr.write(tail(pre + ".err"))
                raise Failure(f"skipper bench failed with status {status} on category {c['category']}, "
                              f"prompt {k} (above)")
        if not self.runs:
            return
        say(f"{tag}: prompt {k}/{n}: llama.cpp{' warm-up, then' if warm else ''} "
            f"{', '.join(r[0] for r in self.runs)}")
        for log in ("warmup", None) if warm else (None,):
            for rid, peer, mode, args in self.runs:
                path = f"{raw}/{log or c['id'] + '-' + p['file'] + '-' + rid}.log"
                if peer in CLI_PEERS:
                    self.llama.cli(peer, f"{self.out}/prompts/{p['file']}.txt", path)
                else:
                    self.llama.serve(p["ids"], mode, args, path)
        for x in (".log", ".out", ".json"):
            if os.path.exists(f"{raw}/warmup{x}"):
                os.remove(f"{raw}/warmup{x}")

    def main(self):
        a, out = self.a, self.out
        self.load_start = loadavg()
        self.data = [os.path.abspath(f) for f in a.data.split(",") if f]
        for f in self.data:
            if not os.path.isfile(f):
                raise Failure(f"--data {f}: no such file")
        self.model = self.model_file("--model", a.model)
        self.draft = self.model_file("--draft-model", a.draft_model) if "speculative" in a.peers else ""
        self.sk = Skipper(a, self.model)
        self.runs = peer_runs(a)
        if self.runs:
            if not a.llama_bin:
                if not os.path.isdir(LLAMA_BUILT):
                    raise Failure("no llama.cpp binaries: build them with scripts/build-llamacpp.sh, or give "
                                  "--llama-bin DIR (or LLAMA_BIN), or --peers none")
                a.llama_bin = LLAMA_BUILT
            if not os.path.isdir(a.llama_bin):
                raise Failure(f"--llama-bin {a.llama_bin}: no such directory")
            a.llama_bin = os.path.abspath(a.llama_bin)
            for tool in {program(peer) for peer in a.peers}:
                if not os.access(os.path.join(a.llama_bin, tool), os.X_OK):
                    raise Failure(f"--llama-bin {a.llama_bin}: no executable {tool} (scripts/build-llamacpp.sh "
                                  "builds it)")
        self.llama = Llama(a, self.model, self.draft)
        for d in ("prompts", "raw", "configs"):
            os.mkdir(f"{out}/{d}")
        self.prepare()
        self.skipper_items()

        n_cat = len(self.plan)
        for rep in range(1, a.reps + 1):
            raw = f"{out}/raw" if rep == 1 else f"{out}/raw/rep-{rep}"
            if rep > 1:
                os.mkdir(raw)
            rnd = f"round {rep}/{a.reps}, " if a.reps > 1 else ""
            for i, c in enumerate(self.plan, 1):
                # prompt by prompt, skipper's configurations then llama.cpp's
                # on the same prompt: a shared machine's memory speed can
                # change within minutes (on one it went from 43 to 80 GB/s),
                # and a category's skipper runs then its llama.cpp runs were
                # compared across such a change
                for suffix in ("jsonl", "err"):
                    open(f"{raw}/skipper-{c['id']}.{suffix}", "w").close()
                for k, p in enumerate(c["prompts"], 1):
                    self.prompt(raw, f"[{rnd}{i}/{n_cat}] {c['category']}", c, k, p, k <= a.warmup)
        self.elapsed = int(time.time() - self.start)
        self.write_meta()
        report(self)
        say(f"wrote {out}/results.md and the data beside it in {self.elapsed} s")

    def write_meta(self):
        a = self.a
        cpu = ""
        try:
            r = subprocess.run(["lscpu"], capture_output=True, text=True)
            m = re.search(r"^Model name:\s*(.*)$", r.stdout, re.M)
            cpu = m.group(1) if m else ""
        except OSError:
            pass
        if not cpu:
            m = re.search(r"^model name\s*:\s*(.*)$", open("/proc/cpuinfo").read(), re.M)
            cpu = m.group(1) if m else "unknown"
        git = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        git = git.stdout.strip() if git.returncode == 0 else "unknown"
        if git != "unknown" and subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                                               capture_output=True, text=True).stdout.strip():
            git += " (with uncommitted changes)"
        stem = lambda name, path: os.path.basename(path)[:-5] if os.path.isfile(name) and path.endswith(".gguf") \
            else name
        t, m = a.threads, os.path.basename(self.model)
        cmds = []
        if any(p in CLI_PEERS for p in a.peers):
            cmds.append(f"llama-completion|llama-lookup|llama-speculative -m {m} -f PROMPT.txt -n {a.tokens} --temp 0 "
                        f"-t {t} -tb {t} -c {a.ctx} --no-escape; llama-completion also -no-cnv; llama-speculative "
                        f"also -md {os.path.basename(self.draft or 'none')} -td {t} -tbd {t}")
        if any(p not in CLI_PEERS for p in a.peers):
            cmds.append(f"llama-server -m {m} -t {t} -tb {t} -c {a.ctx} -np 1 --host 127.0.0.1 --port PORT "
                        "[--spec-type MODE [ARGS]], one server per request, POST /completion "
                        f"{{\"prompt\": PROMPT_IDS, \"n_predict\": {a.tokens}, \"temperature\": 0, "
                        "\"cache_prompt\": false}")
        self.meta = {
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "elapsed": f"{self.elapsed} s", "command": self.command,
            "skipper_version": self.sk.version(), "git": git,
            "llama_version": self.llama.version() if self.runs else "", "llama_bin": a.llama_bin,
            "llama_cmd": "; ".join(cmds), "cpu": cpu, "ncpu": os.cpu_count() or 0,
            "load_start": self.load_start, "load_end": loadavg(), "threads": t, "model": self.model,
            "model_name": stem(a.model, self.model), "draft": self.draft,
            "draft_name": stem(a.draft_model, self.draft) if self.draft else "none", "data": ",".join(self.data),
            "per_category": a.per_category, "tokens": a.tokens, "ctx": a.ctx, "draft_vocab": a.draft_vocab,
            "warmup": a.warmup, "reps": a.reps, "policies": self.labels,
            "peers": [r[0] for r in self.runs], "server_args": a.server_args, "notes": self.notes,
            "template": self.template}
        with open(f"{self.out}/raw/meta.json", "w") as f:
            json.dump(self.meta, f, indent=1)


def loadavg():
    try:
        return open("/proc/loadavg").read().split()[0]
    except OSError:
        return "unknown"


# --------------------------------------------------------------- the report


def report(b):
    out, meta, a = b.out, b.meta, b.a
    names = {"model": meta["model_name"], "draft": meta["draft_name"]}
    cats = [c["category"] for c in b.plan]
    peer_name = {r[0]: peer_label(r, names) for r in b.runs}
    spec = [peer_name[r[0]] for r in b.runs if r[1] not in ("plain", "server")]
    configs = [f"skipper {x}" for x in b.labels] + [peer_name[r[0]] for r in b.runs]
    reps = a.reps
    runs, mismatches, warnings, prompt_tokens = [], [], [], {}
    server_out, server_diff = {}, []
    for rep in range(1, reps + 1):
        raw = f"{out}/raw" if rep == 1 else f"{out}/raw/rep-{rep}"
        for c in b.plan:
            path = f"{raw}/skipper-{c['id']}.jsonl"
            ids = {p["id"] for p in c["prompts"]}
            with open(path) as f:
                for line in f:
                    j = json.loads(line)
                    st = j["stats"]
                    if j["id"] not in ids or j["policy"] not in b.labels:
                        raise Failure(f"{path}: unexpected row {j['id']} {j['policy']}")
                    n = st["generated_tokens"]
                    runs.append({"round": rep, "category": c["category"], "prompt": j["id"],
                                 "config": f"skipper {j['policy']}", "prompt_tokens": st["prompt_tokens"],
                                 "generated": n, "tokens": max(n - 1, 0),
                                 "seconds": st["seconds"] - st["prefill_seconds"], "drafted": st["drafted"],
                                 "accepted": st["accepted"], "matches_none": j["matches_baseline"]})
                    prompt_tokens[j["id"]] = st["prompt_tokens"]
                    if not j["matches_baseline"]:
                        mismatches.append((j["policy"], c["category"], j["id"]))
            for p in c["prompts"]:
                for rid, peer, mode, args in b.runs:
                    log = f"{raw}/{c['id']}-{p['file']}-{rid}"
                    tool = program(peer)
                    if peer in CLI_PEERS:
                        r = llama_run(log + ".log", peer)
                    else:
                        r = server_run(log + ".json")
                        server_out[(rep, p["id"], rid)] = r["output"]
                    r.update({"round": rep, "category": c["category"], "prompt": p["id"], "config": peer_name[rid],
                              "matches_none": ""})
                    runs.append(r)
                    if p["id"] in prompt_tokens and r["prompt_tokens"] != prompt_tokens[p["id"]]:
                        warnings.append(f"prompt {p['id']} ({c['category']}): {tool} read {r['prompt_tokens']} "
                                        f"prompt tokens, skipper {prompt_tokens[p['id']]}")
            for p in c["prompts"]:
                for cfg in configs:
                    if not any(r["round"] == rep and r["prompt"] == p["id"] and r["config"] == cfg and
                               r["category"] == c["category"] for r in runs):
                        raise Failure(f"no result for {cfg} on prompt {p['id']} ({c['category']}), round {rep}")
    for (rep, pid, rid), toks in server_out.items():
        plain = server_out.get((rep, pid, "server"))
        if rid != "server" and plain is not None and toks != plain:
            server_diff.append(f"{peer_name[rid]} on prompt {pid}" + (f", round {rep}" if reps > 1 else ""))
    cols = cats + ["overall"]
    rounds = [f"round {r}" for r in range(1, reps + 1)] if reps > 1 else []
    agg = {}
    for r in runs:
        for col in (r["category"], "overall", f"round {r['round']}"):
            x = agg.setdefault((r["config"], col), {"prompts": 0, "tokens": 0, "seconds": 0.0, "drafted": 0,
                                                    "accepted": 0})
            x["prompts"] += r["round"] == 1
            for k in ("tokens", "seconds", "drafted", "accepted"):
                x[k] += r[k]
    rate = lambda cfg, col: (agg[(cfg, col)]["tokens"] / agg[(cfg, col)]["seconds"]
                             if agg.get((cfg, col), {}).get("seconds") else None)
    # llama.cpp's best speculative mode: per column, the fastest of them
    best_of = {}
    if spec:
        for col in cols + rounds:
            fast = max(spec, key=lambda cfg: rate(cfg, col) or 0)
            best_of[col] = fast
            agg[(BEST, col)] = agg[(fast, col)]
        configs.append(BEST)
    base = "skipper none"
    lplain = peer_name["plain"] if "plain" in peer_name else None

    def ratio(cfg, col, ref):
        x, y = rate(cfg, col), rate(ref, col) if ref else None
        return x / y if x and y else None

    with open(f"{out}/runs.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["round", "category", "prompt_id", "configuration", "prompt_tokens", "generated_tokens",
                    "decode_tokens", "decode_seconds", "decode_tokens_per_s", "drafted", "accepted", "matches_none"])
        for r in runs:
            w.writerow([r["round"], r["category"], r["prompt"], r["config"], r["prompt_tokens"], r["generated"],
                        r["tokens"], f"{r['seconds']:.6f}", f"{r['tokens'] / r['seconds']:.3f}" if r["seconds"] > 0
                        else "", r["drafted"], r["accepted"], r["matches_none"]])
    fmt = lambda v, d: "" if v is None else f"{v:.{d}f}"
    with open(f"{out}/summary.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["configuration", "category", "prompts", "decode_tokens", "decode_seconds", "decode_tokens_per_s",
                    "speedup_vs_skipper_none", "speedup_vs_llamacpp_plain", "drafted", "accepted",
                    "speedup_vs_llamacpp_best"])
        for cfg in configs:
            for col in cols:
                x = agg[(cfg, col)]
                w.writerow([cfg, col, x["prompts"], x["tokens"], f"{x['seconds']:.6f}", fmt(rate(cfg, col), 3),
                            fmt(ratio(cfg, col, base), 4), fmt(ratio(cfg, col, lplain), 4), x["drafted"],
                            x["accepted"], fmt(ratio(cfg, col, BEST if spec else None), 4)])

    def table(cell, cols=cols, rows=configs):
        t = ["| configuration | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
        for cfg in rows:
            t.append(f"| {cfg} | " + " | ".join(cell(cfg, col) for col in cols) + " |")
        return t

    def speed_cell(cfg, col):
        r, s = rate(cfg, col), ratio(cfg, col, base)
        return "n/a" if r is None else f"{r:.2f} ({s:.2f}x)" if s else f"{r:.2f}"
    xs = lambda v: "n/a" if v is None else f"{v:.2f}x"

    def alpha_cell(cfg, col):
        x = agg[(cfg, col)]
        return "–" if not x["drafted"] else f"{x['accepted'] / x['drafted']:.2f} ({x['accepted']}/{x['drafted']})"
    main = table(speed_cell)
    t = meta["threads"]
    order = ["`skipper bench` (every skipper configuration)"]
    if any(r[1] in CLI_PEERS for r in b.runs):
        order.append("llama.cpp's " + ", ".join(r[1] for r in b.runs if r[1] in CLI_PEERS))
    if any(r[1] not in CLI_PEERS for r in b.runs):
        order.append("llama-server " + ", ".join(peer_name[r[0]][len("llama.cpp server "):]
                                                 for r in b.runs if r[1] not in CLI_PEERS))
    md = ["# skipper and llama.cpp on Spec-Bench", ""]
    if mismatches:
        md += ["**LOSSLESSNESS FAILED: some skipper output differs from skipper none's (see Notes).**", ""]
    md += [
        f"- date: {meta['date']}; run took {meta['elapsed']}",
        f"- command: `{meta['command']}`",
        f"- skipper: {meta['skipper_version']}, git {meta['git']}",
        f"- llama.cpp: {meta['llama_version']} ({meta['llama_bin']})" if b.runs else
        "- llama.cpp: not run (--peers none)",
        f"- load average (1 min) at the start and at the end: {meta['load_start']}, {meta['load_end']} on "
        f"{meta['ncpu']} CPUs",
        f"- CPU: {meta['cpu']}; {t} threads for both engines (skipper `--set model.threads={t}`, "
        f"llama.cpp `-t {t} -tb {t}`)",
        f"- model: `{meta['model']}`" + (f"; draft model of llama-speculative: `{meta['draft']}`"
                                         if "speculative" in a.peers else ""),
        f"- prompts: the first {meta['per_category']} of each category of `{meta['data']}` "
        f"({sum(len(c['prompts']) for c in b.plan)} in all), first turn, as `skipper bench --dump-prompts` selects "
        f"and formats them: chat template {meta['template']}; at most {meta['tokens']} new tokens, greedy, context "
        f"{meta['ctx']}; skipper draft vocabulary {meta['draft_vocab']} (0: the whole; auto: the shipped ranking for "
        f"policies that draft with the model); warm-up: the first {meta['warmup']} prompt(s) of each category once "
        "per configuration, not timed",
        "- order: prompt by prompt, category by category: " + ", then ".join(order) + ", then the next prompt" +
        (f"; all of it (warm-up included) {reps} times over" if reps > 1 else ""),
        "- measure: decode tokens/s = tokens after the first (which the prompt pass yields) / time after the prompt "
        "pass, summed over the prompts of the column" + (f" and the {reps} rounds" if reps > 1 else "") +
        " (total tokens / total seconds). " + "; ".join(how for peers, how in (
            (None, "skipper: its own statistics"),
            (("lookup", "speculative"), "llama-lookup and llama-speculative: their `decoded N tokens in T seconds` "
             "timer (N - 1 tokens counted)"),
            (("plain",), "llama-completion: libllama's `eval time` (one-token decode calls; its sampling time is "
             "not in it)"),
            (("server",) + SERVER_MODES, "llama-server: its response's `timings` (`predicted_n` - 1 tokens in "
             "`predicted_ms`, from the first token to the last), given skipper's prompt token ids, one server "
             "started per request so that nothing carries from one prompt to the next"))
            if peers is None or any(p in a.peers for p in peers))]
    if spec:
        md.append(f"- {BEST}: per column, the fastest of " + ", ".join(spec))
    md += ["", "## Decode tokens/s (speedup vs skipper none in the same run)", ""] + main
    if lplain:
        md += ["", "## Speedup vs llama.cpp plain", ""] + table(lambda cfg, col: xs(ratio(cfg, col, lplain)))
    if spec:
        md += ["", f"## Speedup vs {BEST} (per column)", ""]
        md += table(lambda cfg, col: xs(ratio(cfg, col, BEST)), rows=[c for c in configs if c != BEST])
        md += ["", "Fastest llama.cpp speculative mode per column: " +
               "; ".join(f"{col}: {best_of[col]}" for col in cols)]
    if rounds:
        md += ["", "## Overall, round by round: decode tokens/s (speedup vs skipper none in the same round)", ""]
        md += table(speed_cell, rounds)
    md += ["", "## Acceptance: accepted / drafted tokens", ""] + table(alpha_cell, rows=[c for c in configs
                                                                                          if c != BEST])
    md += ["", "## Notes", ""]
    if mismatches:
        md.append("- **LOSSLESSNESS FAILED**: greedy output differs from skipper none's: " +
                  "; ".join(f"{p} on {c} prompt {i}" for p, c, i in mismatches))
    else:
        n = sum(1 for r in runs if r["config"].startswith("skipper ") and r["config"] != base)
        md.append(f"- every skipper configuration's greedy output equals skipper none's ({n} prompt runs checked "
                  "by `skipper bench`)")
    if "server" in a.peers and len([r for r in b.runs if r[1] not in CLI_PEERS]) > 1:
        if server_diff:
            md.append("- llama-server's speculative output differs from its plain output (llama.cpp's batched passes "
                      "need not round as its one-row ones do): " + "; ".join(server_diff))
        else:
            md.append("- every llama-server speculative mode's output equals llama-server plain's")
    md += [f"- {line}" for line in meta["notes"]]
    try:
        busy = float(meta["load_start"]) > int(meta["ncpu"]) - int(t) + 0.5
    except ValueError:
        busy = False
    if warnings:
        md += [f"- WARNING: {w}" for w in warnings]
    elif b.runs:
        md.append("- prompt token counts: llama.cpp read the same number of prompt tokens as skipper on every prompt")
    if busy:
        warnings.append(f"the machine was busy when the run started (load average {meta['load_start']} on "
                        f"{meta['ncpu']} CPUs, {t} threads used): other jobs distort the figures")
        md.append(f"- WARNING: {warnings[-1]}")
    if b.runs:
        md.append(f"- llama.cpp commands: `{meta['llama_cmd']}`")
    md += ["- files: runs.csv (one row per round, prompt and configuration), summary.csv, chart.svg (no chart when "
           "only skipper none ran), raw/ (round 1; round r in raw/rep-r/: skipper bench JSONL per category in "
           "skipper-CAT.jsonl, each prompt's own run in prompt-PROMPT.*; llama.cpp's standard error in "
           "CAT-PROMPT-PEER.log, its text in .out, llama-server's response in .json; meta.json, the run's settings); "
           "prompts/ holds the prompts as skipper dumped them (dump.jsonl) and as llama.cpp read them (PROMPT.txt)",
           ""]
    with open(f"{out}/results.md", "w") as f:
        f.write("\n".join(md) + "\n")

    chart = [c for c in configs if c != base]
    if len(chart) > 8:
        keep = [c for c in chart if c.endswith("lookup") and c.startswith("skipper ")]
        keep += [c for c in (lplain, BEST) if c in chart]
        chart = keep or chart[:8]
    if chart:
        svg_chart(f"{out}/chart.svg", cols, chart, [[ratio(c, col, base) for col in cols] for c in chart])
    print("\n".join(main))
    for w in warnings:
        say(f"warning: {w}")
    for p, c, i in mismatches:
        say(f"LOSSLESSNESS FAILED: skipper {p} on {c} prompt {i}: output differs from none's")


def main(argv):
    a = parse_args(argv)
    command = " ".join(["scripts/bench-peers.py"] + [shlex.quote(x) for x in argv])
    out = a.out or time.strftime("bench-peers-%Y%m%d-%H%M%S")
    created = False
    if os.path.exists(out):
        if not os.path.isdir(out):
            raise Failure(f"--out {out}: exists and is not a directory")
        if os.listdir(out):
            raise Failure(f"--out {out}: exists and is not empty (give a new directory)")
    else:
        try:
            os.makedirs(out)
        except OSError as e:
            raise Failure(f"--out {out}: cannot create the directory ({e.strerror})")
        created = True
    out = os.path.abspath(out)
    b = Bench(a, out, command)
    finished = False
    try:
        b.main()
        finished = True
    finally:
        # on an error or interruption nothing is left behind: the directory
        # if it was made here, else what was written into it
        if not finished:
            if created:
                shutil.rmtree(out, ignore_errors=True)
            else:
                for x in os.listdir(out):
                    p = os.path.join(out, x)
                    shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else os.remove(p)
    if b.mismatch:
        raise Failure(f"FAILED: a skipper configuration's greedy output differs from none's (see above and "
                      f"{out}/results.md)")


class Interrupted(BaseException):
    pass


def on_signal(signum, frame):
    raise Interrupted(128 + signum)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        main(sys.argv[1:])
    except Failure as e:
        say(str(e))
        sys.exit(e.status)
    except Interrupted as e:
        say("interrupted: nothing left behind")
        sys.exit(e.args[0])
