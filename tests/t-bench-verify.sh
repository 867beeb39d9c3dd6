#!/bin/sh
# tests/bench-verify, the command that times a backend's passes (not a
# timing test: nothing here depends on how fast they are): its keys, a
# long context set up by --fill (the K/V it copies read back by the
# command itself), both cache types, and a --fill past --prompt refused.
set -u
: "${top_builddir:=.}"
cache=${XDG_CACHE_HOME:-$HOME/.cache}/skipper/models
model="${SKIPPER_TEST_MODEL:-$cache/SmolLM2-135M-Instruct.Q4_1.gguf}"
if [ ! -f "$model" ]; then
	echo "1..0 # SKIP $model not found (scripts/fetch-model.sh fetches it)"
	exit 0
fi
bv="$top_builddir/tests/bench-verify"
out=$(mktemp -d "${TMPDIR:-/tmp}/t-bench-verify.XXXXXX") || exit 1
trap 'rm -rf "$out"' EXIT
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); echo "not ok $n - $1"; sed 's/^/# /' "$out/o" "$out/e"; }
has() { grep -q "$1" "$out/o"; }

for kv in f16 q8_0; do
	"$bv" "$model" --backend cpu --threads 2 --prompt 1000 --fill 100 --tokens 4 --sizes 1,3 --reps 1 \
		--kv "$kv" --profile >"$out/o" 2>"$out/e"
	rc=$?
	if [ $rc = 0 ] && has "^backend=cpu kv=$kv$" && has '^prefill_tokens=100 ' && has '^filled_tokens=900$' &&
		has '^verify_n=1 verify_ms=' && has '^verify_n=3 ' && has '^profile_n=3 .*attention_ms=' &&
		has '^draft_full_ms='; then
		ok "--fill 100 --prompt 1000 --kv $kv: 900 slots copied, read back, passes timed after them"
	else
		nok "--fill --kv $kv (exit $rc)"
	fi
done

"$bv" "$model" --backend cpu --threads 2 --prompt 64 --tokens 2 --sizes 2 --reps 1 >"$out/o" 2>"$out/e"
rc=$?
[ $rc = 0 ] && has '^prefill_tokens=64 ' && ! has '^filled_tokens' && has '^verify_n=2 ' &&
	ok "without --fill: the whole prompt prefilled, nothing copied" || nok "without --fill (exit $rc)"

"$bv" "$model" --backend cpu --prompt 100 --fill 101 >"$out/o" 2>"$out/e"
rc=$?
[ $rc = 2 ] && grep -q 'fill N <= --prompt' "$out/e" && ok "--fill past --prompt: usage, exit 2" ||
	nok "--fill past --prompt (exit $rc)"
echo "1..$n"
