#!/bin/sh
# skipper next to llama.cpp on Spec-Bench prompts, one interleaved run:
# prompt by prompt, `skipper bench` runs every skipper configuration (and
# checks each greedy output against plain decoding), then llama.cpp's
# llama-completion (plain), llama-lookup (prompt lookup) and
# llama-speculative (draft model) run the same prompt, formatted with the
# same chat template, before the next prompt. Writes a Markdown table per
# category (decode tokens/s, speedup against skipper `none` and against
# llama.cpp plain, acceptance), CSV data and an SVG chart. A benchmark
# command, not a test: run it on a quiet machine. `--help` lists the options.
set -euf

me=bench-peers
root=$(cd "$(dirname "$0")/.." && pwd)
llama_default=/opt/llama/llama_cpp_python-0.3.36/vendor/llama.cpp/build-noamx/bin
llama_built="${XDG_CACHE_HOME:-$HOME/.cache}/skipper/llama.cpp/llama_cpp_python-0.3.36/vendor/llama.cpp/build/bin"
all_policies=none,lookup,bo-static,swift,clasp,knn-router,knapspec,bo-static+lookup,swift+lookup,clasp+lookup,knn-router+lookup,knapspec+lookup

usage() {
	cat <<EOF
usage: scripts/bench-peers.sh [options]
Compare skipper with llama.cpp on Spec-Bench prompts (greedy decoding), both
engines prompt by prompt in one interleaved run, and write DIR/results.md, DIR/runs.csv,
DIR/summary.csv, DIR/chart.svg and the raw logs under DIR/raw/.
  --data FILE[,FILE...]  prompts, JSON lines with "category", "question_id" and
                         "turns" (default: ../shared/data/spec_bench/question.jsonl
                         beside the source tree, then scripts/data/code-edit.jsonl,
                         the category code_editing)
  --categories LIST      comma-separated categories, in this order (default:
                         every category, in file order)
  --per-category N       the first N prompts of each category (default 3)
  --tokens N             new tokens per prompt (default 128)
  --threads N            CPU threads, both engines (default 2)
  --warmup N             untimed runs of the first N prompts of each category
                         by every configuration before measuring (default 1)
  --reps N               measure every prompt N times: the whole run (warm-up
                         included) repeated N times over, the figures totals
                         over all rounds; more rounds average out a machine
                         whose speed drifts (default 1)
  --ctx N                context size, both engines (default 4096)
  --draft-vocab N|auto   skipper's draft passes compute the LM head over the N
                         most frequent tokens ([generate] draft_vocab; the
                         ranking ships for the benchmark models); 0: the whole
                         vocabulary; auto: the shipped ranking's 32768 for
                         the policies that draft with the model (default auto)
  --model NAME|FILE      target model, a scripts/fetch-model.sh name or a GGUF
                         file (default qwen2.5-coder-1.5b)
  --draft-model NAME|FILE
                         draft model of llama-speculative (default
                         qwen2.5-coder-0.5b)
  --policies LIST        skipper configurations: none, lookup, lookup-context
                         (lookup without the corpus n-grams), a policy NAME or
                         NAME+lookup (the policy with context lookup beside it);
                         none is always run; a policy that has no profile for
                         the model is left out with a note (default: all of
                         $(echo "$all_policies" | sed 's/,/, /g' | fold -s -w 54 | sed -e 's/ $//' -e '2,$s/^/                         /'))
  --peers LIST           llama.cpp configurations: plain, lookup, speculative, or
                         none (default plain,lookup,speculative)
  --llama-bin DIR        llama.cpp binaries (default: \$LLAMA_BIN, else
                         $llama_default
                         if present, else the build of scripts/build-llamacpp.sh)
  --out DIR              output directory, must not exist or be empty
                         (default bench-peers-YYYYmmdd-HHMMSS)
  -h, --help             this text
Environment: SKIPPER (the skipper command; default ./skipper of the build tree,
else skipper on PATH), SKIPPER_PLUGIN_PATH and SKIPPER_DATA_PATH (default the
tree's .libs and conf when run from a build tree), LLAMA_BIN.
Exit status: 0 on success; 1 when a skipper configuration's output differs from
none's (the files are complete and say which) or on any error (then nothing is
left behind); 2 on a usage error.
EOF
}

