#!/bin/sh
# `skipper generate` on the CUDA backend's own code, run on the CPU by
# cudaemu (tests/cudaemu/README): CUDA graphs give the tokens direct launches
# give, greedy SSD (chain and tree) gives the tokens plain decoding gives,
# and each device problem the module reports is an error with exit status 1
# that says what is wrong: no device, no driver, a driver older than the
# runtime, a model that does not fit in device memory. Then the Qwen
# architectures on K-quants, through the GGUF loader: greedy SSD gives the
# tokens plain decoding gives on them too, and with a q8_0 K/V cache.
set -u
: "${top_builddir:=.}"
S="$top_builddir/skipper"
export SKIPPER_PLUGIN_PATH="$top_builddir/tests/cudaemu/.libs:$top_builddir/.libs"
unset SKIPPER_CUDAEMU_DEVICES SKIPPER_CUDAEMU_DRIVER SKIPPER_CUDAEMU_MEM_MIB SKIPPER_CUDA_GRAPHS
t=$(mktemp -d "${TMPDIR:-/tmp}/t-cudaemu-cli.XXXXXX") || exit 1
trap 'rm -rf "$t"' EXIT
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
fail() { n=$((n + 1)); echo "not ok $n - $1"; sed 's/^/#   /' "$t/err"; }
gen() {
	"$S" generate -m "$t/${M:-m}.gguf" -p "the quick brown fox" --set generate.max_tokens=24 \
		--set model.backend=cuda --stats "$@" >"$t/out" 2>"$t/err"
}
# exit status 1 and the message
refused() {
	rc=$1 what=$2 pattern=$3
	if [ "$rc" -eq 1 ] && grep -q "$pattern" "$t/err"; then ok "$what: $(grep -m1 "$pattern" "$t/err")"
	else fail "$what (exit $rc)"; fi
}

echo "1..15"
"$top_builddir/tests/gen-model" --out "$t/m.gguf" --layers 4 --embd 64 --ff 128 --heads 4 --kv-heads 2 \
	--vocab 300 --redundant 1,2 >/dev/null 2>&1 || { echo "Bail out! gen-model failed"; exit 1; }

gen
if [ $? -eq 0 ] && grep -q "^backend .*cudaemu" "$t/err"; then ok "generates on the CUDA backend module (cudaemu)"
else fail "generate on the CUDA backend module"; fi
cp "$t/out" "$t/ar"

SKIPPER_CUDA_GRAPHS=0 gen
if [ $? -eq 0 ] && cmp -s "$t/out" "$t/ar"; then ok "CUDA graph replays give the tokens of direct launches"
else fail "CUDA graphs off: other tokens"; fi

for tree in 1 3; do
	gen --set policy.name=fixed --set fixed.attn=1,2 --set fixed.mlp=2 --set fixed.draft_length=4 \
		--set fixed.tree=$tree
	drafted=$(sed -n "s/^drafted\/accepted *\([0-9]*\).*/\1/p" "$t/err")
	if cmp -s "$t/out" "$t/ar" && [ "${drafted:-0}" -gt 0 ]; then
		ok "greedy SSD, fixed mask, tree $tree: the tokens of plain decoding ($drafted drafted)"
	else fail "greedy SSD, fixed mask, tree $tree (drafted ${drafted:-?})"; fi
done

SKIPPER_CUDAEMU_DEVICES=0 gen
refused $? "no device" "backend cuda: no CUDA device found"
SKIPPER_CUDAEMU_DRIVER=0 gen
refused $? "no driver" "no NVIDIA driver: libcuda.so cannot be loaded"
SKIPPER_CUDAEMU_DRIVER=12020 gen
refused $? "driver older than the runtime" "NVIDIA driver (CUDA 12.2) is older than the CUDA runtime"
SKIPPER_CUDAEMU_MEM_MIB=40 gen
refused $? "model does not fit" "model needs [0-9.]* MiB + KV [0-9.]* MiB (n_ctx [0-9]*) + work [0-9.]* MiB, device .* has 40.0 MiB free"
gen --set model.kv_type=q8_0
refused $? "q8_0 cache on heads of 16" "cuda backend: a q8_0 K/V cache needs a head size that is a multiple of 32 (this model's is 16)"

# greedy SSD (fixed mask, tree 3) gives what $t/ar holds: ssd_same LABEL [--set ...]
ssd_same() {
	label=$1
	shift
	gen --set policy.name=fixed --set fixed.attn=1 --set fixed.mlp=1 --set fixed.draft_length=4 \
		--set fixed.tree=3 --set fixed.costs=false "$@"
	drafted=$(sed -n "s/^drafted\/accepted *\([0-9]*\).*/\1/p" "$t/err")
	if cmp -s "$t/out" "$t/ar" && [ "${drafted:-0}" -gt 0 ]; then
		ok "$label: greedy SSD (tree 3) gives the tokens of plain decoding ($drafted drafted)"
	else fail "$label: greedy SSD (drafted ${drafted:-?})"; fi
}

# 256 wide: the K-quants' super-blocks take whole rows
for am in qwen2:q4_k qwen3:q6_k; do
	M=${am%%:*}
	"$top_builddir/tests/gen-model" --out "$t/$M.gguf" --arch "$M" --dtype "${am#*:}" --layers 3 \
		--embd 256 --ff 256 --heads 4 --kv-heads 2 --vocab 300 --redundant 1 >/dev/null 2>&1 ||
		{ echo "Bail out! gen-model --arch $M failed"; exit 1; }
	gen
	if [ $? -eq 0 ] && grep -q "^backend .*cudaemu" "$t/err"; then ok "$M ${am#*:}: generates on the CUDA backend"
	else fail "$M ${am#*:} on the CUDA backend"; fi
	cp "$t/out" "$t/ar"
	ssd_same "$M ${am#*:}"
done

# a q8_0 K/V cache ([model] kv_type): SSD reproduces plain decoding with it
M=qwen2
gen --set model.kv_type=q8_0
if [ $? -eq 0 ] && grep -q "^K/V cache .*q8_0" "$t/err"; then ok "q8_0 K/V cache on the CUDA backend"
else fail "q8_0 K/V cache on the CUDA backend"; fi
cp "$t/out" "$t/ar"
ssd_same "q8_0 K/V cache" --set model.kv_type=q8_0
