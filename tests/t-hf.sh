#!/bin/sh
# Hugging Face checkpoints against transformers and the GGUF they came from
# (tests/hf-check.py; skips without numpy and the gguf package).
: "${top_builddir:=.}" "${top_srcdir:=.}" "${PYTHON3:=python3}"
command -v "$PYTHON3" >/dev/null 2>&1 || { echo "1..0 # SKIP no python3"; exit 0; }
cache=${XDG_CACHE_HOME:-$HOME/.cache}/skipper/models
tmp=$(mktemp -d "${TMPDIR:-/tmp}/t-hf.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
"$PYTHON3" "$top_srcdir/tests/hf-check.py" "$top_builddir" "$top_srcdir" "$tmp" \
	"${SKIPPER_TEST_MODEL:-$cache/SmolLM2-135M-Instruct.Q4_1.gguf}"
