#!/bin/sh
# The skipper command: errors, exit codes, and that configuration problems
# are reported before any model is loaded (the model path given here does
# not exist, so a message about it would mean the check came too late).
set -u
S="$top_builddir/skipper"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
n=0
check() { # description, expected exit code, expected stderr substring, command...
	desc=$1 want=$2 msg=$3
	shift 3
	"$@" >"$t/out" 2>"$t/err"
	rc=$?
	n=$((n + 1))
	if [ "$rc" = "$want" ] && grep -qF -- "$msg" "$t/err"; then
		echo "ok $n - $desc"
	else
		echo "not ok $n - $desc (exit $rc, want $want)"
		sed 's/^/#   /' "$t/err"
	fi
}
echo "1..42"
printf '[model]\nthreads = 2\nbogus = 1\n' >"$t/a.ini"
printf '[policy]\nname = fixed\n[fixed]\ndraft_lenght = 3\n' >"$t/b.ini"
printf '[policy]\nname = nosuchpolicy\n' >"$t/c.ini"
check "unknown key names file:line" 2 "$t/a.ini:3: [model] bogus: unknown key" \
	"$S" generate -c "$t/a.ini" -m /nonexistent.gguf -p hi
check "missing -c file" 2 "$t/none.ini: cannot open configuration file" \
	"$S" generate -c "$t/none.ini" -p hi
check "bad --set value" 2 "--set: [generate] max_tokens: 'x' is not an integer" \
	"$S" generate --set generate.max_tokens=x -m /nonexistent.gguf -p hi
check "unknown policy key is found before the model loads" 2 "$t/b.ini:4: [fixed] draft_lenght" \
	"$S" generate -c "$t/b.ini" -m /nonexistent.gguf -p hi
check "unknown policy" 2 "nosuchpolicy" \
	"$S" generate -c "$t/c.ini" -m /nonexistent.gguf -p hi
check "unknown section" 2 "[modle]: unknown section" \
	"$S" generate --set modle.path=x -p hi
check "missing model file" 1 "/nonexistent.gguf" \
	"$S" generate -m /nonexistent.gguf -p hi
printf 'GGUF\003\000\000\000' >"$t/trunc.gguf"
check "truncated model file" 1 "$t/trunc.gguf" "$S" info "$t/trunc.gguf"
check "unknown command" 2 "unknown command 'frobnicate'" "$S" frobnicate
check "help of an unknown command" 2 "unknown command 'frobnicate'" "$S" help frobnicate
n=$((n + 1))
"$S" help bench >"$t/out" 2>&1 && "$S" bench --help >"$t/out2" 2>&1 && cmp -s "$t/out" "$t/out2" &&
	grep -q "usage: skipper bench" "$t/out" && echo "ok $n - skipper help COMMAND is COMMAND --help" ||
	echo "not ok $n - skipper help bench: $(head -n 1 "$t/out")"
check "unknown option" 2 "unknown or incomplete option '--bogus'" "$S" generate --bogus
check "bench needs --data" 2 "--data FILE.jsonl is required" "$S" bench
printf '{"turns": ["hi"]}\nnot json\n' >"$t/bad.jsonl"
printf '{"turns": ["hi"]}\n' >"$t/one.jsonl"
check "bench: an unknown policy in --policies is a usage error before the model loads" 2 \
	"policy 'nosuchpolicy' not found" "$S" bench --data "$t/one.jsonl" --policies none,nosuchpolicy -m /nonexistent.gguf
check "bench names the bad JSONL line" 2 "$t/bad.jsonl:2: not a JSON object" "$S" bench --data "$t/bad.jsonl" -m /nonexistent.gguf
n=$((n + 1))
"$S" --version >"$t/out" 2>&1 && grep -q '^skipper [0-9]' "$t/out" && echo "ok $n - --version" || echo "not ok $n - --version"
n=$((n + 1))
"$S" policies >"$t/out" 2>"$t/err" && grep -q '^none ' "$t/out" && grep -q '^fixed ' "$t/out" &&
	echo "ok $n - policies lists none and fixed" || { echo "not ok $n - policies"; sed 's/^/#   /' "$t/out" "$t/err"; }

