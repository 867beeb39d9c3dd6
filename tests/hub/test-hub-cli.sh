#!/bin/sh
# The hub commands end to end: `skipper profile keygen|sign|publish` build a
# profile hub, nginx on 127.0.0.1 serves it, `skipper pull` and `skipper
# profile pull|show|verify` read it back. Exit codes per skipper-hub(1).
set -u
: "${top_builddir:=.}"
SKIPPER="$top_builddir/skipper"
n=0 failed=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi; }
is() { n=$((n + 1)); if [ "$1" = "$2" ]; then echo "ok $n - $3"; else echo "not ok $n - $3 (got $1, want $2)"; failed=1; fi; }

if [ -z "${NGINX:-}" ] || [ ! -x "$NGINX" ]; then echo "1..0 # SKIP nginx not found (install nginx-light)"; exit 0; fi
if ! "$SKIPPER" profile --help >/dev/null 2>&1; then echo "1..0 # SKIP skipper binary not built"; exit 0; fi

T=$(mktemp -d /tmp/skipper-hubcli-XXXXXX)
cleanup() { [ -f "$T/nginx.pid" ] && kill "$(cat "$T/nginx.pid")" 2>/dev/null; [ $failed = 0 ] && rm -rf "$T"; }
trap cleanup EXIT
export SKIPPER_SYSTEM_CONFIG=/nonexistent HF_HUB_CACHE="$T/cache" HF_HOME="$T/hfhome"
unset HF_TOKEN HF_HUB_OFFLINE HF_ENDPOINT
mkdir -p "$T/profiles" "$T/tree" "$T/tmp"

# Build a signed profile hub.
cat > "$T/profiles/fast.ini" <<'INI'
[profile]
model = tiny-llama
model_sha256 = 5f2b9c1e0d4a7b3c8e6f1a2d9c0b7e4f3a6d8c1b2e5f7a9c0d3b6e8f1a4c7d2e
method = swift
n_layers = 16

[mask]
attn = 3,5,7-12
mlp = 4
INI
cp "$T/profiles/fast.ini" "$T/profiles/unsigned.ini"
"$SKIPPER" profile keygen "$T/key.pem" "$T/pub.pem" >/dev/null; ok $? "profile keygen"
"$SKIPPER" profile sign --key "$T/key.pem" "$T/profiles/fast.ini" >/dev/null; ok $? "profile sign"
"$SKIPPER" profile verify --key "$T/pub.pem" "$T/profiles/fast.ini" >/dev/null; ok $? "profile verify"
"$SKIPPER" profile verify --key "$T/pub.pem" "$T/profiles/unsigned.ini" 2>/dev/null; is $? 3 "verify of an unsigned file: exit 3"
"$SKIPPER" profile verify "$T/profiles/fast.ini" 2>/dev/null; is $? 2 "verify without any key: exit 2"
"$SKIPPER" profile publish "$T/profiles" --repo team/profiles --out "$T/tree" >/dev/null; ok $? "profile publish"
cp "$T/key.pem" "$T/profiles/evil.so"
"$SKIPPER" profile publish "$T/profiles" --repo team/bad --out "$T/tree" 2>/dev/null; is $? 2 "publish refuses a .so"
rm "$T/profiles/evil.so"

# nginx on a free port (retry on collisions).
for try in 1 2 3 4 5 6 7 8; do
	PORT=$(( (($$ + try * 7919) % 30000) + 20000 ))
	cat > "$T/nginx.conf" <<CONF
daemon on;
master_process off;
pid $T/nginx.pid;
error_log $T/error.log;
events { worker_connections 64; }
http {
  default_type application/octet-stream;
  log_format hub '"\$request" \$status range="\$http_range"';
  access_log $T/access.log hub;
  client_body_temp_path $T/tmp; proxy_temp_path $T/tmp; fastcgi_temp_path $T/tmp; uwsgi_temp_path $T/tmp; scgi_temp_path $T/tmp;
  server { listen 127.0.0.1:$PORT; root $T/tree; location /team/slow/ { limit_rate 1m; }
    location /api/models/team/busy/ { add_header Retry-After 2 always; return 429; } }
}
CONF
	env -u NGINX "$NGINX" -p "$T" -c "$T/nginx.conf" -e "$T/error.log" 2>/dev/null && break
	PORT=
