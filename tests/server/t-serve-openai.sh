#!/bin/sh
# skipper serve through the openai Python package (chat, completions, both
# streamed, errors as its exceptions; the greedy answer equal to skipper
# generate's) with the lookup policy, and /metrics through
# prometheus_client's parser, and drafts from a user's earlier requests
# (tests/server/openai-client.py). Skips when
# the packages are missing: scripts/test-python.sh installs them.
. "$top_srcdir/tests/server/lib.sh"
need_basics
"$PY" -c 'import openai, prometheus_client' 2>/dev/null ||
	skip_all "no openai or prometheus_client package for $PY (make check PYTHON3=\"\$(scripts/test-python.sh)\")"

"$SKIPPER" generate -m "$MODEL" -t 2 -n 24 --temperature 0 -p "What is the capital of France?" >"$T/gen" 2>"$T/gen.err" ||
	{ sed 's/^/# /' "$T/gen.err"; echo "Bail out! skipper generate failed"; exit 1; }
echo "k-$$" >"$T/key"
start_server s --policy lookup --api-key-file "$T/key" --set lookup.history=memory --set policy.guard=no
"$PY" "$HERE/openai-client.py" "$PORT" "k-$$" "$T/gen" >"$T/tap" 2>"$T/py.err"
rc=$?
cat "$T/tap"
sed 's/^/# /' "$T/py.err"
n=$(grep -c '^\(not \)\{0,1\}ok ' "$T/tap")
[ $rc = 0 ] || failed=1
ok $rc "openai-client.py ran to its end"
stop_server $PID
is $STATUS 0 "SIGTERM: exit 0"
echo "1..$n"
exit $failed
