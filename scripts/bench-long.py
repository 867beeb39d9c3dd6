#!/usr/bin/env python3
"""Long contexts: skipper beside llama.cpp on prompts of 4K to 32K tokens
built from text on this machine, side by side in one run. A benchmark
command, not a test: run it on a quiet machine. `--help` lists the options.

The prompts (made here, then tokenized by skipper as a run sees them):
  code-edit  a prefix of a Python standard-library module (_pydecimal.py)
             and a request to rewrite one of its functions (lookup's case:
             the answer copies most of a function from the context)
  explain    the same source, and a request to explain the module
  summarize  the license texts of /usr/share/common-licenses, and a request
             to summarise the first one
each cut at a line so that the prompt, chat template included, has 98 % to
100 % of the tokens asked for (a length the model's context cannot hold with
the answer is lowered to what it can).

For every length: `skipper bench` once per K/V cache type (a process per
length, so that its peak memory is that length's), every configuration on
the same prompt (each output checked against `none`'s with the same cache;
the prompt is read once and reused by the others, [generate] prefix_cache),
then llama-server once per llama.cpp setting (plain or a draft-free
speculative mode; flash attention on or off; f16 or q8_0 cache), the same
token ids, greedy, its prompt read and timed by itself. Reported: prefill
tokens/s (the first configuration's, the one that reads the whole prompt),
decode tokens/s, speedups against plain decoding run again last
("none-again": the first run, right after the long prefill, measured slow)
and against llama.cpp's fastest setting, and each process's peak resident
memory. Writes
results.md, results.csv and decode.svg under --out."""
import argparse
import csv
import importlib.util
import json
import os
import shlex
import subprocess
import sys
import sysconfig
import types
import urllib.request

ME = "bench-long"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("bench_peers", os.path.join(ROOT, "scripts", "bench-peers.py"))
peers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peers)
Failure, count = peers.Failure, peers.count


def say(msg):
    sys.stderr.write(f"{ME}: {msg}\n")
    sys.stderr.flush()

LICENSES = ("GPL-3", "GFDL-1.3", "Apache-2.0", "MPL-2.0", "LGPL-2.1", "GPL-2", "MPL-1.1", "Artistic", "LGPL-3",
            "GFDL-1.2", "CC0-1.0", "BSD")
# llama.cpp settings: NAME=server arguments (--llama replaces them)
LLAMA = ("plain-f16=-fa off", "plain-f16-fa=-fa on", "plain-q8_0-fa=-fa on -ctk q8_0 -ctv q8_0",
         "ngram-simple-f16-fa=-fa on --spec-type ngram-simple")


def parse_args(argv):
    p = argparse.ArgumentParser(prog=ME, description=__doc__, formatter_class=peers.Help)
    p.add_argument("--model", default="qwen2.5-coder-1.5b", metavar="NAME|FILE",
                   help="model file or cached name (default qwen2.5-coder-1.5b)")
    p.add_argument("--lengths", default="4096,8192,16384,32768", metavar="LIST",
                   help="prompt lengths in tokens (default 4096,8192,16384,32768)")
    p.add_argument("--kinds", default="code-edit", metavar="LIST",
                   help="code-edit, explain, summarize (default code-edit)")
    p.add_argument("--tokens", type=count(1), default=128, metavar="N", help="new tokens per run (default 128)")
    p.add_argument("--threads", type=count(1), default=2, metavar="N", help="CPU threads, both engines (default 2)")
    p.add_argument("--policies", default="none,lookup,bo-static,knapspec,bo-static+lookup,knapspec+lookup",
                   metavar="LIST", help="skipper configurations, none first (skipper bench --policies)")
    p.add_argument("--kv", default="f16,q8_0", metavar="LIST", help="skipper's K/V cache types (default f16,q8_0)")
    p.add_argument("--llama", action="append", default=[], metavar="NAME=ARGS",
                   help="a llama-server setting, repeatable (default: %s)" % "; ".join(LLAMA))
    p.add_argument("--llama-bin", default=os.environ.get("LLAMA_BIN", peers.LLAMA_BUILT), metavar="DIR",
                   help="llama.cpp's build/bin (scripts/build-llamacpp.sh)")
    p.add_argument("--no-llama", action="store_true", help="skipper only")
    p.add_argument("--out", default="bench-long-out", metavar="DIR", help="where results go (default bench-long-out)")
    a = p.parse_args(argv)
    try:
        a.lengths = [int(x) for x in a.lengths.split(",")]
    except ValueError:
        p.error("--lengths: whole numbers separated by commas")
    a.kinds = a.kinds.split(",")
    for k in a.kinds:
        if k not in ("code-edit", "explain", "summarize"):
            p.error(f"--kinds: unknown kind '{k}'")
    a.kv = a.kv.split(",")
    a.llama = [] if a.no_llama else [x.split("=", 1) for x in (a.llama or LLAMA)]
    return a