done
if [ -z "$PORT" ]; then echo "Bail out! nginx did not start"; exit 99; fi
for i in 1 2 3 4 5 6 7 8 9 10; do [ -f "$T/nginx.pid" ] && break; sleep 0.2; done
export HF_ENDPOINT="http://127.0.0.1:$PORT"

out=$("$SKIPPER" pull team/profiles fast.ini); ok $? "skipper pull"
case "$out" in "$T/cache/models--team--profiles/snapshots/"*/fast.ini) r=0 ;; *) r=1 ;; esac; ok $r "prints the snapshot path"
cmp -s "$out" "$T/profiles/fast.ini"; ok $? "same bytes as published"
"$SKIPPER" pull team/nothere x.ini 2>"$T/err"; is $? 3 "404: exit 3"
grep -q "not found" "$T/err"; ok $? "404 message: $(cat "$T/err")"
"$SKIPPER" pull 2>/dev/null; is $? 2 "no repository: exit 2"
HF_HUB_OFFLINE=1 "$SKIPPER" pull team/profiles fast.ini >/dev/null; ok $? "offline, cached: exit 0"
HF_HUB_OFFLINE=1 "$SKIPPER" pull team/profiles unsigned.ini 2>"$T/err"; is $? 3 "offline, not cached: exit 3"
grep -q "unsigned.ini" "$T/err"; ok $? "offline message names the file"

"$SKIPPER" profile pull team/profiles >"$T/list"; ok $? "profile pull, no trusted keys"
is "$(wc -l < "$T/list" | tr -d ' ')" 3 "three files (two profiles, one signature)"
"$SKIPPER" profile pull --set "hub.trusted_keys=$T/pub.pem" team/profiles fast.ini >/dev/null; ok $? "signed profile with trusted_keys"
"$SKIPPER" profile pull --set "hub.trusted_keys=$T/pub.pem" team/profiles unsigned.ini >"$T/list" 2>"$T/err"; is $? 3 "unsigned profile with trusted_keys: exit 3"
grep -q refused "$T/err"; ok $? "says refused: $(cat "$T/err")"
is "$(wc -c < "$T/list" | tr -d ' ')" 0 "no path printed for a refused profile"
"$SKIPPER" profile pull team/profiles evil.so 2>/dev/null; is $? 2 "profile pull refuses executable names"
"$SKIPPER" profile show "hub:team/profiles/fast.ini" >"$T/show"; ok $? "profile show hub:"
grep -q "8 of 16 layers" "$T/show"; ok $? "show expands the mask"
"$SKIPPER" profile show --set "hub.trusted_keys=$T/pub.pem" "$T/profiles/fast.ini" | grep -q "signature: good"; ok $? "show reports a good signature"

# Ctrl-C mid-download: exit 130, partial kept outside blobs/, next pull resumes.
c=3333333333333333333333333333333333333333
mkdir -p "$T/tree/team/slow/resolve/$c" "$T/tree/api/models/team/slow/revision"
head -c 4194304 /dev/urandom > "$T/tree/team/slow/resolve/$c/slow.bin"
sum=$(sha256sum "$T/tree/team/slow/resolve/$c/slow.bin" | cut -d' ' -f1)
printf '{"sha":"%s","siblings":[{"rfilename":"slow.bin","size":4194304,"lfs":{"sha256":"%s","size":4194304}}]}' \
	"$c" "$sum" > "$T/tree/api/models/team/slow/revision/main"
"$SKIPPER" pull -q team/slow slow.bin 2>/dev/null & pid=$!
sleep 1; kill -INT $pid; wait $pid; is $? 130 "interrupted pull: exit 130"
[ -s "$T/cache/.locks/models--team--slow/$sum.incomplete" ] && [ ! -e "$T/cache/models--team--slow/blobs/$sum" ]
ok $? "partial file kept, nothing in blobs/"
out=$("$SKIPPER" pull team/slow slow.bin) && [ "$(sha256sum < "$out" | cut -d' ' -f1)" = "$sum" ]; ok $? "next pull resumes and verifies"
grep -q 'slow.bin HTTP/1.1" 206 range="bytes=' "$T/access.log"; ok $? "with a Range request"