# Known model names resolve into the model cache (an empty cache here), for
# every name scripts/fetch-model.sh knows; a cached one loads.
for name in $("$top_srcdir/scripts/fetch-model.sh" --list | awk '{print $1}'); do
	SKIPPER_CACHE_DIR="$t/cache" "$S" info -m "$name" >"$t/out" 2>"$t/err"
	grep -qF "model $name is not in the cache ($t/cache/models/" "$t/err" &&
		grep -qF "scripts/fetch-model.sh $name" "$t/err" || bad="$bad $name"
done
n=$((n + 1))
[ -z "${bad:-}" ] && echo "ok $n - every fetch-model.sh name is a known -m name, with the fetch command when not cached" ||
	{ echo "not ok $n - names not known to skipper:${bad:-}"; sed 's/^/#   /' "$t/err"; }
mkdir -p "$t/cache/models"
"$top_builddir/tests/gen-model" --out "$t/cache/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf" --arch qwen2 \
	--dtype q5_0 --layers 1 >/dev/null
n=$((n + 1))
SKIPPER_CACHE_DIR="$t/cache" "$S" info -m qwen2.5-coder-0.5b >"$t/out" 2>&1 && grep -q 'architecture:    qwen2' "$t/out" &&
	echo "ok $n - -m qwen2.5-coder-0.5b loads the cached file" || { echo "not ok $n - cached name"; sed 's/^/#   /' "$t/out"; }
n=$((n + 1))
(cd "$t" && cp cache/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf qwen2.5-coder-1.5b &&
	SKIPPER_CACHE_DIR="$t/none" "$S" info -m qwen2.5-coder-1.5b >"$t/out" 2>&1) && grep -q 'qwen2' "$t/out" &&
	echo "ok $n - a file named like a known model is taken as the file" || { echo "not ok $n - file over name"; sed 's/^/#   /' "$t/out"; }

# Sections of policies other than the configured one (a file that keeps
# several) are checked by their plugins too, before the model loads.
printf '[policy]\nname = none\n[swift]\nmax_draft = 4\n[clasp]\nskip_ratoi = 0.5\n' >"$t/d.ini"
check "an unknown key in another policy's section" 2 "$t/d.ini:6: [clasp] skip_ratoi: unknown key for policy clasp" \
	"$S" generate -c "$t/d.ini" -m /nonexistent.gguf -p hi
check "a bad value there" 2 "--set: [swift] max_draft: expected an integer in [1, 32], got '99'" \
	"$S" generate --set swift.max_draft=99 -m /nonexistent.gguf -p hi
mkdir -p "$t/plug" && printf 'not a plugin' >"$t/plug/skipper-policy-fake.so"
check "a section whose plugin file is not a plugin" 2 "[fake]: $t/plug/skipper-policy-fake.so" \
	"$S" generate --set policy.plugin_dir="$t/plug" --set fake.x=1 -m /nonexistent.gguf -p hi
check "a plugin_dir that does not exist" 2 "[policy] plugin_dir $t/nodir: No such file or directory" \
	"$S" generate --set policy.plugin_dir="$t/nodir" -m /nonexistent.gguf -p hi
printf '[lookup]\nmin_ngram = 6\nmax_ngram = 2\n' >"$t/e.ini"
check "keys that bound each other, with both places" 2 "$t/e.ini:2: [lookup] min_ngram = 6 is above max_ngram = 2 ($t/e.ini:3)" \
	"$S" generate -c "$t/e.ini" -m /nonexistent.gguf -p hi
check "a count option that is not a number" 2 "--warmup: expected a whole number, got '2x'" \
	"$S" bench --data "$t/bad.jsonl" --warmup 2x
check "calibrate takes --policy=NAME as its own option" 2 "$t/none.jsonl: cannot open prompt file: No such file" \
	"$S" calibrate --policy=bo-static --data "$t/none.jsonl" --out "$t/cal"
check "... and checks --seed=N" 2 "--seed: expected a whole number, got '3x'" \
	"$S" calibrate --policy=bo-static --data "$t/none.jsonl" --out "$t/cal" --seed=3x

# Model files are untrusted: a FIFO is refused, not waited on; metadata
# strings reach the terminal without control bytes; a shape the kernels
# cannot run names the file and the rule.
mkfifo "$t/fifo.gguf" 2>/dev/null
check "a FIFO as model" 1 "$t/fifo.gguf: not a regular file" timeout 20 "$S" info -m "$t/fifo.gguf"
"$top_builddir/tests/gen-model" --out "$t/esc.gguf" --layers 1 --name "$(printf 'a\033[2Jb\nc')" >/dev/null
"$S" info -m "$t/esc.gguf" >"$t/out" 2>&1
n=$((n + 1))
! grep -q "$(printf '\033')" "$t/out" && grep -q 'name: *a?\[2Jb?c$' "$t/out" &&
	echo "ok $n - control bytes of a model's name are not printed" || { echo "not ok $n - escapes printed"; sed 's/^/#   /' "$t/out" | cat -v; }
