#!/bin/sh
# skipper's CPU backend next to llama.cpp (built natively, see
# scripts/build-llamacpp.sh) on the same GGUF files and thread counts, runs
# interleaved: prompt processing of 512 tokens, decoding of 128 tokens after
# a 512-token context, and the verification curve: the time of one pass over
# n = 1..16 tokens after a 640-token context, as a multiple of one token
# (skipper: tests/bench-verify; llama.cpp: llama-bench pp n at depth 640).
# And skipper's draft step as a fraction of a full step: every other layer
# skipped (half of the layers' weight bytes), with the full LM head and with
# the head over 32768 tokens ([generate] draft_vocab).
# Peak resident memory of each process too. A benchmark command, not a
# test: run it on a quiet machine. `--help` lists the options.
set -eu

me=bench-cpu
root=$(cd "$(dirname "$0")/.." && pwd)
models=smollm2-135m,qwen2.5-coder-0.5b,qwen2.5-coder-1.5b
threads=2 reps=3 sizes=1,2,3,4,5,6,7,8,10,12,16
llama_default=/opt/llama/llama_cpp_python-0.3.36/vendor/llama.cpp/build-noamx/bin
llama_built="${XDG_CACHE_HOME:-$HOME/.cache}/skipper/llama.cpp/llama_cpp_python-0.3.36/vendor/llama.cpp/build/bin"
llama_bin="${LLAMA_BIN:-}"

usage() {
	cat <<EOF
usage: scripts/bench-cpu.sh [--models LIST] [--threads LIST] [--reps N] [--sizes LIST]
                            [--llama-bin DIR]
  --models LIST     scripts/fetch-model.sh names or GGUF files (default
                    $models)
  --threads LIST    thread counts, each run separately (default $threads)
  --reps N          interleaved repetitions; the table shows the median (default $reps)
  --sizes LIST      verification sizes (default $sizes)
  --llama-bin DIR   llama.cpp's llama-bench (default \$LLAMA_BIN, else
                    $llama_default
                    if present, else the build of scripts/build-llamacpp.sh)
EOF
}
die() { echo "$me: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help) usage; exit 0 ;;
	--models | --threads | --reps | --sizes | --llama-bin)
		[ $# -ge 2 ] || die "$1 needs a value"
		case $1 in
		--models) models=$2 ;;
		--threads) threads=$2 ;;
		--reps) reps=$2 ;;
		--sizes) sizes=$2 ;;
		--llama-bin) llama_bin=$2 ;;
		esac
		shift 2 ;;
	*) usage >&2; exit 2 ;;
	esac
done
case $reps in '' | *[!0-9]* | 0) die "--reps: expected a positive number, got '$reps'" ;; esac
if [ -z "$llama_bin" ]; then
	for d in "$llama_default" "$llama_built"; do
		[ -x "$d/llama-bench" ] && { llama_bin=$d; break; }
	done
fi
[ -x "$llama_bin/llama-bench" ] || die "--llama-bin $llama_bin: no llama-bench (scripts/build-llamacpp.sh builds it)"
[ -x "$root/tests/bench-verify" ] || die "$root/tests/bench-verify: not built (make -C $root tests/bench-verify)"
command -v /usr/bin/time >/dev/null || die "needs GNU time (apt-get install time)"
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT

# one line per measurement: model threads rep engine metric value
for t in $(echo "$threads" | tr , ' '); do
	for m in $(echo "$models" | tr , ' '); do
		if [ -f "$m" ]; then path=$m; else path=$("$root/scripts/fetch-model.sh" "$m") || die "--models: $m"; fi
		name=$(basename "$path" .gguf)
		for r in $(seq "$reps"); do
			echo "$me: $name, $t threads, run $r of $reps" >&2
			/usr/bin/time -f "rss_kib=%M" "$root/tests/bench-verify" "$path" --backend cpu --threads "$t" \
				--prompt 512 --tokens 128 --sizes "$sizes" --reps 10 --draft-vocab 32768 >"$tmp/sk" 2>&1 || { cat "$tmp/sk" >&2; die "bench-verify failed"; }
			# llama-bench: pp512; tg128 after 512; pp n after 640
			/usr/bin/time -f "rss_kib=%M" "$llama_bin/llama-bench" -m "$path" -t "$t" -r 3 -o jsonl \
				-p 512 -n 0 >"$tmp/l1" 2>"$tmp/l1.err" || { cat "$tmp/l1.err" >&2; die "llama-bench failed"; }
			"$llama_bin/llama-bench" -m "$path" -t "$t" -r 3 -o jsonl -p 0 -n 128 -d 512 >"$tmp/l2" 2>/dev/null ||
				die "llama-bench failed"
			"$llama_bin/llama-bench" -m "$path" -t "$t" -r 5 -o jsonl -p "$sizes" -n 0 -d 640 >"$tmp/l3" 2>/dev/null ||
				die "llama-bench failed"
			python3 - "$name" "$t" "$r" "$tmp" <<'PY' >>"$tmp/all"
