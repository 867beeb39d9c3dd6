#!/bin/sh
# [lookup] history = FILE through skipper generate on the default model: the
# first run drafts nothing from history and writes the file; the second
# drafts from it and writes the same text; a damaged file is reported
# (naming it) and the run goes on with an empty history, then rewrites it;
# a file where none can be written is refused before the model loads.
: "${top_builddir:?run through make check}"
sk="$top_builddir/skipper"
model="${SKIPPER_TEST_MODEL:-${XDG_CACHE_HOME:-$HOME/.cache}/skipper/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
py=$(command -v python3) || { echo "1..0 # SKIP no python3"; exit 0; }
[ -f "$model" ] || { echo "1..0 # SKIP no test model ($model)"; exit 0; }
t=$(mktemp -d "${TMPDIR:-/tmp}/t-history-cli.XXXXXX") || exit 99
trap 'rm -rf "$t"' EXIT INT TERM
n=0
fails=0
ok() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n - $2"; else fails=$((fails + 1)); echo "not ok $n - $2"; sed 's/^/# /' "$t/err" 2>/dev/null | tail -5; fi
}
json() { "$py" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }
echo "1..9"

gen() {
	"$sk" generate -m "$model" -t 2 -n 48 --temperature 0 --policy lookup --set lookup.history="$t/h" --set policy.guard=no \
		-p "Write a short poem about the sea and the wind." "$@"
}
gen --json >"$t/1.json" 2>"$t/err"
ok $? "first run"
[ -s "$t/h" ] && [ "$(json "$t/1.json" 'd["stats"]["history_drafted"]')" = 0 ]
ok $? "the first run drafts nothing from history and writes the file"
gen --json >"$t/2.json" 2>"$t/err"
ok $? "second run"
[ "$(json "$t/2.json" 'd["stats"]["history_accepted"] > 0')" = True ]
ok $? "the second run drafts from the first ($(json "$t/2.json" 'd["stats"]["history_accepted"]') tokens accepted)"
[ "$(json "$t/1.json" 'd["text"]')" = "$(json "$t/2.json" 'd["text"]')" ]
ok $? "the same text (drafts change no output)"

# damaged: cut in the middle
size=$(wc -c <"$t/h")
head -c $((size / 2)) "$t/h" >"$t/cut" && mv "$t/cut" "$t/h"
gen --json >"$t/3.json" 2>"$t/err"
rc=$?
[ $rc = 0 ] && grep -q "warning: \[lookup\] history: $t/h: .*starting with an empty history" "$t/err"
ok $? "a cut file: a warning naming it, and the run goes on (exit $rc)"
[ "$(json "$t/3.json" 'd["stats"]["history_drafted"]')" = 0 ] &&
	[ "$(json "$t/1.json" 'd["text"]')" = "$(json "$t/3.json" 'd["text"]')" ]
ok $? "with an empty history: no history drafts, the same text"
gen >/dev/null 2>"$t/err" && [ ! -s "$t/err" ]
ok $? "the file was written whole again: read without a warning"

"$sk" generate -m "$model" -n 4 --policy lookup --set lookup.history="$t/no/such/dir/h" -p hi >/dev/null 2>"$t/err"
rc=$?
[ $rc != 0 ] && grep -q "\[lookup\] history = $t/no/such/dir/h: cannot write in $t/no/such/dir" "$t/err"
ok $? "a file that cannot be written: refused at once, naming the key and path (exit $rc)"
exit $((fails > 0))
