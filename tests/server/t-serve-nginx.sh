#!/bin/sh
# Scale-out as skipper-serve(1) documents it: two replicas behind nginx
# (upstream least_conn, proxy_buffering off, HTTP/1.1 to the replicas,
# long read timeouts) on 127.0.0.1. Answers and streams pass through
# whole, both replicas serve, and a replica that stops leaves the other
# serving.
. "$top_srcdir/tests/server/lib.sh"
need_basics
if [ -z "${NGINX:-}" ] || [ ! -x "$NGINX" ]; then skip_all "nginx not found (install nginx-light)"; fi

start_server r1 --parallel 2 --set server.access_log="$T/r1.log"
P1=$PORT PID1=$PID
start_server r2 --parallel 2 --set server.access_log="$T/r2.log"
P2=$PORT PID2=$PID

# nginx on a free port (retry on collisions), as the hub tests run it
mkdir -p "$T/tmp"
for try in 1 2 3 4 5 6 7 8; do
	NPORT=$(( (($$ + try * 7919) % 30000) + 20000 ))
	cat >"$T/nginx.conf" <<CONF
daemon on;
master_process off;
pid $T/nginx.pid;
error_log $T/error.log;
events { worker_connections 256; }
http {
  access_log $T/nginx-access.log;
  client_body_temp_path $T/tmp; proxy_temp_path $T/tmp; fastcgi_temp_path $T/tmp; uwsgi_temp_path $T/tmp; scgi_temp_path $T/tmp;
  upstream skipper {
    least_conn;
    server 127.0.0.1:$P1 max_fails=1 fail_timeout=10s;
    server 127.0.0.1:$P2 max_fails=1 fail_timeout=10s;
    keepalive 16;
  }
  server {
    listen 127.0.0.1:$NPORT;
    client_max_body_size 1m;
    location / {
      proxy_pass http://skipper;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_cache off;
      proxy_read_timeout 600s;
      proxy_send_timeout 600s;
      proxy_next_upstream error http_503 non_idempotent;
    }
  }
}
CONF
	env -u NGINX "$NGINX" -p "$T" -c "$T/nginx.conf" -e "$T/error.log" 2>/dev/null && break
	NPORT=
done
if [ -z "$NPORT" ]; then echo "Bail out! nginx did not start"; exit 1; fi
poll 10 test -f "$T/nginx.pid"
U="http://127.0.0.1:$NPORT"

is "$(req "$T/b" "$U/health")" 200 "/health through nginx"
for i in 1 2 3 4; do
	is "$(req "$T/c$i" -d '{"messages":[{"role":"user","content":"Say hello."}],"max_tokens":8,"temperature":0}' "$U/v1/chat/completions")" 200 "chat $i through nginx"
done
is "$(jget "$T/c1" 'd["choices"][0]["message"]["content"]')" "$(jget "$T/c4" 'd["choices"][0]["message"]["content"]')" "greedy: the same answer from either replica"
curl -s -N --max-time $WAIT -d '{"prompt":"1, 2, 3,","max_tokens":16,"stream":true,"stream_options":{"include_usage":true}}' "$U/v1/completions" >"$T/sse"
"$PY" "$HERE/client.py" sse "$T/sse" >"$T/sum"
is "$(jget "$T/sum" '"%s %s %s" % (d["done_last"], d["finish"], d["usage"]["completion_tokens"])')" "True length 16" "a stream through nginx: every event, [DONE] last"
n1=$(grep -c '"POST /v1/' "$T/r1.log")
n2=$(grep -c '"POST /v1/' "$T/r2.log")
[ "$n1" -ge 1 ] && [ "$n2" -ge 1 ] && [ $((n1 + n2)) = 5 ]; ok $? "both replicas served: $n1 and $n2 of 5 requests"

# one replica stops: the other serves what comes
stop_server $PID1
is $STATUS 0 "replica 1: SIGTERM, exit 0"
for i in 1 2 3; do
	is "$(req "$T/b" -d '{"prompt":"Hello","max_tokens":4}' "$U/v1/completions")" 200 "request $i with one replica left"
done
stop_server $PID2
is $STATUS 0 "replica 2: SIGTERM, exit 0"
echo "1..$n"
exit $failed