"$top_builddir/tests/gen-model" --out "$t/e48.gguf" --layers 1 --embd 48 >/dev/null
check "a shape the kernels cannot run names the file and the rule" 1 "$t/e48.gguf: cpu backend: unsupported hyper-parameters" \
	"$S" generate -m "$t/e48.gguf" --set model.backend=cpu -p hi -n 2
n=$((n + 1))
grep -q "multiples of 32" "$t/err" && echo "ok $n - ... and says what it needs" || echo "not ok $n - no rule"

check "a JSONL prompt file must be a regular file (/dev/zero is refused, not read to the end of memory)" 2 \
	"/dev/zero: prompt file: not a regular file" "$S" bench --data /dev/zero -m /nonexistent.gguf
printf '{"turns": ["a"]}\n\000\n' >"$t/nul.jsonl"
check "... and is read by bounded lines (a NUL byte refused with its line)" 2 \
	"nul.jsonl:2: NUL byte in line" "$S" bench --data "$t/nul.jsonl" -m /nonexistent.gguf
check "a prompt file that is a directory says so (it read as an empty prompt)" 2 "$t: Is a directory" \
	"$S" generate -m "$t/esc.gguf" -f "$t" -n 2
check "a prompt file is read to a bound (/dev/zero is refused, not read to the end of memory)" 2 \
	"/dev/zero: more than 64 MiB of text" "$S" generate -m "$t/esc.gguf" -f /dev/zero -n 2
printf 'a\000b' >"$t/nul.txt"
check "a NUL byte in a prompt file is refused (the prompt was cut there)" 2 "$t/nul.txt: NUL byte in the text" \
	"$S" generate -m "$t/esc.gguf" -f "$t/nul.txt" -n 2
check "an option without its value says so" 2 "unknown or incomplete option '-r'" "$S" pull -r
"$top_builddir/tests/gen-model" --out "$t/c16.gguf" --layers 1 --ctx 16 >/dev/null
long="one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen"
check "a context the model file caps says so, not 'raise [model] ctx'" 1 "the model file's context_length" \
	"$S" generate -m "$t/c16.gguf" --ctx 4096 -p "$long" -n 4
check "a context [model] ctx caps says to raise it" 1 "raise [model] ctx" \
	"$S" generate -m "$t/esc.gguf" --ctx 16 -p "$long" -n 4
# a vocabulary of 321 tokens over 320 embedding rows (and vocab_size 320, so
# the shapes agree): info reads the tokenizer and refuses it as generate does
le() { v=$1; i=0; while [ $i -lt "$2" ]; do printf "\\$(printf %03o $((v & 255)))"; v=$((v >> 8)); i=$((i + 1)); done; }
"$top_builddir/tests/gen-model" --out "$t/v.gguf" --layers 1 --tied >/dev/null
o=$(grep -obUa "token_embd.weight" "$t/v.gguf" | head -1 | cut -d: -f1)
le 320 8 | dd of="$t/v.gguf" bs=1 seek=$((o + 29)) conv=notrunc 2>/dev/null # name, n_dims, ne0, then ne1
o=$(grep -obUa "llama.vocab_size" "$t/v.gguf" | head -1 | cut -d: -f1)
le 320 4 | dd of="$t/v.gguf" bs=1 seek=$((o + 20)) conv=notrunc 2>/dev/null # key, type, then the value
check "info refuses a vocabulary of another size than token_embd's rows" 1 \
	"$t/v.gguf: the vocabulary has 321 tokens, token_embd 320 rows" "$S" info -m "$t/v.gguf"
"$top_builddir/tests/gen-model" --out "$t/tiny.gguf" --layers 2 --embd 64 --ff 128 --vocab 256 --ctx 256 >/dev/null
check "--timing: where a pass's time went, by kind of work" 0 "--- timing: ms per pass (share) ---" \
	"$S" generate -m "$t/tiny.gguf" -t 1 -n 4 --timing -p "a b"
