#!/bin/sh
# skipper serve from start to stop: bad settings refused before anything
# is loaded; a port in use; /health and the API while the model loads (a
# hub that never answers keeps it loading) and a stop then; SIGTERM with
# requests in flight (they finish, exit 0), with shutdown_timeout 0 (they
# are cancelled: a 503 and an error event, exit 0), a second signal
# cutting the wait short, SIGINT when idle.
. "$top_srcdir/tests/server/lib.sh"
need_basics

# ---- settings ----
serve_err() { # serve_err WANT_STATUS GREP WHAT ARGS...: refused before loading
	want=$1 pat=$2 what=$3
	shift 3
	"$SKIPPER" serve -m "$MODEL" "$@" >/dev/null 2>"$T/err"
	is $? "$want" "$what: exit $want"
	grep -q -- "$pat" "$T/err"; ok $? "$what: $(head -1 "$T/err")"
}
serve_err 2 "\[server\] port" "port 70000" --port 70000
serve_err 2 "\[server\] bogus: unknown key" "an unknown [server] key" --set server.bogus=1
serve_err 2 "max_header_bytes" "max_header_bytes 100" --set server.max_header_bytes=100
serve_err 2 "$T/nokey" "a missing API key file" --api-key-file "$T/nokey"
: >"$T/empty"
serve_err 2 "no key" "an empty API key file" --api-key-file "$T/empty"
serve_err 2 "unknown or incomplete option" "an unknown option" --bogus
serve_err 2 "unknown or incomplete option" "--port without its value" --port
"$SKIPPER" serve --help >"$T/help"; is $? 0 "--help: exit 0"
grep -q -- "--api-key-file" "$T/help"; ok $? "--help lists the options"

start_server a
"$SKIPPER" serve -m "$MODEL" --port "$PORT" 2>"$T/err" >/dev/null
is $? 1 "a port in use: exit 1"
grep -q "cannot listen on 127.0.0.1 port $PORT" "$T/err"; ok $? "and says so: $(cat "$T/err")"
stop_server $PID INT
is $STATUS 0 "SIGINT when idle: exit 0"

# ---- while loading: a hub that accepts connections and never answers ----
"$PY" -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
print(s.getsockname()[1], flush=True)
held = []
while True:
    held.append(s.accept()[0])
' >"$T/hub.port" &
hub=$!
SERVERS="$SERVERS $hub"
poll 30 test -s "$T/hub.port"
HF_ENDPOINT="http://127.0.0.1:$(cat "$T/hub.port")" HF_HUB_CACHE="$T/hf" \
	"$SKIPPER" serve --port 0 --set model.hub=org/model:model.gguf --set hub.timeout=300 >/dev/null 2>"$T/load.err" &
PID=$!
SERVERS="$SERVERS $PID"
listening() { grep -q "listening on" "$T/load.err"; }
poll $WAIT listening
PORT=$(sed -n 's/^skipper serve: listening on http:.*:\([0-9][0-9]*\)$/\1/p' "$T/load.err")
U="http://127.0.0.1:$PORT"
is "$(req "$T/b" "$U/health")" 503 "/health while loading: 503"
is "$(cat "$T/b")" '{"status":"loading"}' "/health says loading"
is "$(req "$T/b" "$U/v1/models")" 503 "/v1/models while loading: 503"
is "$(jget "$T/b" 'd["error"]["code"]')" loading "code loading"
curl -s -D "$T/h" -o /dev/null -d '{"prompt":"a"}' "$U/v1/completions"
grep -qi "^Retry-After: " "$T/h"; ok $? "a completion while loading: 503 with Retry-After"
is "$(req "$T/b" "$U/metrics")" 200 "/metrics while loading"
stop_server $PID
is $STATUS 0 "SIGTERM while loading: exit 0"
kill $hub

# ---- SIGTERM with requests in flight: they finish ----
start_server b --ctx 2048
U="http://127.0.0.1:$PORT"
curl -s --max-time $WAIT -o "$T/r1" -d '{"prompt":"1, 2, 3, 4,","max_tokens":200,"temperature":0}' "$U/v1/completions" &
c1=$!
curl -s -N --max-time $WAIT -o "$T/r2" -d '{"prompt":"5, 6, 7,","max_tokens":200,"temperature":0,"stream":true}' "$U/v1/completions" &
c2=$!
# both submitted: running, or waiting for a sequence
inflight() { [ $(($(metric "$U" skipper:num_requests_running) + $(metric "$U" skipper:num_requests_waiting))) -ge "$1" ]; }
poll 60 inflight 2
kill -TERM $PID
refused() { curl -s --max-time 5 -o /dev/null "$U/health"; [ $? = 7 ]; }
poll 30 refused
ok $? "after SIGTERM new connections are refused"
wait $c1
wait $c2
wait $PID
is $? 0 "exit 0 once the requests finished"
is "$(jget "$T/r1" '"%s %s" % (d["choices"][0]["finish_reason"], d["usage"]["completion_tokens"])')" "length 200" "the request in flight finished: 200 tokens"
"$PY" "$HERE/client.py" sse "$T/r2" >"$T/sum"
is "$(jget "$T/sum" '"%s %s" % (d["finish"], d["done_last"])')" "length True" "the stream in flight finished with [DONE]"
grep -Eq "stopping: [12] requests in flight" "$T/b.err"; ok $? "it says what it waits for"

# ---- shutdown_timeout 0: requests in flight are cancelled ----
start_server c --ctx 2048 --set server.shutdown_timeout=0
U="http://127.0.0.1:$PORT"
curl -s --max-time $WAIT -o "$T/r1" -w '%{http_code}' -d '{"prompt":"1, 2, 3, 4,","max_tokens":2000}' "$U/v1/completions" >"$T/code1" &
c1=$!
curl -s -N --max-time $WAIT -o "$T/r2" -d '{"prompt":"1, 2, 3, 4,","max_tokens":2000,"stream":true}' "$U/v1/completions" &
c2=$!
poll 60 inflight 2
stop_server $PID
is $STATUS 0 "SIGTERM, shutdown_timeout 0: exit 0"
wait $c1
wait $c2
is "$(cat "$T/code1") $(jget "$T/r1" 'd["error"]["code"]')" "503 cancelled" "the answer not sent: 503, code cancelled"
"$PY" "$HERE/client.py" sse "$T/r2" >"$T/sum"
is "$(jget "$T/sum" '"%s %s" % (d["error"]["code"], d["done_last"])')" "cancelled False" "the stream ends with an error event"
grep -q "cancelling 2 requests" "$T/c.err"; ok $? "it says it cancels them"

# ---- a second signal cuts the wait short ----
start_server d --ctx 2048 --set server.shutdown_timeout=60
U="http://127.0.0.1:$PORT"
curl -s --max-time $WAIT -o "$T/r1" -w '%{http_code}' -d '{"prompt":"1, 2, 3, 4,","max_tokens":2000}' "$U/v1/completions" >"$T/code1" &
c1=$!
poll 60 inflight 1
t0=$(date +%s)
kill -INT $PID
sleep 0.5
stop_server $PID INT
t1=$(date +%s)
is $STATUS 0 "two SIGINTs: exit 0"
wait $c1
is "$(cat "$T/code1")" 503 "the request was cancelled"
[ $((t1 - t0)) -lt 30 ]; ok $? "at once, not after shutdown_timeout ($((t1 - t0)) s)"
echo "1..$n"
exit $failed
