#!/bin/sh
# Cross-check against llama.cpp's gguf Python package (skips without it).
: "${top_builddir:=.}" "${top_srcdir:=.}" "${PYTHON3:=python3}"
[ -n "$PYTHON3" ] && command -v "$PYTHON3" >/dev/null 2>&1 || { echo "1..0 # SKIP no python3"; exit 0; }
model=${SKIPPER_TEST_MODEL:-${XDG_CACHE_HOME:-$HOME/.cache}/skipper/models/SmolLM2-135M-Instruct.Q4_1.gguf}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/t-gguf-ref.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
"$PYTHON3" "$top_srcdir/tests/gguf-ref.py" "$top_builddir/tests/quant-tool" "$top_builddir/tests/gen-model" "$tmp" "$model"
