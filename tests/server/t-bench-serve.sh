#!/bin/sh
# scripts/bench-serve end to end on a tiny setting (SmolLM2, two prompts,
# four tokens, one and two clients, skipper only, two --variant settings): it starts and stops a
# server per concurrency and writes its table, records and data. The
# figures mean nothing here; only that every request was measured.
. "$top_srcdir/tests/server/lib.sh"
need_basics

"$PY" "$top_srcdir/scripts/bench-serve" --model "$MODEL" --skipper "$SKIPPER" --policy none \
	--variant none= --variant history=policy.name=lookup,lookup.history=memory --data "$top_srcdir/tests/data/specbench-20.jsonl" --prompts 2 --tokens 4 --concurrency 1,2 \
	--out "$T/b" >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 0 ] || sed 's/^/# /' "$T/err"
ok $rc "bench-serve ran"
is "$(grep -c '^| skipper none | [12] | 2 | ' "$T/b.md")" 2 "a row per concurrency, two requests each"
is "$(grep -c '^| skipper history | [12] | 2 | ' "$T/b.md")" 2 "and per variant (--variant)"
is "$(wc -l <"$T/b.jsonl" | tr -d ' ')" 8 "a record per request"
is "$("$PY" -c 'import json, sys; print(all(json.loads(l)["tokens"] >= 1 and json.loads(l)["end"] > json.loads(l)["start"] for l in open(sys.argv[1])))' "$T/b.jsonl")" True "every record has tokens and times"
is "$(grep -vc '^#' "$T/b.dat")" 2 "chart data for both concurrencies"
"$PY" "$top_srcdir/scripts/bench-serve" --model "$MODEL" --skipper "$SKIPPER" --policy none \
	--variant a= --variant b=policy.name=lookup --data "$top_srcdir/tests/data/specbench-20.jsonl" --prompts 1 --tokens 4 \
	--concurrency 1 --reps 2 --out "$T/r" >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 0 ] || sed 's/^/# /' "$T/err"
ok $rc "bench-serve --reps 2 ran"
is "$("$PY" -c 'import json, sys; print(sorted((json.loads(l)["server"], json.loads(l)["rep"]) for l in open(sys.argv[1])))' "$T/r.jsonl")" \
	"[('skipper a', 0), ('skipper a', 1), ('skipper b', 0), ('skipper b', 1)]" "every configuration ran twice"
is "$(sed -n 's/^skipper \([ab]\) .*/\1/p' "$T/err" | tr -d '\n')" "abba" "the second repetition in the other order"
grep -q '^| skipper a | 1 | 1 | 4 | [0-9.]* ([0-9.]*-[0-9.]*) | 1.00x |' "$T/r.md"
ok $? "the median with its range, the first configuration at 1.00x of itself"
grep -q '^| skipper b | 1 | 1 | 4 | [0-9.]* ([0-9.]*-[0-9.]*) | [0-9.]*x |' "$T/r.md"
ok $? "the others as a ratio to it"
"$PY" "$top_srcdir/scripts/bench-serve" --model "$MODEL" --skipper "$SKIPPER" --reps 0 --out "$T/x" 2>"$T/err"
is $? 1 "a bad --reps is refused"
grep -q "reps" "$T/err"; ok $? "naming the option: $(cat "$T/err")"
"$PY" "$top_srcdir/scripts/bench-serve" --model "$MODEL" --skipper "$SKIPPER" --concurrency 0 --out "$T/x" 2>"$T/err"
is $? 1 "a bad --concurrency is refused"
grep -q "concurrency" "$T/err"; ok $? "naming the option: $(cat "$T/err")"
"$PY" "$top_srcdir/scripts/bench-serve" --model "$MODEL" --skipper "$SKIPPER" --variant x=nokey --out "$T/x" 2>"$T/err"
is $? 1 "a bad --variant is refused"
grep -q "variant.*x=nokey" "$T/err"; ok $? "naming the option: $(cat "$T/err")"
"$PY" "$top_srcdir/scripts/bench-serve" --model "$MODEL" --skipper "$SKIPPER" --llama-args fast=-x --out "$T/x" 2>"$T/err"
is $? 1 "a bad --llama-args is refused"
grep -q "llama-args.*fast=-x" "$T/err"; ok $? "naming it: $(cat "$T/err")"
echo "1..$n"
exit $failed
