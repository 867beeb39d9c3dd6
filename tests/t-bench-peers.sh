#!/bin/sh
# scripts/bench-peers.py end to end on the default model with stand-ins for
# llama.cpp's tools (tests/fake-llama.py: fixed timings, so the table's
# llama.cpp cells are known): the prompts skipper dumps go to every peer,
# one fresh llama-server per request with the draft lengths asked for, the
# table's best speculative mode is the fastest per column, a prompt token
# count that differs from skipper's is flagged, lookup-ceiling.py reads the
# run, and a failure leaves nothing behind.
: "${top_srcdir:=.}" "${top_builddir:=.}" "${PYTHON3:=python3}"
set -u
model="${SKIPPER_TEST_MODEL:-${XDG_CACHE_HOME:-$HOME/.cache}/skipper/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
[ -f "$model" ] || { echo "1..0 # SKIP $model not found (scripts/fetch-model.sh fetches it)"; exit 0; }
[ -n "$PYTHON3" ] && command -v "$PYTHON3" >/dev/null 2>&1 || { echo "1..0 # SKIP no python3"; exit 0; }
t=$(mktemp -d "${TMPDIR:-/tmp}/t-bench-peers.XXXXXX") || exit 1
trap 'rm -rf "$t"' EXIT
echo "1..12"
mkdir "$t/bin"
for tool in llama-completion llama-lookup llama-speculative llama-server; do
	printf '#!/bin/sh\nexec "%s" "%s" %s "$@"\n' "$PYTHON3" "$top_srcdir/tests/fake-llama.py" "$tool" >"$t/bin/$tool"
	chmod +x "$t/bin/$tool"
done
export SKIPPER="$top_builddir/skipper" FAKE_LLAMA_LOG="$t/llama.log"
unset LLAMA_BIN
bp() { "$PYTHON3" "$top_srcdir/scripts/bench-peers.py" --model "$model" --draft-model "$model" \
	--data "$top_srcdir/tests/data/specbench-20.jsonl" --threads 1 --tokens 4 --llama-bin "$t/bin" "$@"; }
ok() { # N DESCRIPTION: ok when the last check held, else the run's errors
	if [ "$1" = 0 ]; then echo "ok $2 - $3"; else sed 's/^/# /' "$t/err"; echo "not ok $2 - $3"; fi
}
has() { grep -qF -- "$1" "$t/run/results.md"; }

bp --categories math,coding --per-category 1 --policies lookup \
	--server-args 'ngram-mod=--spec-ngram-mod-n-max 4' --server-args ngram-simple= --server-args ngram-map-k= --out "$t/run" >"$t/out" 2>"$t/err"
ok $? 1 "a run with every peer"
has "| llama.cpp plain | 10.00 (" && has "| llama.cpp lookup | 8.00 (" && has "| llama.cpp server plain | 10.00 (" &&
	has "| llama.cpp server ngram-simple | 20.00 (" && has "| llama.cpp server ngram-mod | 16.00 (" &&
	has "| llama.cpp server ngram-mod (n-max 4) | 40.00 (" && has "| llama.cpp server ngram-map-k | 8.00 ("
ok $? 2 "each peer's decode speed from its own timer (llama-server: timings, the first token not counted)"
has "| llama.cpp best speculative mode | 40.00 (" &&
	has "Fastest llama.cpp speculative mode per column: math: llama.cpp server ngram-mod (n-max 4); coding: llama.cpp server ngram-mod (n-max 4); overall: llama.cpp server ngram-mod (n-max 4)" &&
	grep -q '^| skipper lookup | [0-9.]*x | [0-9.]*x | [0-9.]*x |$' "$t/run/results.md" && has "## Speedup vs llama.cpp best speculative mode"
