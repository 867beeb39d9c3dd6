#!/bin/sh
# Greedy self-speculative decoding on SmolLM2-135M must reproduce plain
# decoding token for token: 20 Spec-Bench prompts, `fixed` with light, heavy,
# threshold-exit and tree-verification configurations. `skipper bench`
# compares every output with `none`'s and exits 1 on any difference.
# SKIPPER_TEST_BACKEND=cuda runs it on the GPU (t-lossless-cuda.sh).
set -u
backend=${SKIPPER_TEST_BACKEND:-cpu}
model="${SKIPPER_TEST_MODEL:-${XDG_CACHE_HOME:-$HOME/.cache}/skipper/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
if [ ! -f "$model" ]; then
	echo "1..0 # SKIP $model not found (scripts/fetch-model.sh fetches it)"
	exit 0
fi
d="$top_srcdir/tests/data"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "1..7"
"$top_builddir/skipper" bench --data "$d/specbench-20.jsonl" --max-tokens 32 --warmup 0 \
	--policies "none,$d/policies/light.ini,$d/policies/heavy.ini,$d/policies/threshold.ini,$d/policies/tree.ini" \
	--set model.path="$model" --set model.threads=2 --set model.backend="$backend" --out "$out/r" \
	>"$out/table" 2>"$out/err"
rc=$?
sed 's/^/# /' "$out/table" "$out/err"
[ "$rc" = 0 ] && echo "ok 1 - bench ran, no output differs from none's" || echo "not ok 1 - bench exit $rc"
n=2
for p in light heavy threshold tree; do
	# the "all" row of this policy: mismatches (last column) must be 0 over 20 prompts
	row=$(grep "^| \*\*all\*\* | $p |" "$out/table")
	prompts=$(echo "$row" | awk -F'|' '{gsub(/ /,"",$4); print $4}')
	mism=$(echo "$row" | awk -F'|' '{gsub(/ /,"",$13); print $13}')
	if [ "$prompts" = 20 ] && [ "$mism" = 0 ]; then
		echo "ok $n - $p: 20 prompts, greedy output identical to none"
	else
		echo "not ok $n - $p: prompts '$prompts', mismatches '$mism'"
	fi
	n=$((n + 1))
done
drafted=$(grep -c '"drafted":[1-9]' "$out/r.jsonl")
[ "$drafted" -gt 0 ] && echo "ok $n - policies drafted tokens ($drafted runs)" || echo "not ok $n - nothing drafted"
n=$((n + 1))
# the JSONL carries each run's token ids: every policy's output ids equal
# none's, prompt by prompt (one distinct pair per prompt), none empty
pairs=$(sed -n 's/^{"id":"\([^"]*\)".*"prompt_ids":\[[0-9][0-9,]*\],"output_ids":\(\[[0-9][0-9,]*\]\)}$/\1 \2/p' "$out/r.jsonl")
lines=$(printf '%s\n' "$pairs" | grep -c .)
distinct=$(printf '%s\n' "$pairs" | sort -u | grep -c .)
if [ "$lines" = 100 ] && [ "$distinct" = 20 ]; then
	echo "ok $n - JSONL token ids: 100 runs, one output per prompt"
else
	echo "not ok $n - JSONL token ids: $lines runs with ids, $distinct distinct (prompt, output) pairs"
fi
