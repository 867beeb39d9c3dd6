#!/bin/sh
# t-lossless-smollm2.sh on the GPU: `skipper bench --set model.backend=cuda`
# over the 20 Spec-Bench prompts, every `fixed` configuration's greedy output
# identical to `none`'s. Skips (`1..0 # SKIP no CUDA device`) when
# `skipper generate --set model.backend=cuda` refuses the backend, which is
# what it does without a CUDA module or device; with
# SKIPPER_TEST_REQUIRE_CUDA=1 (scripts/device-check.sh) that is a failure.
set -u
: "${top_builddir:=.}" "${top_srcdir:=.}"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
"$top_builddir/tests/gen-model" --out "$t/tiny.gguf" --layers 2 || exit 1
if ! "$top_builddir/skipper" generate --set model.backend=cuda -m "$t/tiny.gguf" -n 2 -p hi >"$t/out" 2>"$t/err"; then
	sed 's/^/# /' "$t/err"
	if [ "${SKIPPER_TEST_REQUIRE_CUDA:-0}" = 1 ]; then
		echo "Bail out! backend cuda refused although SKIPPER_TEST_REQUIRE_CUDA=1"
		exit 1
	fi
	if grep -qi cuda "$t/err"; then
		echo "1..0 # SKIP no CUDA device"
		exit 0
	fi
	echo "Bail out! skipper generate failed for another reason"
	exit 1
fi
SKIPPER_TEST_BACKEND=cuda exec "$top_srcdir/tests/t-lossless-smollm2.sh"