# [model] hub = ORG/NAME:FILE resolves through the cache (needs the test-model generator).
if [ -x "$top_builddir/tests/gen-model" ] && "$top_builddir/tests/gen-model" --out "$T/tiny.gguf" >/dev/null 2>&1; then
	c=2222222222222222222222222222222222222222
	mkdir -p "$T/tree/team/model/resolve/$c" "$T/tree/api/models/team/model/revision"
	cp "$T/tiny.gguf" "$T/tree/team/model/resolve/$c/tiny.gguf"
	sz=$(wc -c < "$T/tiny.gguf" | tr -d ' ') sum=$(sha256sum "$T/tiny.gguf" | cut -d' ' -f1)
	printf '{"sha":"%s","siblings":[{"rfilename":"tiny.gguf","size":%s,"lfs":{"sha256":"%s","size":%s}}]}' \
		"$c" "$sz" "$sum" "$sz" > "$T/tree/api/models/team/model/revision/main"
	"$SKIPPER" info --set model.hub=team/model:tiny.gguf >"$T/info" 2>&1; ok $? "[model] hub resolves and downloads"
	grep -q "models--team--model/snapshots/$c/tiny.gguf" "$T/info"; ok $? "and the model is read from the cache"
	HF_HUB_OFFLINE=1 "$SKIPPER" info --set model.hub=team/model:tiny.gguf >/dev/null 2>&1; ok $? "[model] hub offline from the cache"
	HF_HUB_OFFLINE=1 "$SKIPPER" info --set model.hub=team/model:other.gguf >/dev/null 2>&1; is $? 3 "[model] hub offline, not cached: exit 3"

	# a published tree of profiles, pulled: a policy finds the one for its model by itself
	mkdir -p "$T/tp/tiny"
	printf '[profile]\nmodel = tiny\nmodel_sha256 = %s\nmethod = bo-static\nn_layers = 4\n\n[mask]\nattn = 1\nmlp = 1\n' \
		"$sum" >"$T/tp/tiny/bo-static.ini"
	"$SKIPPER" profile publish "$T/tp" --repo team/tinyprof --out "$T/tree" >/dev/null &&
		"$SKIPPER" profile pull team/tinyprof >/dev/null; ok $? "a tree of profiles published and pulled"
	SKIPPER_CACHE_DIR="$T/sk" SKIPPER_DEBUG=1 "$SKIPPER" generate -m "$T/tiny.gguf" --set policy.name=bo-static \
		--set model.threads=1 -p "hi" -n 4 >/dev/null 2>"$T/err"
	r=$?
	[ $r = 0 ] && grep -q "profile $T/cache/models--team--tinyprof/snapshots/.*/tiny/bo-static.ini (found" "$T/err"
	ok $? "bo-static finds the pulled profile in the hub cache (exit $r)"
else
	for i in 1 2 3 4 5 6; do n=$((n + 1)); echo "ok $n # SKIP no test-model generator"; done
fi

