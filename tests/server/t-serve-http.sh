#!/bin/sh
# skipper serve's protocol with curl: /health, /v1/models, chat and
# completions answered and streamed as OpenAI's API does (SSE events, the
# role first, [DONE] last, usage), stop strings, keep-alive; every bad
# input answered with an OpenAI error object (bad JSON, wrong types,
# unsupported fields, oversized body and headers, a slow client, missing
# or wrong API key, a prompt or max_tokens past the context, a full queue,
# unknown paths and methods); too many connections; the access log; the
# key never logged.
. "$top_srcdir/tests/server/lib.sh"
need_basics

echo "secret-$$-key" >"$T/key"
KEY="secret-$$-key"
A="Authorization: Bearer $KEY"
start_server s --api-key-file "$T/key" --parallel 1 --ctx 512 --set server.max_queue=0 \
	--set server.read_timeout=2 --set server.max_body_bytes=4K --set server.max_header_bytes=2K \
	--set server.max_connections=4 \
	--set server.access_log="$T/access.log"
U="http://127.0.0.1:$PORT"

# ---- the endpoints ----
is "$(req "$T/b" "$U/health")" 200 "/health without a key: 200"
is "$(cat "$T/b")" '{"status":"ok"}' "/health says ok"
is "$(req "$T/b" -I "$U/health")" 200 "HEAD /health"
is "$(req "$T/b" "$U/v1/models")" 401 "/v1/models without a key: 401"
is "$(jget "$T/b" 'd["error"]["code"]')" invalid_api_key "401: code invalid_api_key"
curl -s -D "$T/h" -o /dev/null -H "Authorization: Bearer wrong" "$U/v1/models"
grep -qi "^WWW-Authenticate: Bearer" "$T/h"; ok $? "a wrong key: 401 with WWW-Authenticate"
is "$(req "$T/b" -H "$A" "$U/v1/models")" 200 "/v1/models with the key"
is "$(jget "$T/b" 'd["data"][0]["id"]')" "$(basename "$MODEL")" "the model's id is its file's name"
is "$(req "$T/b" -H "$A" "$U/metrics")" 200 "/metrics with the key"

CHAT='{"messages":[{"role":"user","content":"Name three colours."}],"max_tokens":12,"temperature":0}'
is "$(req "$T/chat" -H "$A" -H 'Content-Type: application/json' -d "$CHAT" "$U/v1/chat/completions")" 200 "chat: 200"
is "$(jget "$T/chat" 'd["object"]')" chat.completion "chat: object chat.completion"
is "$(jget "$T/chat" 'd["choices"][0]["message"]["role"]')" assistant "chat: the assistant's message"
is "$(jget "$T/chat" 'd["usage"]["completion_tokens"] <= 12 and d["usage"]["total_tokens"] == d["usage"]["prompt_tokens"] + d["usage"]["completion_tokens"]')" True "chat: usage adds up"
is "$(jget "$T/chat" 'sorted(d["skipper"]["sources"])')" "['history', 'layer_skip', 'lookup', 'ngram']" "chat: skipper's statistics by source beside usage"
is "$(jget "$T/chat" 'd["skipper"]["policy"]')" none "chat: the policy named"

# the same request streamed: the same text, in OpenAI's events
STREAM=$(echo "$CHAT" | sed 's/}$/,"stream":true,"stream_options":{"include_usage":true}}/')
curl -s -N -D "$T/h" -H "$A" -d "$STREAM" "$U/v1/chat/completions" >"$T/sse"
grep -qi "^Content-Type: text/event-stream" "$T/h"; ok $? "stream: text/event-stream"
"$PY" "$HERE/client.py" sse "$T/sse" >"$T/sum"; ok $? "stream: every line an SSE data line, events end with a blank line"
is "$(jget "$T/sum" 'd["role_first"] and d["done_last"] and d["ids"] == 1 and d["object"] == "chat.completion.chunk"')" True \
	"stream: the role first, [DONE] last, one id, chat.completion.chunk objects"
is "$(jget "$T/sum" 'd["text"]')" "$(jget "$T/chat" 'd["choices"][0]["message"]["content"]')" "stream: the same text as the answer"
is "$(jget "$T/sum" 'd["finish"]')" "$(jget "$T/chat" 'd["choices"][0]["finish_reason"]')" "stream: the same finish_reason"
is "$(jget "$T/sum" 'd["usage"]["completion_tokens"]')" "$(jget "$T/chat" 'd["usage"]["completion_tokens"]')" "stream: usage in the last chunk (include_usage)"