def model_path(name):
    if os.path.exists(name):
        return os.path.abspath(name)
    r = subprocess.run([os.path.join(ROOT, "scripts", "fetch-model.sh"), name], capture_output=True, text=True)
    if r.returncode != 0:
        raise Failure(f"--model {name}: {r.stderr.strip()}")
    return r.stdout.strip().splitlines()[-1]


def source(kind):
    """The text a kind of prompt is cut from, and the request after it."""
    if kind == "summarize":
        parts = []
        for name in LICENSES:
            path = os.path.join("/usr/share/common-licenses", name)
            if os.path.isfile(path):
                parts.append(f"===== {name} =====\n" + open(path, encoding="utf-8", errors="replace").read())
        if not parts:
            raise Failure("no license texts in /usr/share/common-licenses")
        return "\n".join(parts), ("Summarise the obligations the first license above places on someone who "
                                  "distributes the software, in five bullet points.")
    path = os.path.join(sysconfig.get_paths()["stdlib"], "_pydecimal.py")
    text = open(path, encoding="utf-8").read()
    return text, None


def request(kind, body):
    if kind == "code-edit":
        # a function from the middle of what was kept
        defs = [i for i in range(len(body)) if body.startswith("\n    def ", i)]
        i = defs[len(defs) // 2] if defs else 0
        name = body[i + 9:body.index("(", i + 9)] if defs else "the first function"
        return (f"Here is a Python module:\n\n```python\n{body}```\n\nRewrite the method `{name}` above so that it "
                f"validates its arguments and raises TypeError with a clear message for a wrong type. Output only "
                f"the new method.")
    if kind == "explain":
        return f"Here is a Python module:\n\n```python\n{body}```\n\nExplain what this module does: its main " \
               f"classes, how they work together, and what a user calls."
    return None


def dump(a, model, prompts, path):
    """Token counts of prompts (a list of (id, text)) as skipper tokenizes them."""
    with open(path, "w", encoding="utf-8") as f:
        for pid, text in prompts:
            f.write(json.dumps({"question_id": pid, "category": "long", "turns": [text]}) + "\n")
    r = subprocess.run([a.sk.cmd, "bench", "--data", path, "--dump-prompts", "-", "-m", model],
                       capture_output=True, text=True, env=a.sk.env)
    if r.returncode != 0:
        raise Failure(f"skipper bench --dump-prompts: {r.stderr.strip()}")
    return [json.loads(line) for line in r.stdout.splitlines()]


def make_prompt(a, model, kind, length, tmp):
    """A prompt of at most `length` tokens and no fewer than 98 % of them,
    its user text and ids."""
    text, tail = source(kind)
    chars = length * 3
    for _ in range(6):
        body = text[:chars]
        body = body[:body.rfind("\n") + 1]
        user = request(kind, body) if tail is None else f"{body}\n\n{tail}"
        d = dump(a, model, [(f"{kind}-{length}", user)], tmp)[0]
        n = len(d["prompt_ids"])
        if length * 0.98 <= n <= length:
            return d
        if chars >= len(text) and n < length:
            raise Failure(f"{kind}: the source text gives only {n} tokens, fewer than {length}")
        chars = min(len(text), int(chars * length * 0.99 / n))
    raise Failure(f"{kind}: no cut of the text within 2 % of {length} tokens (last {n})")


def train_ctx(a):
    """The model's training context (skipper info), 0 when it has none."""
    r = subprocess.run([a.sk.cmd, "info", a.model_file], capture_output=True, text=True, env=a.sk.env)
    for line in r.stdout.splitlines():
        if line.startswith("context (train):"):
            return int(line.split(":", 1)[1])
    return 0


def ctx_for(a, length):
    """The context both engines get: the prompt, the answer, and room for
    a round's drafts, within the training context."""
    n = length + a.tokens + 512
    return min(n, a.train_ctx) if a.train_ctx else n


def run_child(cmd, log, env=None):
    """Run cmd to its end: exit status and its peak resident memory (MiB)."""
    with open(log, "wb") as f:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT, env=env)
        _, status, ru = os.wait4(p.pid, 0)
    return os.waitstatus_to_exitcode(status), ru.ru_maxrss / 1024


