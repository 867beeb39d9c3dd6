#!/bin/sh
# The gen-model command other areas' tests call: options, errors, output.
: "${top_builddir:=.}"
gen="$top_builddir/tests/gen-model"
tool="$top_builddir/tests/quant-tool"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/t-gen-model.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0
t() { # t DESCRIPTION EXPECTED_STATUS ARGS... : run gen-model, compare exit status
	what=$1 want=$2
	shift 2
	n=$((n + 1))
	"$gen" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" -eq "$want" ]; then echo "ok $n - $what"; else echo "not ok $n - $what (exit $rc, want $want)"; sed 's/^/# /' "$tmp/err"; fi
}
t "--help" 0 --help
t "no --out" 2
t "unknown dtype" 2 --out "$tmp/a.gguf" --dtype q2_k
t "bad number" 2 --out "$tmp/a.gguf" --layers x
t "redundant layer out of range" 2 --out "$tmp/a.gguf" --layers 4 --redundant 1,4
t "heads not dividing embd" 1 --out "$tmp/a.gguf" --embd 64 --heads 3
t "quantised rows need multiples of 32" 1 --out "$tmp/a.gguf" --dtype q4_0 --embd 48 --heads 3 --kv-heads 1
t "unwritable path" 1 --out "$tmp/no/such/dir.gguf"
t "full option set" 0 --out "$tmp/b.gguf" --dtype q8_0 --layers 6 --embd 96 --ff 160 --heads 6 --kv-heads 3 \
	--vocab 500 --ctx 128 --seed 9 --redundant 2,3 --tied --tokenizer spm --theta 500000 --rope-scaling llama3-keys
n=$((n + 1))
"$tool" meta "$tmp/b.gguf" >"$tmp/meta" 2>&1
if grep -qx n_layer=6 "$tmp/meta" && grep -qx n_embd=96 "$tmp/meta" && grep -qx n_vocab=500 "$tmp/meta" &&
   grep -qx tied=1 "$tmp/meta" && grep -qx rope_theta=500000 "$tmp/meta" && grep -qx n_head_kv=3 "$tmp/meta"; then
	echo "ok $n - options reach the file"
else
	echo "not ok $n - options reach the file"; sed 's/^/# /' "$tmp/meta"
fi
echo "1..$n"
