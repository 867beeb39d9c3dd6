#!/bin/sh
# Forward parity with llama.cpp on the Qwen2.5-Coder models (qwen2
# architecture, Q4_K/Q5_0/Q6_K/Q8_0 weights): tests/t-parity against the
# recorded tests/data/logits-qwen2.5-coder-*.json, for each model that is in
# the cache (scripts/fetch-model.sh qwen2.5-coder-0.5b fetches the one
# `make check` uses; the 1.5B is checked where it was fetched for the
# benchmarks).
#
# Tolerance 2.0: both engines quantise every matmul input to 8 bits, so
# rounding differences (summation order, which the two engines' SIMD paths
# do differently, and so do our own ISA paths among themselves) flip
# activation roundings and leave logit noise that grows with depth: measured
# max |ours - llama.cpp| 1.20 on the 0.5B (24 layers) and 0.41 on the 1.5B
# over these prompts; our generic and AVX2 kernels differ from each other by
# 0.6 on the 1.5B. A wrong bias, RoPE layout or scale is off by units.
: "${top_builddir:=.}" "${top_srcdir:=.}"
cache=${SKIPPER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/skipper}/models
have=0
for m in 0.5b 1.5b; do
	[ -f "$cache/qwen2.5-coder-$m-instruct-q4_k_m.gguf" ] && have=$((have + 1))
done
[ "$have" -gt 0 ] || { echo "1..0 # SKIP no Qwen2.5-Coder model cached (scripts/fetch-model.sh qwen2.5-coder-0.5b)"; exit 0; }
out=$(mktemp "${TMPDIR:-/tmp}/t-parity-qwen.XXXXXX") || exit 1
trap 'rm -f "$out"' EXIT
n=0 status=0
for m in 0.5b 1.5b; do
	file="$cache/qwen2.5-coder-$m-instruct-q4_k_m.gguf"
	[ -f "$file" ] || continue
	"$top_builddir/tests/t-parity" "$file" "$top_srcdir/tests/data/logits-qwen2.5-coder-$m.json" 2.0 >"$out" || status=1
	# renumber the sub-test's TAP lines into one plan
	while IFS= read -r line; do
		case "$line" in
		"ok "* | "not ok "*)
			n=$((n + 1))
			echo "$line" | sed "s/^\(not \)\{0,1\}ok [0-9]* - /\1ok $n - qwen2.5-coder-$m: /" ;;
		"#"*) echo "$line" ;;
		esac
	done <"$out"
done
echo "1..$n"
exit $status