# [model] hub = ORG/NAME and -m ORG/NAME: a Hugging Face checkpoint, only the
# files a model needs (not README.md, not the onnx/ copy), checked, and read
# from the snapshot (needs the generator and python3 with numpy and gguf).
if [ -x "$top_builddir/tests/gen-model" ] && "${PYTHON3:-python3}" -c "import numpy, gguf" 2>/dev/null &&
	"$top_builddir/tests/gen-model" --out "$T/ck.gguf" --arch qwen2 >/dev/null 2>&1 &&
	"${PYTHON3:-python3}" "${top_srcdir:-.}/tests/gguf-to-hf.py" "$T/ck.gguf" "$T/ck" --dtype bf16 --shards 2; then
	c=5555555555555555555555555555555555555555
	mkdir -p "$T/tree/team/ckpt/resolve/$c/onnx" "$T/tree/api/models/team/ckpt/revision"
	echo "a model card" > "$T/ck/README.md"
	mkdir -p "$T/ck/onnx" && echo "not needed" > "$T/ck/onnx/model.onnx"
	sib=
	for f in $(cd "$T/ck" && find . -type f | sed 's|^\./||' | sort); do
		cp "$T/ck/$f" "$T/tree/team/ckpt/resolve/$c/$f"
		sz=$(wc -c < "$T/ck/$f" | tr -d ' ') sum=$(sha256sum "$T/ck/$f" | cut -d' ' -f1)
		sib="$sib${sib:+,}{\"rfilename\":\"$f\",\"size\":$sz,\"lfs\":{\"sha256\":\"$sum\",\"size\":$sz}}"
	done
	printf '{"sha":"%s","siblings":[%s]}' "$c" "$sib" > "$T/tree/api/models/team/ckpt/revision/main"
	"$SKIPPER" info --set model.hub=team/ckpt >"$T/info" 2>"$T/err"; ok $? "[model] hub = ORG/NAME pulls a checkpoint: $(head -c 300 "$T/err")"
	grep -q "checkpoint: *$T/cache/models--team--ckpt/snapshots/$c " "$T/info" && grep -q "name: *team/ckpt" "$T/info"
	ok $? "and reads it from the snapshot, named after the repository"
	snap="$T/cache/models--team--ckpt/snapshots/$c"
	[ -f "$snap/model.safetensors.index.json" ] && [ -f "$snap/tokenizer.json" ] && [ ! -e "$snap/README.md" ] &&
		[ ! -e "$snap/onnx" ]; ok $? "only the files a model needs: $(ls "$snap" | tr '\n' ' ')"
	SKIPPER_CACHE_DIR="$T/sk" "$SKIPPER" generate -m team/ckpt --set model.threads=1 -p "hi" -n 4 >"$T/a" 2>"$T/err"
	ok $? "-m ORG/NAME generates from the hub's checkpoint: $(head -c 300 "$T/err")"
	SKIPPER_CACHE_DIR="$T/sk" "$SKIPPER" generate -m "$T/ck" --set model.threads=1 -p "hi" -n 4 >"$T/b" 2>/dev/null
	cmp -s "$T/a" "$T/b"; ok $? "the same text as from the local directory"
	HF_HUB_OFFLINE=1 SKIPPER_CACHE_DIR="$T/sk" "$SKIPPER" generate -m team/ckpt --set model.threads=1 -p "hi" -n 4 \
		>/dev/null 2>&1; ok $? "offline, from the cache"
	printf '{"sha":"%s","siblings":[{"rfilename":"README.md","size":13}]}' "$c" > "$T/tree/api/models/team/ckpt/revision/v0"
	"$SKIPPER" info --set model.hub=team/ckpt@v0 >/dev/null 2>"$T/err"; r=$?
	[ $r = 1 ] && grep -q "not a Hugging Face checkpoint" "$T/err"; ok $? "a repository without config.json: exit $r, $(cat "$T/err")"
else
	for i in 1 2 3 4 5 6 7; do n=$((n + 1)); echo "ok $n # SKIP no test-model generator or python3 with numpy and gguf"; done
fi

# Faults a hub can serve, each a clear error with nothing stored.
# listed_repo REPO FILE SIZE-IN-LISTING EXTRA-JSON: serve FILE (from $T/src) under a fixed commit
listed_repo() {
	c=4444444444444444444444444444444444444444
	mkdir -p "$T/tree/$1/resolve/$c" "$T/tree/api/models/$1/revision"
	cp "$T/src/$2" "$T/tree/$1/resolve/$c/$2"
	printf '{"sha":"%s","siblings":[{"rfilename":"%s"%s%s}]}' "$c" "$2" "${3:+,\"size\":$3}" "$4" \
		> "$T/tree/api/models/$1/revision/main"
}
mkdir -p "$T/src" && head -c 500000 /dev/urandom > "$T/src/f.bin"
listed_repo team/short f.bin 1048576 ""
"$SKIPPER" pull --set hub.retries=1 team/short f.bin >"$T/out" 2>"$T/err"; is $? 3 "a file shorter than listed: exit 3"
grep -q "f.bin: .*500000 of 1048576 bytes\|nothing past byte" "$T/err" && [ ! -s "$T/out" ] &&
	[ -z "$(ls "$T/cache/models--team--short/blobs" 2>/dev/null)" ]; ok $? "... says so, prints no path, stores no blob: $(cat "$T/err")"