def policy_items(a, out):
    """skipper bench --policies items: NAME+lookup as an INI of its own,
    and plain decoding once more at the end, "none-again": the first
    run follows the prompt's long prefill and was measured slower than
    plain steps later (9.3 against 14.2 tok/s after 16K tokens), so the
    speedups are taken against the second."""
    items = []
    os.makedirs(os.path.join(out, "configs"), exist_ok=True)
    with open(os.path.join(out, "configs", "none-again.ini"), "w", encoding="utf-8") as f:
        f.write("; bench-long: plain decoding again, after the others\n[policy]\nname = none\n")
    for p in a.policies.split(",") + [os.path.join(out, "configs", "none-again.ini")]:
        if p.endswith("+lookup"):
            path = os.path.join(out, "configs", p + ".ini")
            with open(path, "w", encoding="utf-8") as f:
                f.write(f"; bench-long: policy {p[:-7]} with context lookup beside it\n[policy]\nname = {p[:-7]}\n"
                        "lookup = yes\n")
            p = path
        items.append(p)
    return ",".join(items)


def skipper_runs(a, model, prompt, kv, out):
    """Every configuration on one prompt with one cache type."""
    length = len(prompt["prompt_ids"])
    data = os.path.join(out, f"{prompt['id']}.jsonl")
    with open(data, "w", encoding="utf-8") as f:
        f.write(json.dumps({"question_id": prompt["id"], "category": "long", "turns": [prompt["user"]]}) + "\n")
    prefix = os.path.join(out, f"skipper-{prompt['id']}-{kv}")
    cmd = [a.sk.cmd, "bench", "--data", data, "--policies", policy_items(a, out), "--max-tokens", str(a.tokens),
                           "--warmup", "0", "-m", model, "--set", f"model.threads={a.threads}",
                           "--set", f"model.ctx={ctx_for(a, length)}", "--set", f"model.kv_type={kv}",
                           "--set", "model.backend=cpu", "--out", prefix]
    say(f"{prompt['id']}: skipper, {kv} cache: {a.policies}")
    status, rss = run_child(cmd, prefix + ".log", a.sk.env)
    if status not in (0, 1) or not os.path.exists(prefix + ".jsonl"):
        sys.stderr.write(peers.tail(prefix + ".log"))
        raise Failure(f"skipper bench failed (status {status}; {prefix}.log)")
    rows = [json.loads(line) for line in open(prefix + ".jsonl", encoding="utf-8")]
    first = rows[0]["stats"]
    prefill = (first["prompt_tokens"] - first["prompt_reused"]) / max(first["prefill_seconds"], 1e-9)
    res = []
    for r in rows:
        st = r["stats"]
        res.append({"engine": "skipper", "config": f"{r['policy']} ({kv})", "kv": kv, "prefill": prefill,
                    "decode": st["tokens_per_s"], "alpha": st["alpha"], "M": st["mean_accepted"], "rss": rss,
                    "same": r["matches_baseline"]})
    if status == 1:
        say(f"{prompt['id']}: an output differs from none's with the {kv} cache ({prefix}.log)")
    return res


def llama_run(a, prompt, name, args, out):
    """One llama-server for one setting: the prompt's ids, greedy, timed."""
    length = len(prompt["prompt_ids"])
    port = peers.free_port()
    t = str(a.threads)
    cmd = [os.path.join(a.llama_bin, "llama-server"), "-m", a.model_file, "-t", t, "-tb", t, "-c",
           str(ctx_for(a, length)), "-np", "1", "--host", "127.0.0.1", "--port", str(port)] + shlex.split(args)
    log = os.path.join(out, f"llama-{prompt['id']}-{name}.log")
    say(f"{prompt['id']}: llama-server {name} ({args})")
    with open(log, "wb") as f:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT)
    waiter = peers.Llama.__new__(peers.Llama)  # its wait_ready, on this server
    waiter.server = p
    try:
        waiter.wait_ready(port, cmd, log)
        body = {"prompt": prompt["prompt_ids"], "n_predict": a.tokens, "temperature": 0, "cache_prompt": False,
                "stream": False}
        req = urllib.request.Request(f"http://127.0.0.1:{port}/completion", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=7200) as r:
            res = json.load(r)
    finally:
        if p.poll() is None:
            p.terminate()
        _, status, ru = os.wait4(p.pid, 0)
    tm = res["timings"]
    n = int(tm["predicted_n"])
    drafted, accepted = int(tm.get("draft_n", 0)), int(tm.get("draft_n_accepted", 0))
    return {"engine": "llama.cpp", "config": f"llama.cpp {name}", "kv": "q8_0" if "q8_0" in args else "f16",
            "prefill": float(tm["prompt_n"]) / (float(tm["prompt_ms"]) / 1e3),
            "decode": max(n - 1, 0) / (float(tm["predicted_ms"]) / 1e3),
            "alpha": accepted / drafted if drafted else 0.0, "M": 0.0, "rss": ru.ru_maxrss / 1024, "same": None}


