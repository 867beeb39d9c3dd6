#!/bin/sh
# Every file skipper reads is bounded and checked (issue 56), through the
# skipper command on a generated model: each case hung, blocked, was taken
# silently or said the wrong thing. Each runs under `timeout`, so that a
# reader that blocks again fails here instead of hanging the suite.
set -u
sk="$top_builddir/skipper"
t=$(mktemp -d "${TMPDIR:-/tmp}/t-bounds.XXXXXX") || exit 1
trap 'rm -rf "$t"' EXIT
export SKIPPER_CACHE_DIR="$t/cache" HOME="$t/home"
unset SKIPPER_DATA_PATH XDG_CACHE_HOME
mkdir -p "$HOME"
py=${PYTHON3:-python3}

"$top_builddir/tests/gen-model" --out "$t/m.gguf" --layers 2 --embd 64 --ff 128 --vocab 256 --ctx 256 \
	>/dev/null || { echo "Bail out! gen-model failed"; exit 1; }
gen="$sk generate -m $t/m.gguf -t 1 -n 2 -p hi --set model.backend=cpu"
n=0

# check DESCRIPTION WANT_STATUS WANT_TEXT CMD...: CMD within 30 s, its exit
# status, and WANT_TEXT in its stderr ("" for none)
check() {
	what=$1 want=$2 text=$3
	shift 3
	n=$((n + 1))
	timeout 30 "$@" >"$t/out" 2>"$t/err" </dev/null
	rc=$?
	# BOUNDS_TABLE=FILE: each case's exit status and first line of stderr
	# as a Markdown row (the issue's before/after table, from any build)
	[ -n "${BOUNDS_TABLE:-}" ] && printf '| %s | %s | %s |\n' "$what" "$rc" \
		"$(head -n 1 "$t/err" | sed "s|$t/||g; s/|/\\\\|/g" | cut -c1-160)" >>"$BOUNDS_TABLE"
	if [ "$rc" = 124 ]; then
		echo "not ok $n - $what: still running after 30 s"
	elif [ "$rc" != "$want" ]; then
		sed 's/^/# /' "$t/err"
		echo "not ok $n - $what: exit $rc, want $want"
	elif [ -n "$text" ] && ! grep -qF -- "$text" "$t/err"; then
		sed 's/^/# /' "$t/err"
		echo "not ok $n - $what: stderr lacks '$text'"
	else
		echo "ok $n - $what"
	fi
}

# patch FILE OUT KEY VALUE: OUT is FILE with the uint32 metadata KEY set to VALUE
patch_u32() {
	"$py" - "$@" <<'EOF'
import struct, sys
src, dst, key, val = sys.argv[1], sys.argv[2], sys.argv[3].encode(), int(sys.argv[4])
b = bytearray(open(src, 'rb').read())
i = b.index(struct.pack('<Q', len(key)) + key) + 8 + len(key)
assert struct.unpack_from('<I', b, i)[0] == 4  # GGUF_TYPE_UINT32
struct.pack_into('<I', b, i + 4, val)
open(dst, 'wb').write(b)
EOF
}

# --- the configuration ---
mkfifo "$t/fifo.ini"
check "-c /dev/zero: refused, not read forever" 2 "/dev/zero: configuration file: not a regular file" $gen -c /dev/zero
check "-c FIFO: refused without waiting for a writer" 2 "fifo.ini: configuration file: not a regular file" \
	$gen -c "$t/fifo.ini"
printf '[generate]\nmax_tokens = 4\000junk\n' >"$t/nul.ini"
check "a NUL byte in an INI file: refused with its line" 2 "nul.ini:2: NUL byte in a text file" $gen -c "$t/nul.ini"
check "--temperature 0x10 (read as 16): not a number" 2 "[generate] temperature: '0x10' is not a number" \
	$gen --temperature 0x10
check "--temperature ' 0.5': not a number either" 2 "temperature: ' 0.5' is not a number" $gen --temperature " 0.5"
long=$(head -c 5000 /dev/zero | tr '\0' x)
check "a 5000-byte --set value: refused, cut in the message" 2 "a value of 5000 bytes, more than 1023" \
	$gen --set "generate.chat_template=$long"