listed_repo team/blob f.bin "" ',"blobId":"0000000000000000000000000000000000000000"'
"$SKIPPER" pull team/blob f.bin >/dev/null 2>"$T/err"; is $? 3 "a git blob id that does not match, no size listed: exit 3"
grep -q "expected git blob id 0000" "$T/err" && [ -z "$(ls "$T/cache/models--team--blob/blobs" 2>/dev/null)" ]
ok $? "... checked after the download, nothing stored: $(cat "$T/err")"
cp "$T/tree/api/models/team/short/revision/main" "$T/tree/api/models/team/short/revision/0123456789abcdef0123456789abcdef01234567"
"$SKIPPER" pull -r 0123456789abcdef0123456789abcdef01234567 team/short f.bin >/dev/null 2>"$T/err"
is $? 3 "a pinned commit the hub answers with another one: exit 3"
grep -q "asked for commit 0123456789abcdef0123456789abcdef01234567, the hub answered with commit 4444" "$T/err"
ok $? "... names both: $(cat "$T/err")"
"$SKIPPER" profile pull team/short >/dev/null 2>"$T/err"; is $? 3 "profile pull of a repo without profile data: exit 3"
"$SKIPPER" profile pull --set "hub.trusted_keys=$T/nokey.pem" team/profiles >/dev/null 2>"$T/err"
is $? 2 "a trusted key that is not there: exit 2 before anything is fetched"
mkdir -p "$T/tokdir"
"$SKIPPER" pull --set "hub.token_file=$T/tokdir" team/profiles fast.ini >/dev/null 2>"$T/err"; r=$?
[ $r != 0 ] && grep -q "token file $T/tokdir" "$T/err"; ok $? "a token file that is a directory is an error (exit $r)"
mkdir -p "$T/pf" && cp "$T/profiles/fast.ini" "$T/pf/" && mkfifo "$T/pf/pipe.ini"
timeout 20 "$SKIPPER" profile publish "$T/pf" --repo team/pf --out "$T/tree" >/dev/null 2>"$T/err"
is $? 2 "publish refuses a FIFO instead of waiting on it"
rm "$T/pf/pipe.ini"
"$SKIPPER" profile publish "$T/pf" --repo team/pf --out "$T/tree" >/dev/null
[ "$(stat -c %i "$T/pf/fast.ini")" != "$(stat -c %i "$(find "$T/tree/team/pf/resolve" -name fast.ini)")" ]
ok $? "publish copies the files (an edit of the source does not change the hub)"
for e in ftp://127.0.0.1 file:///tmp http:// 'not a url'; do
	"$SKIPPER" pull --set "hub.endpoint=$e" team/profiles fast.ini >/dev/null 2>"$T/err"; r=$?
	[ $r = 2 ] && grep -q "\[hub\] endpoint \"$e\" is not an http:// or https:// URL with a host" "$T/err"
	ok $? "endpoint $e: exit $r, $(cat "$T/err")"
done
HF_ENDPOINT=gopher://127.0.0.1 "$SKIPPER" pull team/profiles fast.ini >/dev/null 2>"$T/err"; r=$?
[ $r = 2 ] && grep -q "HF_ENDPOINT: endpoint" "$T/err"; ok $? "a bad HF_ENDPOINT names the variable: exit $r"

# a 429 that says when to come back: not earlier (the default first pause is 0.5 s)
t0=$(date +%s%N)
"$SKIPPER" pull --set hub.retries=1 team/busy f.bin >/dev/null 2>"$T/err"; r=$?
t1=$(date +%s%N)
is $r 3 "a hub that stays busy: exit 3"
[ $(( (t1 - t0) / 1000000 )) -ge 2000 ] && [ "$(grep -c 'team/busy' "$T/access.log")" = 2 ]
ok $? "Retry-After: 2 is waited for before the one retry ($(( (t1 - t0) / 1000000 )) ms)"

echo "1..$n"
exit $failed
