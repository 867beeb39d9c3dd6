# Sourced by the t-*-lossless.sh tests of the method policies:
#   lossless_smollm2 POLICY 'key = value\n...'
# runs `skipper bench` on SmolLM2-135M (2 Spec-Bench prompts, 32 tokens) with
# none and POLICY configured by the given section body. bench exits 1 when
# any greedy output differs from none's; the policy must also have drafted.
# `skipper generate --stats` must show the policy's search/DP time per run.
# The callers' sections say costs = false: the method's own schedule, so its
# search and drafts run even where on a CPU the budget would keep them plain.
lossless_smollm2() {
	policy=$1 section=$2
	model="${SKIPPER_TEST_MODEL:-${XDG_CACHE_HOME:-$HOME/.cache}/skipper/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
	if [ ! -f "$model" ]; then
		echo "1..0 # SKIP $model not found (scripts/fetch-model.sh fetches it)"
		return 0
	fi
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
	head -n 2 "$top_srcdir/tests/data/specbench-20.jsonl" >"$out/p.jsonl"
	printf "[policy]\nname = $policy\n[$policy]\n$section\n" >"$out/$policy.ini"
	echo "1..3"
	"$top_builddir/skipper" bench --data "$out/p.jsonl" --max-tokens 32 --warmup 0 --policies "none,$out/$policy.ini" \
		--set model.path="$model" --set model.threads=2 --out "$out/r" >"$out/table" 2>"$out/err"
	rc=$?
	sed 's/^/# /' "$out/table" "$out/err"
	[ "$rc" = 0 ] && echo "ok 1 - $policy greedy output identical to none on 2 prompts" || echo "not ok 1 - bench exit $rc"
	drafted=$(grep "\"policy\":\"$policy" "$out/r.jsonl" | grep -c '"drafted":[1-9]')
	[ "$drafted" -gt 0 ] && echo "ok 2 - $policy drafted ($drafted runs)" || echo "not ok 2 - nothing drafted"
	"$top_builddir/skipper" generate -c "$out/$policy.ini" --set model.path="$model" --set model.threads=2 -n 16 \
		--stats -p "Name three colours." >/dev/null 2>"$out/gen"
	line=$(grep -E "policy $policy: info: .*ms (per run|each)" "$out/gen")
	[ -n "$line" ] && echo "ok 3 - generate --stats shows the policy's time per run: $line" ||
		{ sed 's/^/# /' "$out/gen"; echo "not ok 3 - no search/DP time in generate --stats"; }
}
