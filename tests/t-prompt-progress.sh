#!/bin/sh
# skipper generate on a long prompt: on a terminal a line follows the
# prefill ("reading the prompt  N%  done / total tokens"), ending at 100%;
# not on a pipe; SIGINT while the prompt is read stops it there, exit 130,
# no text. SmolLM2, prompts of about 1,400 and 5,900 tokens; the terminal
# is script(1)'s.
set -u
: "${top_builddir:=.}"
cache=${XDG_CACHE_HOME:-$HOME/.cache}/skipper/models
model="${SKIPPER_TEST_MODEL:-$cache/SmolLM2-135M-Instruct.Q4_1.gguf}"
if [ ! -f "$model" ]; then
	echo "1..0 # SKIP $model not found (scripts/fetch-model.sh fetches it)"
	exit 0
fi
if ! command -v script >/dev/null 2>&1; then
	echo "1..0 # SKIP script(1) not installed"
	exit 0
fi
sk="$top_builddir/skipper"
out=$(mktemp -d "${TMPDIR:-/tmp}/t-prompt-progress.XXXXXX") || exit 1
trap 'rm -rf "$out"' EXIT
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); echo "not ok $n - $1"; }

text() { python3 -c "import sys; sys.stdout.write('Summarise this text. ' + 'The quick brown fox jumps over the lazy dog near the river bank. ' * $1)"; }
text 100 >"$out/prompt.txt"
text 420 >"$out/long.txt"
run="$sk generate -m $model -n 4 --ctx 8192 -t 2 --policy none -f $out/prompt.txt"

# 1. on a terminal
script -qec "$run" "$out/tty" >/dev/null 2>&1
rc=$?
tr '\r' '\n' <"$out/tty" >"$out/lines"
if [ $rc = 0 ] && grep -Eq '^.*reading the prompt 100%  ([0-9]+) / \1 tokens' "$out/lines" &&
	grep -Eq 'reading the prompt +[0-9]+%  512 / [0-9]+ tokens' "$out/lines"; then
	ok "on a terminal: the prompt's progress, piece by piece, to 100%"
else
	nok "on a terminal (exit $rc)"
	sed 's/^/# /' "$out/lines" | tail -5
fi

# 2. on a pipe: no line, the same text
$run >"$out/text" 2>"$out/err"
rc=$?
if [ $rc = 0 ] && ! grep -q 'reading the prompt' "$out/err" && [ -s "$out/text" ] &&
	grep -qF "$(head -c 12 "$out/text")" "$out/lines"; then
	ok "on a pipe: no progress line, the same text"
else
	nok "on a pipe (exit $rc)"
	sed 's/^/# /' "$out/err"
fi

# 3. SIGINT once the progress line shows: stopped there
script -qfec "exec $sk generate -m $model -n 4 --ctx 8192 -t 2 --policy none -f $out/long.txt" "$out/tty2" \
	>/dev/null 2>&1 &
spid=$!
i=0
while [ $i -lt 600 ] && ! grep -q 'reading the prompt' "$out/tty2" 2>/dev/null; do
	sleep 0.1
	i=$((i + 1))
done
# script's child is skipper (exec)
kill -INT $(awk -v p=$spid '$4 == p { print $1 }' /proc/[0-9]*/stat 2>/dev/null)
wait $spid
tr '\r' '\n' <"$out/tty2" >"$out/lines2"
if grep -q 'interrupted while reading the prompt' "$out/lines2" && grep -q 'COMMAND_EXIT_CODE="130"' "$out/lines2" &&
	! grep -q 'quick brown' "$out/lines2"; then
	ok "SIGINT while the prompt is read: stopped there, exit 130, no text"
else
	nok "SIGINT while the prompt is read"
	sed 's/^/# /' "$out/lines2" | tail -5
fi
echo "1..$n"