# completions, a stop string taken from the text itself
COMP='{"prompt":"Count: 1, 2, 3,","max_tokens":16,"temperature":0}'
is "$(req "$T/comp" -H "$A" -d "$COMP" "$U/v1/completions")" 200 "completions: 200"
is "$(jget "$T/comp" 'd["object"]')" text_completion "completions: object text_completion"
stop=$(jget "$T/comp" 'd["choices"][0]["text"][5:8]')
want=$(jget "$T/comp" 'd["choices"][0]["text"][:5]')
"$PY" -c 'import json, sys; print(json.dumps({"prompt": "Count: 1, 2, 3,", "max_tokens": 16, "temperature": 0, "stop": [sys.argv[1], "never in the text"]}))' "$stop" >"$T/stopreq"
is "$(req "$T/b" -H "$A" --data-binary @"$T/stopreq" "$U/v1/completions")" 200 "completions with stop strings"
is "$(jget "$T/b" 'd["choices"][0]["text"]')" "$want" "the text is cut before the stop string '$stop'"
is "$(jget "$T/b" 'd["choices"][0]["finish_reason"]')" stop "finish_reason stop"
sed 's/}$/,"stream":true}/' "$T/stopreq" >"$T/stopstream"
curl -s -N -H "$A" --data-binary @"$T/stopstream" "$U/v1/completions" >"$T/sse"
"$PY" "$HERE/client.py" sse "$T/sse" >"$T/sum"
is "$(jget "$T/sum" 'd["text"]')" "$want" "streamed: cut before the stop string as well"
is "$(jget "$T/sum" 'd["usage"]')" None "no usage chunk without include_usage"

# two requests on one connection
curl -s -o /dev/null -o /dev/null -w '%{http_code} %{num_connects}\n' -H "$A" "$U/v1/models" "$U/health" >"$T/ka"
is "$(tr '\n' ' ' <"$T/ka")" "200 1 200 0 " "keep-alive: the second request on the same connection"

# connections past max_connections are closed at once
"$PY" "$HERE/client.py" connections "$PORT" 4 >"$T/conn"
is "$(cat "$T/conn")" "closed, then HTTP/1.1 200 OK" "a fifth connection closed at once; one more once they are gone"

# ---- bad input ----
bad() { # bad STATUS PARAM CODE WHAT [curl options]: answered STATUS with an error object
	status=$1 param=$2 code=$3 what=$4
	shift 4
	got=$(req "$T/e" -H "$A" "$@")
	e=$(jget "$T/e" '"%s %s %s" % (d["error"]["param"], d["error"]["code"], d["error"]["type"] != "")')
	is "$got $e" "$status $param $code True" "$what: $(jget "$T/e" 'd["error"]["message"]')"
}
bad 400 None invalid_json "malformed JSON" -d '{"messages": [' "$U/v1/chat/completions"
bad 400 None invalid_type "not an object" -d '[{"messages":[]}]' "$U/v1/chat/completions"
bad 400 messages invalid_type "messages a string" -d '{"messages":"hi"}' "$U/v1/chat/completions"
bad 400 max_tokens invalid_type "max_tokens a string" -d '{"prompt":"a","max_tokens":"9"}' "$U/v1/completions"
bad 400 temperature invalid_value "temperature 5" -d '{"prompt":"a","temperature":5}' "$U/v1/completions"
bad 400 n unsupported_parameter "n = 2" -d '{"prompt":"a","n":2}' "$U/v1/completions"
bad 400 logprobs unsupported_parameter "logprobs" -d '{"messages":[{"role":"user","content":"a"}],"logprobs":true}' "$U/v1/chat/completions"
bad 400 tools unsupported_parameter "tools" -d '{"messages":[{"role":"user","content":"a"}],"tools":[{"type":"function","function":{"name":"f"}}]}' "$U/v1/chat/completions"
bad 400 response_format unsupported_parameter "response_format json_object" -d '{"messages":[{"role":"user","content":"a"}],"response_format":{"type":"json_object"}}' "$U/v1/chat/completions"
bad 400 messages invalid_value "a conversation that does not end with the user" -d '{"messages":[{"role":"assistant","content":"a"}]}' "$U/v1/chat/completions"
"$PY" -c 'print("{\"prompt\": \"%s\"}" % ("word " * 600))' >"$T/long"
bad 400 prompt context_length_exceeded "a prompt over the context" --data-binary @"$T/long" "$U/v1/completions"
grep -q "512" "$T/e"; ok $? "the message names the context's size"
bad 400 max_tokens context_length_exceeded "max_tokens past the context" -d '{"prompt":"a","max_tokens":600}' "$U/v1/completions"
bad 400 max_completion_tokens context_length_exceeded "max_completion_tokens past the context" -d '{"messages":[{"role":"user","content":"a"}],"max_completion_tokens":9999}' "$U/v1/chat/completions"
head -c 5000 /dev/zero | tr '\0' a >"$T/big"
bad 413 None request_too_large "a body over max_body_bytes" --data-binary @"$T/big" "$U/v1/completions"
curl -s --max-time $WAIT -o /dev/null -w '%{http_code}' -H "$A" -H "Transfer-Encoding: chunked" --data-binary @"$T/big" "$U/v1/completions" >"$T/code"
case $(cat "$T/code") in 200) r=1 ;; *) r=0 ;; esac
ok $r "a chunked body over the limit: refused or dropped, never read to the end ($(cat "$T/code"))"
is "$(req "$T/b" -H "$A" -H "X-Filler: $(head -c 4000 /dev/zero | tr '\0' a)" "$U/v1/models")" 431 "headers over max_header_bytes: 431"
bad 404 None not_found "an unknown path" "$U/v1/embeddings"
bad 405 None method_not_allowed "GET on a POST endpoint" "$U/v1/chat/completions"
curl -s -D "$T/h" -o /dev/null -X DELETE -H "$A" "$U/v1/models"
grep -qi "^Allow: GET, HEAD" "$T/h"; ok $? "405 says what is allowed"

