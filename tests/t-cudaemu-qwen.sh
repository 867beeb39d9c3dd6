#!/bin/sh
# A real benchmark model on the CUDA backend's own code, run on the CPU by
# cudaemu (tests/cudaemu/README): Qwen2.5-Coder-0.5B Q4_K_M (qwen2: biases,
# NeoX RoPE; Q4_K, Q5_0, Q6_K and Q8_0 tensors) read from its GGUF file,
# dequantised on upload, greedy tokens equal to the CPU backend's. Skips when
# the model is not cached (scripts/fetch-model.sh qwen2.5-coder-0.5b). The
# CUDA backend computes with BF16 weights and the CPU with 8-bit activations,
# so two tokens within rounding of each other could legitimately differ; on
# this prompt they do not (the first 8 tokens, measured), and a wrong bias,
# RoPE or dequantisation changes them at once.
set -u
: "${top_builddir:=.}"
cache=${SKIPPER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/skipper}/models
m=$cache/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
[ -f "$m" ] || { echo "1..0 # SKIP Qwen2.5-Coder-0.5B not cached (scripts/fetch-model.sh qwen2.5-coder-0.5b)"; exit 0; }
export SKIPPER_PLUGIN_PATH="$top_builddir/tests/cudaemu/.libs:$top_builddir/.libs" SKIPPER_CUDAEMU_MEM_MIB=4096
unset SKIPPER_CUDAEMU_DEVICES SKIPPER_CUDAEMU_DRIVER SKIPPER_CUDA_GRAPHS
t=$(mktemp -d "${TMPDIR:-/tmp}/t-cudaemu-qwen.XXXXXX") || exit 1
trap 'rm -rf "$t"' EXIT
gen() {
	"$top_builddir/skipper" generate -m "$m" -p "def fibonacci(n):" --set generate.chat_template=none \
		--set generate.max_tokens=8 --set model.ctx=64 --set policy.name=none --set model.backend="$1" \
		--stats >"$t/$1" 2>"$t/err.$1"
}
echo "1..2"
if gen cuda && grep -q "^backend .*cudaemu" "$t/err.cuda"; then
	echo "ok 1 - Qwen2.5-Coder-0.5B generates on the CUDA backend module (cudaemu)"
else
	echo "not ok 1 - Qwen2.5-Coder-0.5B on the CUDA backend"
	sed 's/^/#   /' "$t/err.cuda"
fi
gen cpu
if [ -s "$t/cuda" ] && cmp -s "$t/cuda" "$t/cpu"; then
	echo "ok 2 - greedy tokens equal the CPU backend's: $(tr '\n' ' ' <"$t/cuda")"
else
	echo "not ok 2 - greedy tokens differ from the CPU backend's"
	sed 's/^/#   cuda: /' "$t/cuda"
	sed 's/^/#   cpu:  /' "$t/cpu"
fi