n=$((n + 1))
if [ "$(wc -c <"$t/err")" -lt 300 ]; then echo "ok $n - ... the message is short ($(wc -c <"$t/err") bytes)"; else
	echo "not ok $n - the message echoes the value ($(wc -c <"$t/err") bytes)"; fi

# --- the cost cache: a first run with lookup measures and writes it ---
check "lookup measures the cost curve and caches it" 0 "" $gen --policy lookup
c=$(ls "$t"/cache/costs/*.costs 2>/dev/null | head -n 1)
if [ -z "$c" ]; then echo "Bail out! no cost cache written"; exit 1; fi
cp "$c" "$t/good.costs"
rm -f "$c"
ln -s /dev/zero "$c"
check "a cost cache linked to /dev/zero: refused, not read forever" 0 "" $gen --policy lookup
n=$((n + 1))
if [ -L "$c" ]; then echo "not ok $n - the link was not replaced by a measured curve"; else
	echo "ok $n - ... and replaced by a measured curve"; fi
rm -f "$c"
mkfifo "$c"
check "a cost cache that is a FIFO: no wait for a writer" 0 "" $gen --policy lookup
rm -f "$c"
mkdir "$c"
check "a cost cache that is a directory: measured, the directory left alone" 0 "" $gen --policy lookup
rmdir "$c"
# damaged caches are measured again and rewritten whole
damaged() {
	what=$1
	shift
	sed "$@" "$t/good.costs" >"$c"
	check "$what: measured again" 0 "" $gen --policy lookup
	n=$((n + 1))
	if [ "$(grep -c '^verify ' "$c")" = "$(grep -c '^verify ' "$t/good.costs")" ] && ! cmp -s "$c" "$t/bad.costs"; then
		echo "ok $n - ... and the cache rewritten"
	else
		echo "not ok $n - the damaged cache was kept"
	fi
}
sed '/^verify \([4-9]\|[1-9][0-9]\) /d' "$t/good.costs" >"$t/bad.costs"
damaged "rows cut after verify 3" -e '/^verify \([4-9]\|[1-9][0-9]\) /d'
sed 's/^verify 8 .*/verify 8 9999/' "$t/good.costs" >"$t/bad.costs"
damaged "verify 8 9999" -e 's/^verify 8 .*/verify 8 9999/'

# --- GGUF metadata ---
patch_u32 "$t/m.gguf" "$t/ctx0.gguf" llama.context_length 0
check "GGUF context_length = 0: refused, naming the key" 1 "llama.context_length = 0" $gen -m "$t/ctx0.gguf"
patch_u32 "$t/m.gguf" "$t/bos.gguf" tokenizer.ggml.bos_token_id 4000000000
check "GGUF bos_token_id = 4000000000: refused, naming the key" 1 \
	"tokenizer.ggml.bos_token_id = 4000000000 is past the vocabulary" $gen -m "$t/bos.gguf"

# --- skip profiles ---
sha=$(sha256sum "$t/m.gguf" | cut -d' ' -f1)
prof() { printf '[profile]\nmodel = m\nmodel_sha256 = %s\nmethod = fixed\nn_layers = 2\n\n[mask]\nattn = %s\n' "$sha" "$1"; }
prof 12345678901234567890 >"$t/big.ini"
check "a 20-digit layer: named as written" 1 "layer 12345678901234567890 out of range" \
	"$sk" profile show "$t/big.ini"
{ prof 1; head -c 409600 /dev/zero | tr '\0' x; echo; } >"$t/longline.ini"
check "a 400 KB profile line: longer than the bound" 1 "longline.ini:9: line longer than 65535 bytes" \
	"$sk" profile show "$t/longline.ini"
prof 1 | sed 's/^method = .*/method = ..\/..\/x\/evil/' >"$t/method.ini"
check "a profile's method that is a path: refused" 1 "[profile] method: '../../x/evil' is not a policy name" \
	"$sk" profile show "$t/method.ini"

# --- signatures and [hub] trusted_keys ---
"$sk" profile keygen "$t/key.pem" "$t/pub.pem" >/dev/null 2>&1 || { echo "Bail out! keygen failed"; exit 1; }
prof 1 >"$t/signed.ini"
prof 1 >"$t/unsigned.ini"
prof 1 >"$t/tampered.ini"
"$sk" profile sign --key "$t/key.pem" "$t/signed.ini" "$t/tampered.ini" >/dev/null 2>&1
echo "; edited" >>"$t/tampered.ini"
cp "$t/signed.ini" "$t/extra.ini"
{ cat "$t/signed.ini.sig"; echo; } >"$t/extra.ini.sig"
check "a .sig with more than its line: refused" 3 "more than the signature line" \
	"$sk" profile verify --key "$t/pub.pem" "$t/extra.ini"
keys="--set hub.trusted_keys=$t/pub.pem"
check "trusted_keys: a local unsigned --profile is refused" 2 "signature file missing (profile is unsigned)" \
	$gen --policy fixed --profile "$t/unsigned.ini" $keys
check "trusted_keys: a local tampered --profile is refused" 2 "does not verify with any of the 1 trusted key" \
	$gen --policy fixed --profile "$t/tampered.ini" $keys
check "trusted_keys: a local signed --profile is used" 0 "" $gen --policy fixed --profile "$t/signed.ini" $keys
check "trusted_keys: a key path to a missing file is reported" 2 "[hub] trusted_keys: key $t/nokey.pem" \
	$gen --policy fixed --profile "$t/signed.ini" --set hub.trusted_keys="$t/nokey.pem"

# --- lost output, partial files ---
check "standard output on /dev/full: the text is lost, exit 1" 1 "standard output: No space left on device" \
	sh -c "$gen >/dev/full"
check "--json on /dev/full: exit 1" 1 "standard output: No space left on device" sh -c "$gen --json >/dev/full"
check "standard output closed: exit 1" 1 "standard output: Bad file descriptor" sh -c "$gen >&-"
printf '{"question_id": 1, "category": "writing", "turns": ["%s"]}\n' "$(printf 'a %.0s' $(seq 400))" >"$t/long.jsonl"
check "bench --data whose prompt does not fit: exit 1" 1 "does not fit the context" \
	"$sk" bench -m "$t/m.gguf" -t 1 --set model.backend=cpu --data "$t/long.jsonl" --policies none --out "$t/b1"
n=$((n + 1))
if ls "$t"/b1* >/dev/null 2>&1; then echo "not ok $n - ... and leaves $(ls "$t"/b1*)"; else
	echo "ok $n - ... and leaves no OUT.jsonl behind"; fi
printf '{"question_id": 1, "category": 7, "turns": ["hi"]}\n' >"$t/cat7.jsonl"
check "bench --data with \"category\": 7: refused, naming the line" 2 'cat7.jsonl:1: "category" is a number, not a string' \
	"$sk" bench -m "$t/m.gguf" -t 1 --set model.backend=cpu --data "$t/cat7.jsonl" --policies none --out "$t/b2"
mkfifo "$t/fifo.jsonl"
check "bench --data FIFO: refused without waiting for a writer" 2 "fifo.jsonl: prompt file: not a regular file" \
	"$sk" bench -m "$t/m.gguf" -t 1 --set model.backend=cpu --data "$t/fifo.jsonl" --policies none --out "$t/b3"

# --- policy names ---
check "--policy ../../etc/passwd: said to be a path" 2 "policy '../../etc/passwd' is a path" \
	$gen --policy ../../etc/passwd

# --- the hub client: a refused connection fails at once ---
port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start=$(date +%s)
check "a refused connection to the hub: not retried" 3 "not retried: nothing listens there" \
	"$sk" pull --set hub.endpoint="http://127.0.0.1:$port" --set hub.cache_dir="$t/hub" org/repo f.gguf
n=$((n + 1))
secs=$(($(date +%s) - start))
if [ "$secs" -lt 5 ]; then echo "ok $n - ... within seconds ($secs s; 16 s of retries before)"; else
	echo "not ok $n - a refused connection took $secs s"; fi
echo "1..$n"