ok $? 3 "llama.cpp's best speculative mode is the fastest of its modes per column, and skipper is compared with it"
n=$(grep -c '^llama-server ' "$t/llama.log")
# 2 prompts, each warmed up once, 5 server runs (plain, 3 modes with their defaults, ngram-mod with
# n-max 4; MODE= leaves out the built-in draft lengths)
[ "$n" = 20 ] && grep -q -- '-t 1 -tb 1 -c 4096 -np 1 --host 127.0.0.1 --port [0-9]* --spec-type ngram-mod --spec-ngram-mod-n-max 4$' "$t/llama.log" &&
	[ "$(grep -c -- '--spec-type ngram-mod$' "$t/llama.log")" = 4 ]
ok $? 4 "one llama-server per request (warm-ups included), its modes with their defaults and the asked draft lengths ($n)"
"$PYTHON3" -c 'import json, sys
dump = {r["id"]: r for r in map(json.loads, open(sys.argv[1] + "/prompts/dump.jsonl"))}
plan = json.load(open(sys.argv[1] + "/prompts/plan.json"))
assert [c["category"] for c in plan["categories"]] == ["math", "coding"], plan
for c in plan["categories"]:
    for p in c["prompts"]:
        txt = open(sys.argv[1] + "/prompts/" + p["file"] + ".txt").read()
        assert txt == dump[p["id"]]["prompt"] + "\n", p
        server = json.load(open(sys.argv[1] + "/raw/" + c["id"] + "-" + p["file"] + "-server.json"))
        assert server["timings"]["prompt_n"] == len(dump[p["id"]]["prompt_ids"])' "$t/run" 2>"$t/err"
ok $? 5 "llama.cpp's tools read the prompt skipper dumped; llama-server got its ids"
has "WARNING: prompt 111 (math): llama-completion read 999 prompt tokens, skipper " &&
	! grep -q "WARNING: .*llama-lookup\|WARNING: .*llama-server" "$t/run/results.md"
ok $? 6 "a prompt token count that differs from skipper's is flagged, and only that one"
has "llama-server's speculative output differs from its plain output" && has "llama.cpp server ngram-map-k on prompt 111" &&
	! has "llama.cpp server ngram-simple on prompt"
ok $? 7 "llama-server modes whose output differs from llama-server plain's are named"
head -n 1 "$t/run/summary.csv" | grep -q ',speedup_vs_llamacpp_best.$' && grep -q '^llama.cpp best speculative mode,overall,2,8,' "$t/run/summary.csv" &&
	[ "$(grep -c ',skipper lookup,' "$t/run/runs.csv")" = 2 ] && [ -s "$t/run/chart.svg" ] && grep -q 'llama.cpp best speculative mode' "$t/run/chart.svg"
ok $? 8 "summary.csv, runs.csv and the chart"
printf '# skipper cost curve\nstep_seconds 0.01\nverify 1 1.0\nverify 2 1.5\nverify 3 2.0\n' >"$t/c.costs"
"$PYTHON3" "$top_srcdir/scripts/lookup-ceiling.py" --costs "$t/c.costs" "$t/run" >"$t/lc" 2>"$t/err" &&
	grep -q '^| math | 3 |' "$t/lc" && grep -q '^| overall | 6 |' "$t/lc"
ok $? 9 "lookup-ceiling.py reads the run's skipper outputs"

FAKE_SERVER_FAIL=1 bp --categories math --per-category 1 --policies none --peers server --out "$t/fail" >"$t/out" 2>"$t/err"
rc=$?
[ "$rc" = 1 ] && grep -q "the fake server was told to fail" "$t/err" && grep -q "bench-peers: llama-server did not start" "$t/err" &&
	[ ! -e "$t/fail" ]
ok $? 10 "a llama-server that does not start fails the run, which leaves nothing behind"
bp --peers plain,bogus --out "$t/x" >"$t/out" 2>"$t/err"
[ "$?" = 2 ] && grep -q "unknown 'bogus'" "$t/err" && [ ! -e "$t/x" ]
ok $? 11 "an unknown peer is a usage error"
bp --server-args 'ngram-mod=-c 10' --out "$t/x" >"$t/out" 2>"$t/err"
[ "$?" = 2 ] && grep -q "only llama-server's --spec-\* options" "$t/err" && [ ! -e "$t/x" ]
ok $? 12 "--server-args takes llama-server's --spec-* options only"
