#!/bin/sh
# Hugging Face checkpoints against GGUF, side by side in one run (a command,
# not a test): a checkpoint written in BF16 from MODEL.gguf by
# tests/gguf-to-hf.py (so every row below holds the same model), loaded as
# is and quantised at load, llama.cpp's converter's BF16 GGUF of it (when
# CONVERT_HF_TO_GGUF names convert_hf_to_gguf.py and a python with torch),
# skipper convert's Q8_0 GGUF, and llama.cpp on those files (when LLAMA_BIN
# names its build/bin). Per row: prefill and decode tokens/s, plain and
# lookup, and whether lookup's output is plain decoding's.
#   scripts/bench-hf.sh MODEL.gguf WORKDIR [THREADS]
# Environment: PYTHON3 (numpy + gguf; default scripts/test-python.sh's),
# LLAMA_BIN, CONVERT_HF_TO_GGUF, CONVERT_PYTHON (a python with torch).
set -u
[ $# -ge 2 ] || { echo "usage: scripts/bench-hf.sh MODEL.gguf WORKDIR [THREADS]" >&2; exit 2; }
src=$(cd "$(dirname "$0")/.." && pwd)
M=$1 W=$2 T=${3:-2}
S="$src/skipper"
PY=${PYTHON3:-$("$src/scripts/test-python.sh")} || exit 1
export SKIPPER_PLUGIN_PATH="$src/.libs" SKIPPER_CACHE_DIR="$W/skcache"
mkdir -p "$W" || exit 1
D="$W/checkpoint-bf16"
[ -f "$D/config.json" ] || "$PY" "$src/tests/gguf-to-hf.py" "$M" "$D" --dtype bf16 --shards 2 || exit 1
lscpu | grep -E "Model name|CPU family|^Model:"
git -C "$src" log --oneline -1
P="$W/prompt.txt"
cat > "$P" <<'PR'
Rewrite this function so that it uses a dictionary instead of the chain of if statements, keeping its behaviour:

def grade(score):
    if score >= 90:
        return "A"
    elif score >= 80:
        return "B"
    elif score >= 70:
        return "C"
    elif score >= 60:
        return "D"
    else:
        return "F"
PR
echo "| loaded as | prefill (s) | plain tok/s | lookup tok/s | lookup output = plain |"
echo "|---|---:|---:|---:|---|"
row() { # label, args...
	l=$1
	shift
	"$S" generate -t "$T" -n 1 -f "$P" "$@" >/dev/null 2>&1 # the cost curve, once
	for pol in none lookup; do
		"$S" generate -t "$T" -n 128 -f "$P" --policy $pol --stats "$@" >"$W/out-$pol.txt" 2>"$W/st-$pol.txt" ||
			{ echo "| $l | failed: $(tail -1 "$W/st-$pol.txt") | | | |"; return; }
	done
	pf=$(sed -n 's/.*(prefill \([0-9.]*\),.*/\1/p' "$W/st-none.txt")
	a=$(awk '/decode speed/ {print $3}' "$W/st-none.txt") b=$(awk '/decode speed/ {print $3}' "$W/st-lookup.txt")
	same=$(cmp -s "$W/out-none.txt" "$W/out-lookup.txt" && echo yes || echo NO)
	echo "| $l | $pf | $a | $b | $same |"
}
row "GGUF (the original)" -m "$M"
row "checkpoint, BF16 as is" -m "$D"
if [ -n "${CONVERT_HF_TO_GGUF:-}" ]; then
	[ -f "$W/llamacpp-bf16.gguf" ] || "${CONVERT_PYTHON:-python3}" "$CONVERT_HF_TO_GGUF" "$D" \
		--outfile "$W/llamacpp-bf16.gguf" --outtype bf16 >/dev/null 2>&1
	row "GGUF BF16 from llama.cpp's converter" -m "$W/llamacpp-bf16.gguf"
fi
for q in q8_0 q4_k; do
	"$S" info --set model.quantize=$q "$D" 2>/dev/null | sed -n 's/^quantized: *//p'
	row "checkpoint, quantize = $q" -m "$D" --set model.quantize=$q
done
t0=$(date +%s.%N)
"$S" convert --type q8_0 "$D" "$W/converted-q8_0.gguf" 2>/dev/null
echo "skipper convert --type q8_0: $(echo "$(date +%s.%N) - $t0" | bc) s"
row "skipper convert's Q8_0 GGUF" -m "$W/converted-q8_0.gguf"
if [ -n "${LLAMA_BIN:-}" ]; then
	for f in "$W/llamacpp-bf16.gguf" "$W/converted-q8_0.gguf" "$M"; do
		[ -f "$f" ] && echo "llama-bench $(basename "$f"): $("$LLAMA_BIN/llama-bench" -m "$f" -t "$T" -p 0 -n 64 -r 2 \
			2>/dev/null | awk -F'|' '/tg64/ {print $(NF-1)}') tok/s (tg64)"
	done
fi
