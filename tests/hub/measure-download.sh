#!/bin/sh
# Throughput of `skipper pull` against `curl -o` for one large file served by
# nginx on 127.0.0.1, and the time a resume takes. Not part of `make check`:
#   top_builddir=BUILD NGINX=/usr/sbin/nginx sh tests/hub/measure-download.sh [MB] [RUNS]
# Each run starts from an empty cache; skipper's time includes SHA-256
# verification, fsync and the rename into the cache; plain curl only writes
# into the page cache, so "curl+fsync" is the like-for-like baseline.
set -eu
: "${top_builddir:=.}"
MB=${1:-200} RUNS=${2:-3}
SKIPPER="$top_builddir/skipper" PROXY="$top_builddir/tests/hub/faultproxy"
T=$(mktemp -d /tmp/skipper-measure-XXXXXX)
trap '[ -f "$T/nginx.pid" ] && kill "$(cat "$T/nginx.pid")"; rm -rf "$T"' EXIT
now() { date +%s.%N; }
mkdir -p "$T/tmp" "$T/tree/api/models/bench/big/revision"
commit=0123456789abcdef0123456789abcdef01234567
mkdir -p "$T/tree/bench/big/resolve/$commit"
f="$T/tree/bench/big/resolve/$commit/big.bin"
# Deterministic, incompressible bytes.
openssl enc -aes-128-ctr -K 00000000000000000000000000000000 -iv 00000000000000000000000000000000 \
	-in /dev/zero 2>/dev/null | head -c $((MB * 1048576)) > "$f"
size=$(stat -c %s "$f") sha=$(sha256sum "$f" | cut -d' ' -f1)
printf '{"sha":"%s","siblings":[{"rfilename":"big.bin","size":%s,"lfs":{"sha256":"%s","size":%s}}]}' \
	"$commit" "$size" "$sha" "$size" > "$T/tree/api/models/bench/big/revision/main"
PORT=$(( ($$ % 30000) + 20000 ))
cat > "$T/nginx.conf" <<CONF
daemon on; master_process off; pid $T/nginx.pid; error_log $T/error.log;
events { worker_connections 64; }
http { default_type application/octet-stream; access_log off; sendfile on;
  client_body_temp_path $T/tmp; proxy_temp_path $T/tmp; fastcgi_temp_path $T/tmp; uwsgi_temp_path $T/tmp; scgi_temp_path $T/tmp;
  server { listen 127.0.0.1:$PORT; root $T/tree; } }
CONF
env -u NGINX "${NGINX:-/usr/sbin/nginx}" -p "$T" -c "$T/nginx.conf" -e "$T/error.log"
sleep 0.3
URL="http://127.0.0.1:$PORT/bench/big/resolve/$commit/big.bin"
export SKIPPER_SYSTEM_CONFIG=/nonexistent HF_ENDPOINT="http://127.0.0.1:$PORT"
unset HF_TOKEN HF_HUB_OFFLINE
echo "file: $MB MiB ($size bytes), $RUNS runs each, interleaved"
for r in $(seq "$RUNS"); do
	rm -f "$T/curl.out"; t0=$(now)
	curl -s -o "$T/curl.out" "$URL"; t1=$(now)
	rm -rf "$T/cache"; t2=$(now)
	HF_HUB_CACHE="$T/cache" "$SKIPPER" pull --quiet bench/big big.bin; t3=$(now)
	# The same durability as skipper: curl, then fsync (coreutils sync FILE).
	rm -f "$T/curl.out"; t4=$(now)
	curl -s -o "$T/curl.out" "$URL" && sync "$T/curl.out"; t5=$(now)
	echo "$t0 $t1 $t2 $t3 $t4 $t5" | awk -v mb="$MB" '{c=$2-$1; s=$4-$3; d=$6-$5; printf "run: curl %.3f s (%.0f MiB/s)  skipper %.3f s (%.0f MiB/s)  curl+fsync %.3f s  ratio skipper/curl %.2f  skipper/(curl+fsync) %.2f\n", c, mb/c, s, mb/s, d, c/s, d/s}'
done
# Resume: a proxy cuts the first connection at half the file; with no
# retries the pull fails and keeps the partial file; the next pull resumes.
rm -rf "$T/cache"
"$PROXY" "$T/proxy.port" "$PORT" drop $((size / 2)) & pp=$!
sleep 0.3
HF_ENDPOINT="http://127.0.0.1:$(cat "$T/proxy.port")" HF_HUB_CACHE="$T/cache" \
	"$SKIPPER" pull --quiet --set hub.retries=0 bench/big big.bin 2>/dev/null || true
kill $pp
part=$(stat -c %s "$T/cache/.locks/models--bench--big/$sha.incomplete")
t0=$(now); HF_HUB_CACHE="$T/cache" "$SKIPPER" pull --quiet bench/big big.bin; t1=$(now)
echo "$t0 $t1 $part $size" | awk '{printf "resume: %d of %d bytes already there; resume run %.3f s (re-hashes the partial file, fetches the rest)\n", $3, $4, $2-$1}'