die() { echo "$me: $*" >&2; exit 1; }
usage_error() { echo "$me: $*" >&2; echo "Try 'scripts/bench-peers.sh --help'." >&2; exit 2; }
say() { echo "$me: $*" >&2; }
count() { # OPTION VALUE MIN
	case $2 in
	'' | *[!0-9]*) usage_error "$1: expected a whole number, got '$2'" ;;
	esac
	[ "$2" -ge "$3" ] || usage_error "$1: expected a number >= $3, got '$2'"
}
quote() { # one word for a shell command line
	case $1 in
	'' | *[!A-Za-z0-9_./,:=+@%-]*) printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")" ;;
	*) printf '%s' "$1" ;;
	esac
}
absolute() { case $1 in /*) printf '%s' "$1" ;; *) printf '%s/%s' "$PWD" "$1" ;; esac; }

command_line="scripts/bench-peers.sh"
for a in "$@"; do command_line="$command_line $(quote "$a")"; done

data="$(cd "$root/.." && pwd)/shared/data/spec_bench/question.jsonl,$root/scripts/data/code-edit.jsonl"
categories="" per_cat=3 tokens=128 threads=2 warmup=1 reps=1 ctx=4096 draft_vocab=auto
model=qwen2.5-coder-1.5b draft=qwen2.5-coder-0.5b
policies=$all_policies peers=plain,lookup,speculative
llama_bin="${LLAMA_BIN:-}" out=""
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help) usage; exit 0 ;;
	--data | --categories | --per-category | --tokens | --threads | --warmup | --reps | --ctx | --draft-vocab | \
		--model | --draft-model | --policies | --peers | --llama-bin | --out)
		[ $# -ge 2 ] || usage_error "$1 needs a value"
		case $1 in
		--data) data=$2 ;;
		--categories) categories=$2 ;;
		--per-category) count "$1" "$2" 1; per_cat=$2 ;;
		--tokens) count "$1" "$2" 1; tokens=$2 ;;
		--threads) count "$1" "$2" 1; threads=$2 ;;
		--warmup) count "$1" "$2" 0; warmup=$2 ;;
		--reps) count "$1" "$2" 1; reps=$2 ;;
		--ctx) count "$1" "$2" 64; ctx=$2 ;;
		--draft-vocab) [ "$2" = auto ] || count "$1" "$2" 0; draft_vocab=$2 ;;
		--model) model=$2 ;;
		--draft-model) draft=$2 ;;
		--policies) policies=$2 ;;
		--peers) peers=$2 ;;
		--llama-bin) llama_bin=$2 ;;
		--out) out=$2 ;;
		esac
		shift 2 ;;
	*) usage_error "unknown option '$1'" ;;
	esac
done

# --- check the inputs before anything runs -----------------------------------
command -v python3 >/dev/null || die "python3 is needed (apt-get install python3)"
files=$data data=
while [ -n "$files" ]; do
	f=${files%%,*}
	[ "$f" = "$files" ] && files= || files=${files#*,}
	[ -f "$f" ] || die "--data $f: no such file"
	data="${data:+$data,}$(absolute "$f")"
done

# skipper configurations: none first, then the list as given
skip_list=none
old_ifs=$IFS; IFS=,
for p in $policies; do
	case $p in
	none) continue ;;
	'' | *[!A-Za-z0-9_.+-]* | +* | *+ | *+*+*) usage_error "--policies: bad item '$p' (none, lookup, NAME or NAME+lookup)" ;;
	none+* | lookup+* | lookup-context+*) usage_error "--policies: bad item '$p' (NAME+lookup takes a policy NAME)" ;;
	*+lookup) ;;
	*+*) usage_error "--policies: bad item '$p' (only NAME+lookup combines)" ;;
	esac
	case ",$skip_list," in *",$p,"*) usage_error "--policies: '$p' is listed twice" ;; esac
	skip_list="$skip_list,$p"
done
peer_list=""
for p in $peers; do
	case $p in
	plain | lookup | speculative) case ",$peer_list," in *",$p,"*) usage_error "--peers: '$p' is listed twice" ;; esac
		peer_list="${peer_list:+$peer_list,}$p" ;;
	none) ;;
	*) usage_error "--peers: unknown '$p' (plain, lookup, speculative or none)" ;;
	esac
done
IFS=$old_ifs

# the skipper command and, in a build tree, its plugins and shipped profiles
if [ -n "${SKIPPER:-}" ]; then
	skipper=$SKIPPER
elif [ -x "$root/skipper" ]; then
	skipper="$root/skipper"
	[ -d "$root/.libs" ] && export SKIPPER_PLUGIN_PATH="${SKIPPER_PLUGIN_PATH:-$root/.libs}"
	[ -d "$root/conf/profiles" ] && export SKIPPER_DATA_PATH="${SKIPPER_DATA_PATH:-$root/conf}"
else
	skipper=$(command -v skipper) || die "no skipper command: build the tree (./configure && make) or install skipper, or set SKIPPER"
fi

model_file() { # OPTION NAME|FILE -> path
	if [ -f "$2" ]; then
		absolute "$2"
	else
		"$root/scripts/fetch-model.sh" "$2" || die "$1 $2: neither a file nor a model scripts/fetch-model.sh knows (see --list)"
	fi
}
model_path=$(model_file --model "$model")
case $model_path in /*) ;; *) die "--model $model: fetch-model.sh printed no path" ;; esac
case ",$peer_list," in *,speculative,*) draft_path=$(model_file --draft-model "$draft") ;; *) draft_path="" ;; esac

if [ -n "$peer_list" ]; then
	if [ -z "$llama_bin" ]; then
		for d in "$llama_default" "$llama_built"; do
			[ -x "$d/llama-completion" ] && { llama_bin=$d; break; }
		done
		[ -n "$llama_bin" ] || die "no llama.cpp binaries: build them with scripts/build-llamacpp.sh and give --llama-bin DIR (or LLAMA_BIN), or --peers none"
	fi
	[ -d "$llama_bin" ] || die "--llama-bin $llama_bin: no such directory"
	llama_bin=$(cd "$llama_bin" && pwd)
	old_ifs=$IFS; IFS=,
	for p in $peer_list; do
		case $p in plain) t=llama-completion ;; *) t=llama-$p ;; esac
		[ -x "$llama_bin/$t" ] || die "--llama-bin $llama_bin: no executable $t (scripts/build-llamacpp.sh builds it)"
	done
	IFS=$old_ifs
fi

[ -n "$out" ] || out="bench-peers-$(date +%Y%m%d-%H%M%S)"
if [ -e "$out" ]; then
	[ -d "$out" ] || die "--out $out: exists and is not a directory"
	[ -z "$(ls -A "$out")" ] || die "--out $out: exists and is not empty (give a new directory)"
	created=""
else
	mkdir -p "$out" || die "--out $out: cannot create the directory"
	created=$out
fi
out=$(cd "$out" && pwd)

# On an error or interruption nothing is left behind: the directory if it
# was created here, else what was written into it.
finished=""
trap '[ -n "$finished" ] || if [ -n "$created" ]; then rm -rf "$out"; else find "$out" -mindepth 1 -delete 2>/dev/null || true; fi' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir "$out/prompts" "$out/raw" "$out/configs"

# --- the embedded helper: prompts, log parsing, tables, chart ---------------
helper() {
	python3 - "$@" <<'PY'
import csv, html, json, os, re, struct, sys

me = "bench-peers"

def fail(msg, code=1):
    sys.stderr.write(f"{me}: {msg}\n")
    sys.exit(code)

def gguf_string(path, want):
    """One string value of a GGUF file's metadata, or None."""
    fixed = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            fail(f"{path}: not a GGUF file")
        f.read(4 + 8)
        (n_kv,) = struct.unpack("<Q", f.read(8))
        def string():
            (n,) = struct.unpack("<Q", f.read(8))
            return f.read(n)
        def skip(t):
            if t == 8:
                string()
            elif t == 9:
                at, n = struct.unpack("<IQ", f.read(12))
                if at in fixed:
                    f.seek(fixed[at] * n, 1)
                else:
                    for _ in range(n):
                        skip(at)
            elif t in fixed:
                f.seek(fixed[t], 1)
            else:
                fail(f"{path}: unknown GGUF value type {t}")
        for _ in range(n_kv):
            key = string().decode("utf-8", "replace")
            (t,) = struct.unpack("<I", f.read(4))
            if key == want and t == 8:
                return string().decode("utf-8")
            skip(t)
    return None

def default_system(j):
    """The system turn a ChatML template adds when there is none, as skipper
    finds it (core/tokenizer/chat.c): a literal '<|im_start|>system\\n...<|im_end|>'."""
    head, tail, pos = "<|im_start|>system", "<|im_end|>", 0
    while True:
        p = j.find(head, pos)
        if p < 0:
            return None
        s = pos = p + len(head)
        if j.startswith("\n", s):
            s += 1
        elif j.startswith("\\n", s):
            s += 2
        else:
            continue
        e = j.find(tail, s)
        if e <= s:
            continue
        body = j[s:e]
        if any(c in "'\"{}" for c in body) or re.search(r"\\(?!n)", body):
            continue
        return body.replace("\\n", "\n")

def prep(data, cats, per_cat, model, out):
    per_cat = int(per_cat)
    rows, order = [], []
    for path in data.split(","):
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    o = json.loads(line)
                except ValueError as e:
                    fail(f"{path}:{n}: not JSON ({e})")
                if not isinstance(o, dict):
                    fail(f"{path}:{n}: not a JSON object")
                t = o.get("turns")
                text = t[0] if isinstance(t, list) and t and isinstance(t[0], str) else None
                for k in ("prompt", "text", "instruction"):
                    if text is None and isinstance(o.get(k), str):
                        text = o[k]
                if text is None:
                    fail(f'{path}:{n}: no prompt (expected "turns", "prompt", "text" or "instruction")')
                cat = str(o["category"]) if "category" in o else "all"
                pid = next((str(o[k]) for k in ("question_id", "id") if k in o), str(n))
                rows.append((cat, pid, text, line.strip()))
                if cat not in order:
                    order.append(cat)
    want = [c for c in cats.split(",") if c] if cats else order
    for c in want:
        if c not in order:
            fail(f"--categories: '{c}' is not a category of {data} (it has: {', '.join(order)})", 2)
        if want.count(c) > 1:
            fail(f"--categories: '{c}' is listed twice", 2)
    tmpl = gguf_string(model, "tokenizer.chat_template")
    if tmpl is None:
        kind, system = "none (the prompt as is)", None
    elif "<|im_start|>" in tmpl:
        system = default_system(tmpl)
        kind = "ChatML, system prompt " + (json.dumps(system) if system is not None else "none")
    else:
        fail(f"{model}: the chat template is not ChatML; bench-peers formats llama.cpp's prompts in ChatML only")
    def chat(user):
        if tmpl is None:
            return user
        s = f"<|im_start|>system\n{system}<|im_end|>\n" if system is not None else ""
        return s + f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"
    plan, k, shortest = [], 0, None
    for ci, c in enumerate(want, 1):
        sel = [r for r in rows if r[0] == c][:per_cat]
        cid, ids = f"c{ci:02d}", []
        with open(f"{out}/prompts/{cid}.jsonl", "w", encoding="utf-8") as f:
            for r in sel:
                f.write(r[3] + "\n")
        for r in sel:
            k += 1
            pf = f"p{k:04d}"
            ids.append(pf)
            # llama.cpp's -f drops one final newline: add one for it to take
            with open(f"{out}/prompts/{pf}.txt", "w", encoding="utf-8") as f:
                f.write(chat(r[2]) + "\n")
            if shortest is None or len(r[2]) < len(shortest[2]):
                shortest = r
        with open(f"{out}/prompts/{cid}.list", "w") as f:
            f.write(" ".join(ids) + "\n")
        plan.append({"id": cid, "category": c, "prompts": [{"file": p, "id": r[1]} for p, r in zip(ids, sel)]})
    with open(f"{out}/prompts/probe.jsonl", "w", encoding="utf-8") as f:
        f.write(shortest[3] + "\n")
    with open(f"{out}/prompts/plan.json", "w") as f:
        json.dump({"template": kind, "categories": plan}, f, indent=1)
    print(" ".join(p["id"] for p in plan))

# ---------------------------------------------------------------- report

def llama_run(path, tool):
    try:
        s = open(path, encoding="utf-8", errors="replace").read()
    except OSError:
        fail(f"{path}: missing")
    last = lambda pat: ([None] + list(re.finditer(pat, s)))[-1]  # the summary comes last
    if tool == "plain":  # llama-completion: libllama's perf counters
        p = last(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
        e = last(r"(?<!prompt )eval time =\s*([\d.]+) ms /\s*(\d+) runs")
        if not p or not e:
            fail(f"{path}: no 'prompt eval time' / 'eval time' lines: did llama-completion finish?")
        n = int(e.group(2))
        return {"prompt_tokens": int(p.group(2)), "generated": n + 1, "tokens": n,
                "seconds": float(e.group(1)) / 1e3, "drafted": 0, "accepted": 0}
    enc = last(r"encoded\s+(\d+) tokens in\s+([\d.]+) seconds")
    dec = last(r"decoded\s+(\d+) tokens in\s+([\d.]+) seconds")
    dr = last(r"n_drafted\s*=\s*(\d+)")
    ac = last(r"n_accept\s*=\s*(\d+)")
    if not (enc and dec and dr and ac):
        fail(f"{path}: no 'encoded'/'decoded'/n_drafted/n_accept lines: did llama-{tool} finish?")
    n = int(dec.group(1))
    # the timer starts after the prompt pass, whose logits give the first
    # token: count the tokens after it, as skipper does
    return {"prompt_tokens": int(enc.group(1)), "generated": n, "tokens": max(n - 1, 0),
            "seconds": float(dec.group(2)), "drafted": int(dr.group(1)), "accepted": int(ac.group(1))}

def svg_chart(path, groups, series, values):
    """Grouped bars: values[s][g] = speedup of series s in group g."""
    colors = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
              "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#1b9e77", "#d95f02"]
    top = max([1.2] + [v for row in values for v in row if v is not None]) * 1.1
    step = next(s for s in (0.1, 0.25, 0.5, 1, 2, 5, 10, 20) if top / s <= 10)
    bw = 9
    gw = len(series) * bw + 14
    title = "Decode speedup vs skipper none (greedy; higher is faster)"
    left, right, ph, ptop = 60, 40 + 7 * max(len(x) for x in series), 320, 30
    w, h = max(left + gw * len(groups) + right, left + 8 * len(title)), ptop + ph + 110
    y = lambda v: ptop + ph - v / top * ph
    o = ['<?xml version="1.0" encoding="UTF-8"?>', f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
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
                     f'fill="{colors[si % len(colors)]}"><title>{html.escape(series[si])}, {html.escape(g)}: {v:.2f}x</title></rect>')
        cx = x0 + len(series) * bw / 2
        o.append(f'<text transform="translate({cx:.1f},{ptop + ph + 12}) rotate(40)">{html.escape(g)}</text>')
    o.append(f'<line x1="{left}" x2="{left + gw * len(groups)}" y1="{y(1):.1f}" y2="{y(1):.1f}" stroke="black" stroke-dasharray="4 3"/>')
    o.append(f'<line x1="{left}" x2="{left}" y1="{ptop}" y2="{ptop + ph}" stroke="black"/>')
    lx = left + gw * len(groups) + 16
    for si, s in enumerate(series):
        o.append(f'<rect x="{lx}" y="{ptop + si * 18}" width="12" height="12" fill="{colors[si % len(colors)]}"/>')
        o.append(f'<text x="{lx + 18}" y="{ptop + si * 18 + 10}">{html.escape(s)}</text>')
    o.append("</svg>")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(o) + "\n")

def report(out):
    meta = {}
    with open(f"{out}/raw/meta.tsv") as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("\t")
            meta[k] = v
    plan = json.load(open(f"{out}/prompts/plan.json"))
    cats = [c["category"] for c in plan["categories"]]
    labels = [x for x in meta["policies"].split(",") if x]
    peers = [x for x in meta["peers"].split(",") if x]
    peer_name = {"plain": "llama.cpp plain", "lookup": "llama.cpp lookup",
                 "speculative": f"llama.cpp speculative ({meta['draft_name']} → {meta['model_name']})"}
    configs = [f"skipper {x}" for x in labels] + [peer_name[p] for p in peers]
    reps = int(meta.get("reps", "1"))
    runs, mismatches, warnings, prompt_tokens = [], [], [], {}
    for rep in range(1, reps + 1):
        raw = f"{out}/raw" if rep == 1 else f"{out}/raw/rep-{rep}"
        for c in plan["categories"]:
            path = f"{raw}/skipper-{c['id']}.jsonl"
            ids = {p["id"] for p in c["prompts"]}
            with open(path) as f:
                for line in f:
                    j = json.loads(line)
                    st = j["stats"]
                    if j["id"] not in ids or j["policy"] not in labels:
                        fail(f"{path}: unexpected row {j['id']} {j['policy']}")
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
                for tool in peers:
                    r = llama_run(f"{raw}/{c['id']}-{p['file']}-{tool}.log", tool)
                    r.update({"round": rep, "category": c["category"], "prompt": p["id"], "config": peer_name[tool],
                              "matches_none": ""})
                    runs.append(r)
                    if p["id"] in prompt_tokens and r["prompt_tokens"] != prompt_tokens[p["id"]]:
                        warnings.append(f"prompt {p['id']} ({c['category']}): llama-{'completion' if tool == 'plain' else tool} "
                                        f"read {r['prompt_tokens']} prompt tokens, skipper {prompt_tokens[p['id']]}")
        for c in plan["categories"]:
            for p in c["prompts"]:
                for cfg in configs:
                    if not any(r["round"] == rep and r["prompt"] == p["id"] and r["config"] == cfg and
                               r["category"] == c["category"] for r in runs):
                        fail(f"no result for {cfg} on prompt {p['id']} ({c['category']}), round {rep}")
    cols = cats + ["overall"]
    rounds = [f"round {r}" for r in range(1, reps + 1)] if reps > 1 else []
    agg = {}
    for r in runs:
        for col in (r["category"], "overall", f"round {r['round']}"):
            a = agg.setdefault((r["config"], col), {"prompts": 0, "tokens": 0, "seconds": 0.0, "drafted": 0, "accepted": 0})
            a["prompts"] += r["round"] == 1
            for k in ("tokens", "seconds", "drafted", "accepted"):
                a[k] += r[k]
    rate = lambda cfg, col: agg[(cfg, col)]["tokens"] / agg[(cfg, col)]["seconds"] if agg.get((cfg, col), {}).get("seconds") else None
    base = "skipper none"
    lplain = peer_name["plain"] if "plain" in peers else None
    def ratio(cfg, col, ref):
        a, b = rate(cfg, col), rate(ref, col) if ref else None
        return a / b if a and b else None

    with open(f"{out}/runs.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["round", "category", "prompt_id", "configuration", "prompt_tokens", "generated_tokens",
                    "decode_tokens", "decode_seconds", "decode_tokens_per_s", "drafted", "accepted", "matches_none"])
        for r in runs:
            w.writerow([r["round"], r["category"], r["prompt"], r["config"], r["prompt_tokens"], r["generated"],
                        r["tokens"],
                        f"{r['seconds']:.6f}", f"{r['tokens'] / r['seconds']:.3f}" if r["seconds"] > 0 else "",
                        r["drafted"], r["accepted"], r["matches_none"]])
    with open(f"{out}/summary.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["configuration", "category", "prompts", "decode_tokens", "decode_seconds", "decode_tokens_per_s",
                    "speedup_vs_skipper_none", "speedup_vs_llamacpp_plain", "drafted", "accepted"])
        fmt = lambda v, d: "" if v is None else f"{v:.{d}f}"
        for cfg in configs:
            for col in cols:
                a = agg[(cfg, col)]
                w.writerow([cfg, col, a["prompts"], a["tokens"], f"{a['seconds']:.6f}", fmt(rate(cfg, col), 3),
                            fmt(ratio(cfg, col, base), 4), fmt(ratio(cfg, col, lplain), 4), a["drafted"], a["accepted"]])

    def table(cell, cols=cols):
        t = ["| configuration | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
        for cfg in configs:
            t.append(f"| {cfg} | " + " | ".join(cell(cfg, col) for col in cols) + " |")
        return t
    def speed_cell(cfg, col):
        r, s = rate(cfg, col), ratio(cfg, col, base)
        return "n/a" if r is None else f"{r:.2f} ({s:.2f}x)" if s else f"{r:.2f}"
    x = lambda v: "n/a" if v is None else f"{v:.2f}x"
    def alpha_cell(cfg, col):
        a = agg[(cfg, col)]
        return "–" if not a["drafted"] else f"{a['accepted'] / a['drafted']:.2f} ({a['accepted']}/{a['drafted']})"
    main = table(speed_cell)
    md = ["# skipper and llama.cpp on Spec-Bench", ""]
    if mismatches:
        md += ["**LOSSLESSNESS FAILED: some skipper output differs from skipper none's (see Notes).**", ""]
    md += [
          f"- date: {meta['date']}; run took {meta['elapsed']}",
          f"- command: `{meta['command']}`",
          f"- skipper: {meta['skipper_version']}, git {meta['git']}",
          f"- llama.cpp: {meta['llama_version']} ({meta['llama_bin']})" if peers else "- llama.cpp: not run (--peers none)",
          f"- load average (1 min) at the start and at the end: {meta['load_start']}, {meta['load_end']} on {meta['ncpu']} CPUs",
          f"- CPU: {meta['cpu']}; {meta['threads']} threads for both engines (skipper `--set model.threads={meta['threads']}`, "
          f"llama.cpp `-t {meta['threads']} -tb {meta['threads']}`)",
          f"- model: `{meta['model']}`" + (f"; draft model of llama-speculative: `{meta['draft']}`" if "speculative" in peers else ""),
          f"- prompts: the first {meta['per_category']} of each category of `{meta['data']}` "
          f"({sum(len(c['prompts']) for c in plan['categories'])} in all), first turn, chat template {plan['template']}; "
          f"at most {meta['tokens']} new tokens, greedy, context {meta['ctx']}; skipper draft vocabulary "
          f"{meta.get('draft_vocab', '0')} (0: the whole; auto: the shipped ranking for policies that draft with the model); warm-up: the first {meta['warmup']} "
          "prompt(s) of each category once per configuration, not timed",
          "- order: prompt by prompt, category by category: `skipper bench` (every skipper configuration), "
          "then llama.cpp plain, lookup, speculative, then the next prompt" +
          (f"; all of it (warm-up included) {reps} times over" if reps > 1 else ""),
          "- measure: decode tokens/s = tokens after the first (which the prompt pass yields) / time after the prompt pass, "
          "summed over the prompts of the column" + (f" and the {reps} rounds" if reps > 1 else "") +
          " (total tokens / total seconds). skipper: its own statistics; "
          "llama-lookup and llama-speculative: their `decoded N tokens in T seconds` timer (N - 1 tokens counted); "
          "llama-completion: libllama's `eval time` (one-token decode calls; its sampling time is not in it)",
          "", "## Decode tokens/s (speedup vs skipper none in the same run)", ""] + main
    if lplain:
        md += ["", "## Speedup vs llama.cpp plain", ""] + table(lambda cfg, col: x(ratio(cfg, col, lplain)))
    if rounds:
        md += ["", "## Overall, round by round: decode tokens/s (speedup vs skipper none in the same round)", ""]
        md += table(speed_cell, rounds)
    md += ["", "## Acceptance: accepted / drafted tokens", ""] + table(alpha_cell)
    md += ["", "## Notes", ""]
    if mismatches:
        md.append("- **LOSSLESSNESS FAILED**: greedy output differs from skipper none's: " +
                  "; ".join(f"{p} on {c} prompt {i}" for p, c, i in mismatches))
    else:
        n = sum(1 for r in runs if r["config"].startswith("skipper ") and r["config"] != base)
        md.append(f"- every skipper configuration's greedy output equals skipper none's ({n} prompt runs checked by `skipper bench`)")
    for line in meta.get("notes", "").split("\x1f"):
        if line:
            md.append(f"- {line}")
    try:
        busy = float(meta["load_start"]) > int(meta["ncpu"]) - int(meta["threads"]) + 0.5
    except ValueError:
        busy = False
    if warnings:
        md += [f"- WARNING: {w}" for w in warnings]
    elif peers:
        md.append("- prompt token counts: llama.cpp read the same number of prompt tokens as skipper on every prompt")
    if busy:
        warnings.append(f"the machine was busy when the run started (load average {meta['load_start']} on "
                        f"{meta['ncpu']} CPUs, {meta['threads']} threads used): other jobs distort the figures")
        md.append(f"- WARNING: {warnings[-1]}")
    md += [f"- llama.cpp commands: `{meta['llama_cmd']}`" if peers else "",
           "- files: runs.csv (one row per round, prompt and configuration), summary.csv, chart.svg (no chart when only "
           "skipper none ran), raw/ (round 1; round r in raw/rep-r/: skipper bench JSONL "
           "per category in skipper-CAT.jsonl, each prompt's own run in prompt-PROMPT.*; llama.cpp's standard error in CAT-PROMPT-TOOL.log, its text in .out; prompts/ holds the "
           "prompts as llama.cpp read them)", ""]
    with open(f"{out}/results.md", "w") as f:
        f.write("\n".join(l for l in md if l is not None) + "\n")

    chart = [c for c in configs if c != base]
    if len(chart) > 8:
        chart = [c for c in chart if c.endswith("lookup") or c.startswith("llama.cpp")] or chart[:8]
    if chart:
        svg_chart(f"{out}/chart.svg", cols, chart, [[ratio(c, col, base) for col in cols] for c in chart])
    print("\n".join(main))
    for w in warnings:
        sys.stderr.write(f"{me}: warning: {w}\n")
    if mismatches:
        for p, c, i in mismatches:
            sys.stderr.write(f"{me}: LOSSLESSNESS FAILED: skipper {p} on {c} prompt {i}: output differs from none's\n")
        sys.exit(3)

cmd = sys.argv[1]
if cmd == "prep":
    prep(*sys.argv[2:])
elif cmd == "report":
    report(sys.argv[2])
PY
}

# --- prompts -----------------------------------------------------------------
start=$(date +%s)
load() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo unknown; }
load_start=$(load)
cat_ids=$(helper prep "$data" "$categories" "$per_cat" "$model_path" "$out") || exit $?

sk() { # skipper bench with the common settings; the rest of the arguments follow
	"$skipper" bench -m "$model_path" --set "model.threads=$threads" --set "model.ctx=$ctx" \
		--set "generate.draft_vocab=$draft_vocab" "$@" </dev/null
}

# --- skipper configurations: drop a policy that has no profile for the model --
notes=""
note() { notes="${notes:+$notes$(printf '\037')}$*"; say "$*"; }
policies_run=none items=none probed_ok="" probed_bad=""
for p in $(echo "$skip_list" | tr ',' ' '); do
	[ "$p" != none ] || continue
	base=${p%+lookup}
	case " $probed_ok $probed_bad " in
	*" $base "*) ;;
	*)
		if [ "$base" = lookup ] || [ "$base" = lookup-context ]; then
			probed_ok="$probed_ok $base"
		else
			say "checking that policy $base starts on this model"
			if sk --data "$out/prompts/probe.jsonl" --policies "$base" --max-tokens 2 --warmup 0 \
				>/dev/null 2>"$out/raw/probe.err"; then
				probed_ok="$probed_ok $base"
			elif grep -q 'no [a-z]* profile' "$out/raw/probe.err"; then
				probed_bad="$probed_bad $base"
				note "skipper $base and $base+lookup left out: $(grep -o 'no [a-z]* profile' "$out/raw/probe.err" | head -n 1) for $(basename "$model_path") (\`skipper calibrate --policy $base\` writes one)"
			else
				cat "$out/raw/probe.err" >&2
				die "skipper cannot run policy $base on $model_path (see above)"
			fi
			rm -f "$out/raw/probe.err"
		fi ;;
	esac
	case " $probed_bad " in *" $base "*) continue ;; esac
	policies_run="$policies_run,$p"
	case $p in
	*+lookup)
		printf '; bench-peers: policy %s with context lookup beside it\n[policy]\nname = %s\nlookup = yes\n' \
			"$base" "$base" >"$out/configs/$p.ini"
		items="$items,$out/configs/$p.ini" ;;
	lookup-context)
		printf '; bench-peers: context lookup without the corpus n-grams\n[policy]\nname = lookup\n[lookup]\nngrams = off\n' \
			>"$out/configs/$p.ini"
		items="$items,$out/configs/$p.ini" ;;
	*) items="$items,$p" ;;
	esac
done

# --- llama.cpp ---------------------------------------------------------------
amx=""
grep -q -w -e amx_tile -e amx_int8 /proc/cpuinfo 2>/dev/null && amx=1
llama() { # TOOL PROMPT_FILE LOG: its standard error in LOG, the text in LOG without .log, .out
	case $1 in
	plain) set -- "$llama_bin/llama-completion" "$2" "$3" -no-cnv ;;
	lookup) set -- "$llama_bin/llama-lookup" "$2" "$3" ;;
	speculative) set -- "$llama_bin/llama-speculative" "$2" "$3" -md "$draft_path" -td "$threads" -tbd "$threads" ;;
	esac
	tool=$1 pf=$2 log=$3
	shift 3
	status=0
	"$tool" -m "$model_path" -f "$pf" -n "$tokens" --temp 0 -t "$threads" -tb "$threads" -c "$ctx" \
		--no-escape "$@" </dev/null >"${log%.log}.out" 2>"$log" || status=$?
	if [ "$status" != 0 ]; then
		tail -n 20 "$log" >&2
		hint=""
		[ "$status" -gt 128 ] && [ -n "$amx" ] &&
			hint=" (this CPU has AMX: llama.cpp's native build crashes on multi-row batches there; scripts/build-llamacpp.sh builds without AMX)"
		die "$(basename "$tool") failed with status $status on $pf (log above)$hint"
	fi
}
llama_cmd="llama-completion|llama-lookup|llama-speculative -m $(basename "$model_path") -f PROMPT.txt -n $tokens --temp 0 -t $threads -tb $threads -c $ctx --no-escape; llama-completion also -no-cnv; llama-speculative also -md $(basename "${draft_path:-none}") -td $threads -tbd $threads"

# --- the run: per category, skipper then llama.cpp; N rounds of it -----------
# Round 1 writes raw/, round r > 1 raw/rep-r/ (the same names).
n_cat=$(echo "$cat_ids" | wc -w)
mismatch=""
for r in $(seq "$reps"); do
	raw="$out/raw"
	[ "$r" = 1 ] || { raw="$out/raw/rep-$r"; mkdir "$raw"; }
	round=""
	[ "$reps" = 1 ] || round="round $r/$reps, "
	i=0
	for c in $cat_ids; do
		i=$((i + 1))
		name=$(python3 -c 'import json, sys; print(next(c["category"] for c in json.load(open(sys.argv[1]))["categories"] if c["id"] == sys.argv[2]))' "$out/prompts/plan.json" "$c")
		list=$(cat "$out/prompts/$c.list")
		n=$(echo "$list" | wc -w)
		tag="[$round$i/$n_cat] $name"
		# prompt by prompt, skipper's configurations then llama.cpp's on the
		# same prompt: a shared machine's memory speed can change within
		# minutes (on one it went from 43 to 80 GB/s), and a category's
		# skipper runs then its llama.cpp runs were compared across such a
		# change
		: >"$raw/skipper-$c.jsonl"
		: >"$raw/skipper-$c.err"
		k=0
		for p in $list; do
			k=$((k + 1))
			wu=0
			[ "$k" -gt "$warmup" ] || wu=1
			sed -n "${k}p" "$out/prompts/$c.jsonl" >"$out/prompts/$p.jsonl"
			say "$tag: prompt $k/$n: skipper bench, $(echo "$policies_run" | tr ',' '\n' | wc -l) configurations ($(($(date +%s) - start)) s)"
			status=0
			sk --data "$out/prompts/$p.jsonl" --policies "$items" --max-tokens "$tokens" --warmup "$wu" \
				--out "$raw/prompt-$p" >"$raw/prompt-$p.table" 2>"$raw/prompt-$p.err" || status=$?
			cat "$raw/prompt-$p.jsonl" >>"$raw/skipper-$c.jsonl" 2>/dev/null || true
			cat "$raw/prompt-$p.err" >>"$raw/skipper-$c.err"
			if [ "$status" != 0 ]; then
				if [ "$status" = 1 ] && grep -q '"matches_baseline":false' "$raw/prompt-$p.jsonl" 2>/dev/null; then
					say "$tag: a skipper configuration's output differs from none's (listed at the end)"
					mismatch=1
				else
					tail -n 20 "$raw/prompt-$p.err" >&2
					die "skipper bench failed with status $status on category $name, prompt $k (above)"
				fi
			fi
			[ -n "$peer_list" ] || continue
			if [ "$wu" = 1 ]; then
				say "$tag: prompt $k/$n: llama.cpp warm-up"
				for t in $(echo "$peer_list" | tr ',' ' '); do
					llama "$t" "$out/prompts/$p.txt" "$raw/warmup.log"
				done
				rm -f "$raw/warmup.log" "$raw/warmup.out"
			fi
			say "$tag: prompt $k/$n: llama.cpp ($(echo "$peer_list" | tr ',' ' '))"
			for t in $(echo "$peer_list" | tr ',' ' '); do
				llama "$t" "$out/prompts/$p.txt" "$raw/$c-$p-$t.log"
			done
		done
	done
done
elapsed=$(($(date +%s) - start))

# --- report --------------------------------------------------------------------
cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -n 1)
[ -n "$cpu" ] || cpu=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n 1)
git=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
[ "$git" = unknown ] || [ -z "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ] || git="$git (with uncommitted changes)"
llama_version=""
[ -z "$peer_list" ] || llama_version=$("$llama_bin/llama-completion" --version 2>&1 | sed -n 's/^version: //p' | head -n 1)
stem() { if [ -f "$1" ]; then basename "$2" .gguf; else printf '%s' "$1"; fi; }
{
	printf 'date\t%s\n' "$(date '+%Y-%m-%d %H:%M:%S %Z')"
	printf 'elapsed\t%s s\n' "$elapsed"
	printf 'command\t%s\n' "$command_line"
	printf 'skipper_version\t%s\n' "$("$skipper" --version 2>/dev/null | head -n 1)"
	printf 'git\t%s\n' "$git"
	printf 'llama_version\t%s\n' "${llama_version:-unknown}"
	printf 'llama_bin\t%s\n' "$llama_bin"
	printf 'llama_cmd\t%s\n' "$llama_cmd"
	printf 'cpu\t%s\n' "${cpu:-unknown}"
	printf 'ncpu\t%s\n' "$(nproc 2>/dev/null || echo unknown)"
	printf 'load_start\t%s\n' "$load_start"
	printf 'load_end\t%s\n' "$(load)"
	printf 'threads\t%s\n' "$threads"
	printf 'model\t%s\n' "$model_path"
	printf 'model_name\t%s\n' "$(stem "$model" "$model_path")"
	printf 'draft\t%s\n' "$draft_path"
	printf 'draft_name\t%s\n' "$(stem "$draft" "${draft_path:-none}")"
	printf 'data\t%s\n' "$data"
	printf 'per_category\t%s\n' "$per_cat"
	printf 'tokens\t%s\n' "$tokens"
	printf 'ctx\t%s\n' "$ctx"
	printf 'draft_vocab\t%s\n' "$draft_vocab"
	printf 'warmup\t%s\n' "$warmup"
	printf 'reps\t%s\n' "$reps"
	printf 'policies\t%s\n' "$policies_run"
	printf 'peers\t%s\n' "$peer_list"
	printf 'notes\t%s\n' "$notes"
} >"$out/raw/meta.tsv"
status=0
helper report "$out" || status=$?
case $status in
0) ;;
3) mismatch=1 ;;
*) die "could not write the report" ;;
esac
finished=1
say "wrote $out/results.md and the data beside it in $elapsed s"
[ -z "$mismatch" ] || { say "FAILED: a skipper configuration's greedy output differs from none's (see above and $out/results.md)"; exit 1; }
exit 0
