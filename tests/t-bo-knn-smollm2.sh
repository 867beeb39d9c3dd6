#!/bin/sh
# The shipped SmolLM2 profiles (conf/bo-static.ini, conf/knn-router.ini)
# load and keep greedy decoding identical to plain decoding on a few
# Spec-Bench prompts (`skipper bench` exits 1 on any difference).
set -u
model="${SKIPPER_TEST_MODEL:-${XDG_CACHE_HOME:-$HOME/.cache}/skipper/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
if [ ! -f "$model" ]; then
	echo "1..0 # SKIP $model not found (scripts/fetch-model.sh fetches it)"
	exit 0
fi
out=$(mktemp -d "${TMPDIR:-/tmp}/t-bo-knn-smollm2.XXXXXX") || exit 1
trap 'rm -rf "$out"' EXIT
echo "1..2"
cd "$top_srcdir" || exit 1 # the example INIs name their profiles relative to the source tree
for p in bo-static knn-router; do
	"$top_builddir/skipper" bench --data tests/data/specbench-20.jsonl --limit 2 --max-tokens 16 --warmup 0 \
		--policies "none,conf/$p.ini" --set model.path="$model" --set model.threads=2 \
		>"$out/$p.table" 2>"$out/$p.err"
	rc=$?
	grep all "$out/$p.table" | sed 's/^/# /'
	if [ "$rc" = 0 ]; then
		echo "ok - $p: shipped profile, greedy output identical to none"
	else
		sed 's/^/# /' "$out/$p.err"
		echo "not ok - $p: bench exit $rc"
	fi
done
