#!/bin/sh
# swift on SmolLM2-135M: greedy output == plain decoding token for token
# (`skipper bench` exits 1 on any difference) with tree verification;
# the search runs from the first request on.
set -u
model="${SKIPPER_TEST_MODEL:-${XDG_CACHE_HOME:-$HOME/.cache}/skipper/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
if [ ! -f "$model" ]; then
	echo "1..0 # SKIP $model not found (scripts/fetch-model.sh fetches it)"
	exit 0
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
head -n 2 "$top_srcdir/tests/data/specbench-20.jsonl" >"$out/p.jsonl"
printf '[policy]\nname = swift\n[swift]\ngamma = 8\n' >"$out/swift.ini"
echo "1..2"
"$top_builddir/skipper" bench --data "$out/p.jsonl" --max-tokens 32 --warmup 0 --policies "none,$out/swift.ini" \
	--set model.path="$model" --set model.threads=2 --out "$out/r" >"$out/table" 2>"$out/err"
rc=$?
sed 's/^/# /' "$out/table" "$out/err"
[ "$rc" = 0 ] && echo "ok 1 - swift greedy output identical to none on 2 prompts" || echo "not ok 1 - bench exit $rc"
drafted=$(grep '"policy":"swift' "$out/r.jsonl" | grep -c '"drafted":[1-9]')
[ "$drafted" -gt 0 ] && echo "ok 2 - swift drafted ($drafted runs)" || echo "not ok 2 - nothing drafted"
