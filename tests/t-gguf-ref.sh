#!/bin/sh
# Cross-check against llama.cpp's gguf Python package (skips without it).
: "${top_builddir:=.}" "${top_srcdir:=.}" "${PYTHON3:=python3}"
[ -n "$PYTHON3" ] && command -v "$PYTHON3" >/dev/null 2>&1 || { echo "1..0 # SKIP no python3"; exit 0; }
cache=${XDG_CACHE_HOME:-$HOME/.cache}/skipper/models
smollm2=${SKIPPER_TEST_MODEL:-$cache/SmolLM2-135M-Instruct.Q4_1.gguf}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/t-gguf-ref.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
"$PYTHON3" "$top_srcdir/tests/gguf-ref.py" "$top_builddir/tests/quant-tool" "$top_builddir/tests/gen-model" "$tmp" \
	"SmolLM2=$smollm2" "Qwen2.5-Coder-0.5B=$cache/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf" \
	"Qwen2.5-Coder-1.5B=$cache/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