def report(a, cpu, results, out):
    lines = [f"# Long contexts: {os.path.basename(a.model_file)}, {a.threads} threads, {a.tokens} new tokens",
             "", f"Machine: {cpu}. One run, prompt by prompt (`scripts/bench-long.py "
             f"{' '.join(shlex.quote(x) for x in sys.argv[1:])}`).", ""]
    rows = []
    for pid, res in results:
        base = {r["kv"]: r["decode"] for r in res if r["engine"] == "skipper" and r["config"].startswith("none-again")}
        llama = [r for r in res if r["engine"] == "llama.cpp"]
        best = max(llama, key=lambda r: r["decode"]) if llama else None
        bestp = max(llama, key=lambda r: r["prefill"]) if llama else None
        lines += [f"## {pid}", "", "| configuration | prefill tok/s | decode tok/s | vs skipper none-again (same cache) "
                  f"| vs llama.cpp's best decode{' (' + best['config'][10:] + ')' if best else ''} | alpha | "
                  "peak RSS MiB | output = none's |", "|---|---:|---:|---:|---:|---:|---:|---|"]
        for r in res:
            vs_none = r["decode"] / base[r["kv"]] if r["engine"] == "skipper" and base.get(r["kv"]) else None
            vs_best = r["decode"] / best["decode"] if best else None
            f = lambda x: "" if x is None else f"{x:.2f}x"
            same = "" if r["same"] is None else ("yes" if r["same"] else "**NO**")
            lines.append(f"| {r['config']} | {r['prefill']:.1f} | {r['decode']:.2f} | {f(vs_none)} | {f(vs_best)} | "
                         f"{r['alpha']:.2f} | {r['rss']:.0f} | {same} |")
            rows.append(dict(prompt=pid, **r))
        if bestp:
            sk = max((r for r in res if r["engine"] == "skipper"), key=lambda r: r["prefill"])
            lines += ["", f"Prefill: skipper {sk['prefill']:.1f} tok/s ({sk['kv']}) = "
                      f"{sk['prefill'] / bestp['prefill']:.2f}x llama.cpp's best ({bestp['config'][10:]}, "
                      f"{bestp['prefill']:.1f} tok/s)."]
        lines.append("")
    with open(os.path.join(out, "results.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(out, "results.csv"), "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    configs = list(dict.fromkeys(r["config"] for _, res in results for r in res))
    groups = [pid for pid, _ in results]
    values = []
    for c in configs:
        row = []
        for _, res in results:
            base = next((r["decode"] for r in res if r["config"] == "llama.cpp plain-f16-fa"),
                        max([r["decode"] for r in res if r["engine"] == "llama.cpp"] or [0]))
            v = next((r["decode"] for r in res if r["config"] == c), None)
            row.append(v / base if v is not None and base else None)
        values.append(row)
    if any(v is not None for row in values for v in row):
        peers.svg_chart(os.path.join(out, "decode.svg"), groups, configs, values,
                        title="Decode speed vs llama.cpp plain (flash attention, f16 cache); higher is faster")
    sys.stdout.write("\n".join(lines) + "\n")


def main(argv):
    a = parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    a.model_file = model_path(a.model)
    a.sk = peers.Skipper(types.SimpleNamespace(threads=a.threads, ctx=0, draft_vocab="auto"), a.model_file)
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    fields = dict(line.split(":", 1) for line in cpu.splitlines() if ":" in line)
    cpu = (f"`lscpu` \"{fields.get('Model name', '?').strip()}\", family {fields.get('CPU family', '?').strip()} "
           f"model {fields.get('Model', '?').strip()}")
    if a.llama and not os.access(os.path.join(a.llama_bin, "llama-server"), os.X_OK):
        raise Failure(f"no llama-server in {a.llama_bin} (scripts/build-llamacpp.sh, or --no-llama)")
    results = []
    a.train_ctx = train_ctx(a)
    for kind in a.kinds:
        for length in a.lengths:
            if a.train_ctx and length + a.tokens + 64 > a.train_ctx:
                # the answer and a round's drafts must fit beside the prompt
                say(f"{length} tokens: {a.train_ctx - a.tokens - 64} instead, within the model's context of "
                    f"{a.train_ctx} with {a.tokens} new tokens")
                length = a.train_ctx - a.tokens - 64
            prompt = make_prompt(a, a.model_file, kind, length, os.path.join(a.out, "probe.jsonl"))
            say(f"{prompt['id']}: {len(prompt['prompt_ids'])} tokens")
            res = []
            for kv in a.kv:
                res += skipper_runs(a, a.model_file, prompt, kv, a.out)
            for name, args in a.llama:
                res.append(llama_run(a, prompt, name, args, a.out))
            results.append((f"{prompt['id']} ({len(prompt['prompt_ids'])} tokens)", res))
            report(a, cpu, results, a.out)
    if any(r["same"] is False for _, res in results for r in res):
        raise Failure("FAILED: a skipper configuration's greedy output differs from none's (results.md)")


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except Failure as e:
        say(str(e))
        sys.exit(e.status)
    except KeyboardInterrupt:
        say("interrupted")
        sys.exit(130)