import json, re, sys
name, t, r, d = sys.argv[1:5]
sk = open(f"{d}/sk").read()
kv = dict(re.findall(r"(\w+)=([0-9.]+)", sk))
out = lambda eng, metric, v: print(name, t, r, eng, metric, v)
out("skipper", "pp512", int(kv["prefill_tokens"]) / float(kv["prefill_s"]))
out("skipper", "tg128", kv["decode_tok_per_s"])
out("skipper", "rss_mib", int(kv["rss_kib"]) / 1024)
for k in ("draft_half_ratio", "draft_half_subset_ratio"):
    if k in kv:
        out("skipper", k, kv[k])
for n, ms in re.findall(r"verify_n=(\d+) verify_ms=([0-9.]+)", sk):
    out("skipper", f"verify{n}", ms)
rss = re.search(r"rss_kib=(\d+)", open(f"{d}/l1.err").read())
out("llama.cpp", "rss_mib", int(rss.group(1)) / 1024 if rss else 0)
for f in ("l1", "l2", "l3"):
    for line in open(f"{d}/{f}"):
        j = json.loads(line)
        if j["n_gen"]:
            out("llama.cpp", "tg128", j["avg_ts"])
        elif j["n_depth"] == 0:
            out("llama.cpp", "pp512", j["avg_ts"])
        else:  # one pass of n tokens, in ms
            out("llama.cpp", f"verify{j['n_prompt']}", 1000.0 * j["n_prompt"] / j["avg_ts"])
PY
		done
	done
done

python3 - "$tmp/all" "$sizes" <<'PY'
import collections, statistics, subprocess, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    name, t, r, eng, metric, v = line.split()
    rows[(name, t, eng, metric)].append(float(v))
med = {k: statistics.median(v) for k, v in rows.items()}
sizes = [int(s) for s in sys.argv[2].split(",")]
cpu = next((l.split(":", 1)[1].strip() for l in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines()
            if l.startswith("Model name")), "unknown")
print(f"CPU: {cpu}; medians of {max(len(v) for v in rows.values())} interleaved runs\n")
for name, t in sorted({(k[0], k[1]) for k in med}):
    g = lambda eng, m: med.get((name, t, eng, m), float("nan"))
    print(f"## {name}, {t} threads\n")
    print("| | skipper | llama.cpp | ratio |\n|---|---:|---:|---:|")
    for m, what in (("pp512", "prompt processing, tok/s (512 tokens)"), ("tg128", "decode, tok/s (128 after 512)"),
                    ("rss_mib", "peak RSS, MiB")):
        print(f"| {what} | {g('skipper', m):.2f} | {g('llama.cpp', m):.2f} | {g('skipper', m) / g('llama.cpp', m):.2f} |")
    print("\nOne pass over n tokens after 640, as a multiple of one token (ms of one token in the header):\n")
    print("| engine | " + " | ".join(f"n={n}" for n in sizes) + " |")
    print("|---|" + "---:|" * len(sizes))
    for eng in ("skipper", "llama.cpp"):
        one = g(eng, "verify1")
        print(f"| {eng} ({one:.1f} ms) | " + " | ".join(f"{g(eng, f'verify{n}') / one:.2f}" for n in sizes) + " |")
    print(f"\nskipper draft step, every other layer skipped, as a fraction of a full step: "
          f"{g('skipper', 'draft_half_ratio'):.2f} with the full LM head, "
          f"{g('skipper', 'draft_half_subset_ratio'):.2f} with the head over 32768 tokens\n")
PY
