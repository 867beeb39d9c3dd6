#!/bin/sh
# Eight greedy chat streams at once on a server decoding four at a time
# (the rest queue): each stream's text is what `skipper generate` writes
# for the same prompt. Then a client that leaves mid-stream: its request is
# cancelled (/metrics counts it, the access log says so) and the next
# requests run.
. "$top_srcdir/tests/server/lib.sh"
need_basics

N=24
cat >"$T/prompts" <<'EOF'
Name three colours.
What is the capital of France?
Write a haiku about the sea.
Count from one to five.
Give me a synonym for happy.
What does a cat say?
Explain what a verb is in one sentence.
List two fruits that are red.
EOF

# what generate writes, one prompt after the other (its trailing newline dropped)
i=0
while IFS= read -r p; do
	i=$((i + 1))
	"$SKIPPER" generate -m "$MODEL" -t 2 -n $N --temperature 0 -p "$p" >"$T/gen.$i" 2>"$T/gen.$i.err" ||
		{ sed 's/^/# /' "$T/gen.$i.err"; echo "Bail out! skipper generate failed"; exit 1; }
done <"$T/prompts"

start_server s --parallel 4 --set server.access_log="$T/access.log"
U="http://127.0.0.1:$PORT"
"$PY" "$HERE/client.py" streams "$PORT" $N "$T/prompts" >"$T/streams"
ok $? "eight streams at once"
i=0
while IFS= read -r line; do
	i=$((i + 1))
	printf "%s\n" "$line" >"$T/s.$i"
	is "$(jget "$T/s.$i" '"%s %s %s" % (d["status"], d["role_first"], d["done_last"])')" "200 True True" "stream $i: 200, the role first, [DONE] last"
	# generate prints the text and a newline
	"$PY" -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["text"] + "\n" != open(sys.argv[2], encoding="utf-8").read())' "$T/s.$i" "$T/gen.$i"
	ok $? "stream $i: the text of skipper generate ($(head -c 40 "$T/gen.$i" | tr '\n' ' ')...)"
done <"$T/streams"
is $i 8 "eight answers"
is "$(metric "$U" skipper:requests_total)" 8 "/metrics: eight requests ended"
is "$(metric "$U" skipper:requests_cancelled_total)" 0 "/metrics: none cancelled"

# a client that leaves mid-stream
"$PY" "$HERE/client.py" disconnect "$PORT" >"$T/disc"
ok $? "a stream read in part, then closed: $(cat "$T/disc")"
cancelled() { [ "$(metric "$U" skipper:requests_cancelled_total)" = 1 ]; }
poll 60 cancelled
ok $? "/metrics: its request cancelled"
running() { [ "$(metric "$U" skipper:num_requests_running)" = 0 ]; }
poll 60 running
ok $? "/metrics: nothing left running"
is "$(req "$T/b" -d '{"prompt":"Hello","max_tokens":4}' "$U/v1/completions")" 200 "the next request runs"
is "$(req "$T/b" -d '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":4,"stream":true}' "$U/v1/chat/completions")" 200 "and the next stream"
stop_server $PID
is $STATUS 0 "SIGTERM: exit 0"
grep -Eq '"POST /v1/completions" 200 [0-9]+ [0-9]+ [0-9.]+ cancelled$' "$T/access.log"; ok $? "the access log says cancelled"
echo "1..$n"
exit $failed
