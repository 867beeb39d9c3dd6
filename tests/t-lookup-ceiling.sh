#!/bin/sh
# scripts/lookup-ceiling.py: the speedup each lookup source could reach on a
# run's token streams (drafting exactly what gets accepted, priced by the
# cost curve), worked out by hand on three small streams; bad input is an
# error naming the file and line.
: "${top_srcdir:=.}" "${PYTHON3:=python3}"
[ -n "$PYTHON3" ] && command -v "$PYTHON3" >/dev/null 2>&1 || { echo "1..0 # SKIP no python3"; exit 0; }
set -u
t=$(mktemp -d "${TMPDIR:-/tmp}/t-lookup-ceiling.XXXXXX") || exit 1
trap 'rm -rf "$t"' EXIT
echo "1..9"
lc() { "$PYTHON3" "$top_srcdir/scripts/lookup-ceiling.py" "$@"; }

# verify(n) = 1 + (n - 1) / 2, extrapolated past 3 rows
printf '# skipper cost curve\nstep_seconds 0.01\nverify 1 1.0\nverify 2 1.5\nverify 3 2.0\n' >"$t/c.costs"
# corpus: after 50 comes 51, after 51 comes 52
printf '# skipper n-grams\n51 3 4 50\n52 3 4 51\n' >"$t/ngrams.txt"
# copy: the output copies the prompt from token 3 on (one round drafts the
#   6 tokens after the first, 7 rows: 4 steps for 7 tokens);
# new: nothing to copy, the corpus chain drafts 51 52 (3 rows: 2 steps);
# twice: the most recent 7 in the prompt is followed by 5 6, the earlier one
#   by 3 4, which the output writes
cat >"$t/run.jsonl" <<'J'
{"id":"1","category":"copy","policy":"none","prompt_ids":[1,2,3,4,5,6,7,8,9],"output_ids":[3,4,5,6,7,8,9,100],"stats":{"seconds":2.0,"prefill_seconds":1.0}}
{"id":"1","category":"copy","policy":"lookup","prompt_ids":[1,2,3,4,5,6,7,8,9],"output_ids":[3,4,5,6,7,8,9,100],"stats":{"seconds":1.5,"prefill_seconds":1.0}}
{"id":"2","category":"new","policy":"none","prompt_ids":[1,2,3],"output_ids":[50,51,52,53]}
{"id":"3","category":"twice","policy":"none","prompt_ids":[7,3,4,1,7,5,6],"output_ids":[7,3,4,9]}
J

check() { # N DESCRIPTION EXPECTED-LINE
	if grep -qxF "$3" "$t/out"; then echo "ok $1 - $2"; else
		sed 's/^/# /' "$t/out" "$t/err"; echo "not ok $1 - $2"; fi
}
lc --costs "$t/c.costs" --ngrams "$t/ngrams.txt" "$t/run.jsonl" >"$t/out" 2>"$t/err"
check 1 "a copied span drafts in one round; measured lookup from the stats" \
	"| copy | 7 | 2.00x | 1.75x | 1.75x | 1.75x |"
check 2 "the corpus chain drafts what the context cannot" "| new | 3 | - | 1.00x | 1.50x | 1.50x |"
check 3 "every occurrence finds the older continuation" "| twice | 3 | - | 1.20x | 1.20x | 1.50x |"
check 4 "overall over all tokens" "| overall | 13 | 2.00x | 1.37x | 1.53x | 1.62x |"
lc --costs "$t/c.costs" "$t/run.jsonl" >"$t/out" 2>"$t/err"
check 5 "without n-grams no corpus column" "| new | 3 | - | 1.00x | 1.00x |"

fails() { # N DESCRIPTION PATTERN ARGS...
	n=$1 what=$2 pat=$3
	shift 3
	if lc "$@" >"$t/out" 2>"$t/err"; then echo "not ok $n - $what (succeeded)"
	elif [ -s "$t/out" ] || ! grep -q "$pat" "$t/err"; then sed 's/^/# /' "$t/err"; echo "not ok $n - $what"
	else echo "ok $n - $what"; fi
}
# context: "1 2 3 4" occurs twice, after 9 (then 5 6) and after 8 (then 7 7);
#   the prompt ends "9 1 2 3" and the output writes 4 5 6: the occurrence
#   whose context agrees (9) is copied, not the most recent one
printf '{"id":"4","category":"context","policy":"none","prompt_ids":[9,1,2,3,4,5,6,8,1,2,3,4,7,7,0,9,1,2,3],"output_ids":[4,5,6,100]}\n' >"$t/ctx.jsonl"
lc --costs "$t/c.costs" "$t/ctx.jsonl" >"$t/out" 2>"$t/err"
check 6 "of two occurrences, the one whose earlier context agrees is copied" "| context | 3 | - | 1.50x | 1.50x |"

printf '{"id":"1","category":"x","policy":"none","prompt_ids":[1]}\n' >"$t/bad.jsonl"
fails 7 "a record without output_ids names file and line" "bad.jsonl:1: not a skipper bench record" \
	--costs "$t/c.costs" "$t/bad.jsonl"
printf 'verify 2 1.5\n' >"$t/bad.costs"
fails 8 "a curve that does not start at 1 row is refused" "bad.costs: no verify curve" \
	--costs "$t/bad.costs" "$t/run.jsonl"

# priced at the context read: after context 9 each token adds 0.1 steps to
#   a pass of one row and 0.05 to each further row; the copy's 7 plain steps
#   read 10..16 tokens (9.8 steps), its one round of 7 rows reads 10:
#   4 + 1 x (0.1 + 6 x 0.05) = 4.4 steps, 2.23x where the flat curve says 1.75x
printf 'context 9\ncontext_row 0.1\ncontext_extra_row 0.05\n' | cat "$t/c.costs" - >"$t/ctx.costs"
head -n 2 "$t/run.jsonl" >"$t/copy.jsonl"
lc --costs "$t/ctx.costs" "$t/copy.jsonl" >"$t/out" 2>"$t/err"
check 9 "the curve priced at the context each round reads" "| copy | 7 | 2.00x | 2.23x | 2.23x |"
