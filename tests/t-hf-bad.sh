#!/bin/sh
# Broken Hugging Face checkpoints: clear refusals, never a crash (tests/hf-bad.py).
: "${top_builddir:=.}" "${top_srcdir:=.}" "${PYTHON3:=python3}"
command -v "$PYTHON3" >/dev/null 2>&1 || { echo "1..0 # SKIP no python3"; exit 0; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/t-hf-bad.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
SKIPPER_SYSTEM_CONFIG=/nonexistent SKIPPER_CACHE_DIR="$tmp/cache" \
	"$PYTHON3" "$top_srcdir/tests/hf-bad.py" "$top_builddir/skipper" "$tmp/cases"
