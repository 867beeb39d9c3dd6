#!/bin/sh
# Decode speed and peak memory of `skipper generate` next to llama.cpp
# (PyPI llama-cpp-python, driven through its C API so the Python wrapper is
# not what is measured), same GGUF file, same prompt, same thread count, runs
# interleaved. A benchmark command, not a test: run it on a quiet machine.
#   scripts/bench-llamacpp.sh [MODEL.gguf] [N_TOKENS] [REPEATS]
set -eu
cd "$(dirname "$0")/.."
model="${1:-$(./scripts/fetch-model.sh)}"
n="${2:-128}"
reps="${3:-3}"
prompt="The history of the printing press begins"
command -v /usr/bin/time >/dev/null || { echo "needs GNU time (apt-get install time)" >&2; exit 1; }
python3 -c "import llama_cpp" 2>/dev/null || { echo "needs llama-cpp-python (pip install llama-cpp-python)" >&2; exit 1; }

llama() { # threads -> "tok/s peak_kb"
	/usr/bin/time -f "%M" -o /tmp/skipper-bench-rss python3 - "$model" "$1" "$n" "$prompt" <<'PY'
import sys, time, numpy as np, llama_cpp
path, threads, n, prompt = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
llm = llama_cpp.Llama(model_path=path, n_threads=threads, n_threads_batch=threads, n_ctx=4096, verbose=False)
ids = llm.tokenize(prompt.encode(), add_bos=False, special=False)
llm.eval(ids)
ctx, nv = llm.ctx, llm.n_vocab()
tok = int(np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, -1), shape=(nv,)).argmax())
one = (llama_cpp.llama_token * 1)()
t0 = time.perf_counter()
for _ in range(n - 1):  # the first token came from the prompt pass, as in skipper
    one[0] = tok
    if llama_cpp.llama_decode(ctx, llama_cpp.llama_batch_get_one(one, 1)) != 0:
        raise SystemExit("llama_decode failed")
    tok = int(np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, -1), shape=(nv,)).argmax())
print(f"{(n - 1) / (time.perf_counter() - t0):.2f}")
PY
	tail -1 /tmp/skipper-bench-rss
}

skipper() { # threads -> "tok/s" then peak kb
	/usr/bin/time -f "%M" -o /tmp/skipper-bench-rss ./skipper generate -m "$model" -t "$1" --ctx 4096 \
		--template none -n "$n" -p "$prompt" --json |
		python3 -c "import json,sys; s=json.load(sys.stdin)['stats']; print(f\"{s['tokens_per_s']:.2f}\")"
	tail -1 /tmp/skipper-bench-rss
}

# Python + numpy + llama_cpp import, without a model: subtracted from
# llama.cpp's peak RSS to compare the engines rather than the interpreters.
/usr/bin/time -f "%M" -o /tmp/skipper-bench-rss python3 -c "import numpy, llama_cpp" 
py_kb=$(tail -1 /tmp/skipper-bench-rss)

printf "threads run skipper_tok/s llama_tok/s ratio skipper_peak_MiB llama_peak_MiB(-python %s MiB) mem_ratio\n" $((py_kb / 1024))
for t in 1 2; do
	for r in $(seq "$reps"); do
		set -- $(skipper "$t") $(llama "$t")
		awk -v t="$t" -v r="$r" -v s="$1" -v sm="$2" -v l="$3" -v lm="$4" -v py="$py_kb" 'BEGIN {
			printf "%d %d %.2f %.2f %.3f %.1f %.1f %.3f\n", t, r, s, l, s / l, sm / 1024, (lm - py) / 1024, sm / (lm - py) }'
	done
done