# a slow client holds no slot: its body must come within read_timeout
"$PY" "$HERE/client.py" slow "$PORT" 0.3 "$KEY" >"$T/slow"
case $(cat "$T/slow") in "dropped after "[2-9].*) r=0 ;; *) r=1 ;; esac
ok $r "a body trickling in is dropped after read_timeout (2 s): $(cat "$T/slow")"
"$PY" "$HERE/client.py" slow "$PORT" 4 "$KEY" >"$T/slow"
case $(cat "$T/slow") in "dropped after "[2-9].*) r=0 ;; *) r=1 ;; esac
ok $r "a client silent longer than read_timeout is dropped: $(cat "$T/slow")"
is "$(req "$T/b" "$U/health")" 200 "the server still answers"

# a full queue (one sequence, no queue): 503 with Retry-After
curl -s -N --max-time $WAIT -H "$A" -d '{"prompt":"1, 2, 3, 4,","max_tokens":480,"stream":true}' "$U/v1/completions" >"$T/long.sse" &
cpid=$!
poll 60 grep -q '"text"' "$T/long.sse"
curl -s -D "$T/h" -o "$T/e" -H "$A" -d '{"prompt":"a","max_tokens":2}' "$U/v1/completions"
grep -q "^HTTP/1.1 503" "$T/h" && grep -qi "^Retry-After: " "$T/h"; ok $? "a full queue: 503 with Retry-After"
is "$(jget "$T/e" 'd["error"]["code"]')" overloaded "code overloaded"
kill $cpid 2>/dev/null
wait $cpid 2>/dev/null
metric_auth() { curl -s --max-time $WAIT -H "$A" "$U/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }
cancelled() { [ "$(metric_auth skipper:requests_cancelled_total)" -ge 1 ] 2>/dev/null; }
poll 60 cancelled
ok $? "the client gone, its request is cancelled (/metrics: $(metric_auth skipper:requests_cancelled_total))"
is "$(req "$T/b" -H "$A" -d '{"prompt":"a","max_tokens":2}' "$U/v1/completions")" 200 "the next request runs"

# ---- the log ----
stop_server $PID
is $STATUS 0 "SIGTERM: exit 0"
grep -q "^skipper serve: stopped" "$T/s.err"; ok $? "it says it stopped"
grep -Eq '^[0-9T:-]+Z 127\.0\.0\.1 "POST /v1/chat/completions" 200 [0-9]+ [0-9]+ [0-9.]+ (stop|length)$' "$T/access.log"
ok $? "access log: time, client, request, status, tokens, seconds, finish"
grep -Eq '"POST /v1/completions" 200 [0-9]+ [0-9]+ [0-9.]+ cancelled$' "$T/access.log"; ok $? "access log: the cancelled stream"
grep -Eq '"GET /v1/models" 401 ' "$T/access.log"; ok $? "access log: the refused key"
grep -Eq '"POST /v1/completions" 408 ' "$T/access.log"; ok $? "access log: the slow client"
! grep -q "$KEY" "$T/access.log" "$T/s.err"; ok $? "the key is never logged"
echo "1..$n"
exit $failed
