#!/bin/sh
# [generate] prefix_cache: a request reads the K/V of the longest prefix its
# prompt shares with what its sequence holds from the request before, and
# computes the same bits as without (batch invariance). skipper bench runs
# every policy on a prompt after the one before it: with the cache, none
# reads the shared chat-template prefix of the previous prompt and every
# later policy all of the prompt but its last token; without it, nothing.
# The output ids are the same both ways.
set -u
: "${top_builddir:=.}" "${top_srcdir:=.}"
model="${SKIPPER_TEST_MODEL:-${XDG_CACHE_HOME:-$HOME/.cache}/skipper/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
if [ ! -f "$model" ]; then
	echo "1..0 # SKIP $model not found (scripts/fetch-model.sh fetches it)"
	exit 0
fi
d="$top_srcdir/tests/data"
out=$(mktemp -d "${TMPDIR:-/tmp}/t-prefix-cache.XXXXXX") || exit 1
trap 'rm -rf "$out"' EXIT
echo "1..5"
for pc in yes no; do
	"$top_builddir/skipper" bench --data "$d/specbench-20.jsonl" --limit 6 --max-tokens 24 --warmup 0 \
		--policies "none,lookup,$d/policies/light.ini" --set model.path="$model" --set model.threads=2 \
		--set model.backend=cpu --set generate.prefix_cache=$pc --out "$out/$pc" >/dev/null 2>"$out/err-$pc"
	rc=$?
	[ $rc = 0 ] && echo "ok - prefix_cache = $pc: bench ran, every output as none's" ||
		{ echo "not ok - prefix_cache = $pc: bench exit $rc"; sed 's/^/# /' "$out/err-$pc"; }
done
# per run: policy, prompt length, tokens reused, output ids
fields() {
	sed -n 's/^{"id":"\([^"]*\)".*"policy":"\([^"]*\)".*"prompt_tokens":\([0-9]*\).*"prompt_reused":\([0-9]*\).*"output_ids":\(\[[0-9,]*\]\)}$/\1 \2 \3 \4 \5/p' "$1"
}
fields "$out/yes.jsonl" >"$out/yes"
fields "$out/no.jsonl" >"$out/no"
full=$(awk '$2 != "none" && $4 == $3 - 1' "$out/yes" | wc -l)
[ "$full" = 12 ] && echo "ok - with the cache, lookup and light read all of each prompt but its last token (12 runs)" ||
	{ echo "not ok - $full of 12 runs read their whole prompt"; sed 's/^/# /' "$out/yes"; }
none=$(awk '$4 != 0' "$out/no" | wc -l)
[ "$none" = 0 ] && [ "$(wc -l <"$out/no")" = 18 ] && echo "ok - without it nothing is read (18 runs)" ||
	echo "not ok - prefix_cache = no: $none runs read a prefix"
cut -d' ' -f1,2,5 "$out/yes" >"$out/yes.ids"
cut -d' ' -f1,2,5 "$out/no" >"$out/no.ids"
cmp -s "$out/yes.ids" "$out/no.ids" && [ -s "$out/yes.ids" ] &&
	echo "ok - the same output ids with and without the cache, policy by policy, prompt by prompt" ||
	echo "not ok - the outputs differ with the cache"
