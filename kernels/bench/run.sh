#!/bin/sh
# GPU benchmarks: commands, not timed tests (kernels/bench/README).
#   kernels/bench/run.sh BUILDDIR OUTDIR
# writes OUTDIR/bench.md (the Markdown table) and OUTDIR/bench.log (every
# command's output). scripts/device-check.sh runs it on a device machine.
#  1. device-to-device copy bandwidth B (kernels/bench/membw)
#  2. a random-weight BF16 model of the Llama-3-8B shape, written by
#     tests/gen-model (16 GB, once, into $SKIPPER_BENCH_DIR)
#  3. its decode tokens/s on the CUDA backend against the roofline
#     B / (bytes of weights one token reads); target >= 80 %
#  4. verify-pass latency for 1..32 rows relative to 1 row; target <= 1.2x at 8
#  5. PyTorch + transformers eager on the same shape (torch-peer.py), if there
#  6. SmolLM2-135M: autoregressive vs `fixed` SSD (conf/fixed.ini) tokens/s
#     with `skipper bench` over Spec-Bench prompts, if the model is there
#  7. a random-weight Q4_K model of the Qwen2.5-Coder-1.5B shape (qwen2:
#     biases, NeoX RoPE, tied head; ~1 GB, once): decode tokens/s against
#     the roofline of the BF16 matrices the device holds, and the verify curve
# Environment: SKIPPER_BENCH_DIR (default /var/tmp/skipper-bench),
# SKIPPER_MODEL (SmolLM2 GGUF; default: the model cache), BENCH_PROMPT and
# BENCH_TOKENS (128 each), BENCH_LAYERS (32; fewer for a quick try),
# BENCH_QWEN_LAYERS (28), BENCH_DATA (default tests/data/specbench-20.jsonl), BENCH_REPS (20 passes
# per verify size), BENCH_BACKEND (cuda; cpu only to try the script, and
# then PyTorch runs on the CPU too),
# PYTHON (python3).
set -u
if [ $# -ne 2 ]; then
	echo "usage: kernels/bench/run.sh BUILDDIR OUTDIR" >&2
	exit 2
fi
b=$(cd "$1" && pwd) out=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
md=$out/bench.md log=$out/bench.log
dir=${SKIPPER_BENCH_DIR:-/var/tmp/skipper-bench}
np=${BENCH_PROMPT:-128} nt=${BENCH_TOKENS:-128} L=${BENCH_LAYERS:-32} reps=${BENCH_REPS:-20}
be=${BENCH_BACKEND:-cuda}
E=4096 F=14336 H=32 KV=8 V=128256
export SKIPPER_PLUGIN_PATH="$b/.libs"
: >"$log"

say() { echo "$*" | tee -a "$log" >&2; }
# key=value lines of a command's output: val KEY FILE
val() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" "$2" | head -n 1; }
row() { echo "| $1 | $2 | $3 |" >>"$md"; }
# the verify curve's rows from bench-verify's output: verify_rows FILE LABEL_SUFFIX N...
verify_rows() {
	f=$1 what=$2
	shift 2
	for n in "$@"; do
		l=$(grep "^verify_n=$n " "$f")
		[ -n "$l" ] || continue
		ms=$(echo "$l" | sed 's/.*verify_ms=\([^ ]*\).*/\1/')
		ratio=$(echo "$l" | sed 's/.*verify_ratio=\([^ ]*\).*/\1/')
		note="median of $reps passes"
		[ "$n" = 8 ] && note="$note; target <= 1.2x"
		row "verify pass, $n tokens$what" "$ms ms = ${ratio}x one token" "$note"
	done
}

{
	echo "# skipper GPU benchmarks"
	echo
	gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), ${gpu:-no GPU (nvidia-smi lists none)}, backend $be"
	echo
	echo "Model: random weights, Llama-3-8B shape ($L layers, n_embd $E, n_ff $F, $H heads, $KV KV heads, vocab $V), BF16; prompt $np tokens, $nt new tokens."
	echo
	echo "| measure | value | note |"
	echo "|---|---:|---|"
} >"$md"

# 1. bandwidth
bw=
if [ -x "$b/kernels/bench/membw" ]; then
	say "== membw"
	"$b/kernels/bench/membw" 2 20 >"$out/.membw" 2>&1
	cat "$out/.membw" >>"$log"
	bw=$(val membw_bytes_per_s "$out/.membw")
fi
if [ -n "$bw" ]; then
	row "device-to-device copy bandwidth B" "$(awk -v x="$bw" 'BEGIN { printf "%.0f GB/s", x / 1e9 }')" "bytes read + written per second, cudaMemcpy of 2 GiB, CUDA events"
else
	row "device-to-device copy bandwidth B" "n/a" "membw did not run (no CUDA build?), see bench.log"
fi

# 2. the model
model=$dir/llama3-8b-shape-bf16-L$L.gguf
if [ ! -s "$model" ]; then
	mkdir -p "$dir"
	need=$(awk -v L="$L" 'BEGIN { printf "%d", (L * 0.44 + 2.2) * 1024 * 1024 }') # KiB, with slack
	have=$(df -Pk "$dir" | awk 'NR == 2 { print $4 }')
	if [ "$have" -lt "$need" ]; then
		say "not enough disk in $dir for the model: $have KiB free, about $need KiB needed"
	else
		say "== gen-model ($L layers) -> $model"
		t0=$(date +%s)
		"$b/tests/gen-model" --out "$model.part" --dtype bf16 --layers "$L" --embd $E --ff $F --heads $H \
			--kv-heads $KV --vocab $V --ctx 8192 --theta 500000 --name llama3-8b-shape --seed 1 >>"$log" 2>&1 &&
			mv "$model.part" "$model"
		say "gen-model: $(($(date +%s) - t0)) s"
	fi
fi

# 3 + 4. decode and verify on the CUDA backend
# bytes one decode step reads: every layer's matrices and norms, the final
# norm, the LM head, and one embedding row (BF16 = 2 bytes, norms F32)
wbytes=$(awk -v L="$L" -v E=$E -v F=$F -v H=$H -v KV=$KV -v V=$V 'BEGIN {
	hd = E / H; layer = 2 * (2 * E * E + 2 * E * KV * hd + 3 * E * F) + 4 * 2 * E
	printf "%.0f", L * layer + 4 * E + 2 * V * E + 2 * E }')
ours=
if [ -s "$model" ]; then
	say "== bench-verify ($be)"
	"$b/tests/bench-verify" "$model" --backend "$be" --prompt "$np" --tokens "$nt" --sizes 1,2,4,8,16,32 --reps "$reps" \
		>"$out/.verify" 2>&1
	cat "$out/.verify" >>"$log"
	ours=$(val decode_tok_per_s "$out/.verify")
fi
if [ -n "$ours" ]; then
	row "skipper decode ($be)" "$ours tok/s" "greedy, one token per step, KV cache; first 4 steps untimed"
	if [ -n "$bw" ]; then
		roof=$(awk -v B="$bw" -v W="$wbytes" 'BEGIN { printf "%.2f", B / W }')
		row "HBM roofline B / weight bytes" "$roof tok/s" "$(awk -v W="$wbytes" 'BEGIN { printf "%.2f GB", W / 1e9 }') read per token"
		row "**decode / roofline**" "**$(awk -v a="$ours" -v r="$roof" 'BEGIN { printf "%.1f %%", 100 * a / r }')**" "target >= 80 %"
	fi
	verify_rows "$out/.verify" "" 1 2 4 8 16 32
else
	row "skipper decode ($be)" "n/a" "no model or the CUDA backend failed, see bench.log"
fi

# 5. the PyTorch peer
py=${PYTHON:-python3}
say "== torch-peer"
# on the device PyTorch uses the GPU; trying the script with the CPU
# backend, the CPU too
tdev=cuda
[ "$be" = cpu ] && tdev=cpu
"$py" "$src/kernels/bench/torch-peer.py" --prompt "$np" --tokens "$nt" --layers "$L" --device $tdev >"$out/.torch" 2>&1
rc=$?
cat "$out/.torch" >>"$log"
theirs=$(val torch_decode_tok_per_s "$out/.torch")
if [ -n "$theirs" ]; then
	row "PyTorch + transformers eager decode" "$theirs tok/s" "$(grep -o 'torch=[^ ]* transformers=[^ ]*' "$out/.torch"), BF16, greedy generate with KV cache"
	[ -n "$ours" ] && row "**skipper / PyTorch eager**" "**$(awk -v a="$ours" -v t="$theirs" 'BEGIN { printf "%.2fx", a / t }')**" "same shape, prompt and new tokens"
else
	row "PyTorch + transformers eager decode" "n/a" "torch-peer exit $rc: $(tail -n 1 "$out/.torch")"
fi

# 6. SmolLM2 AR vs fixed SSD
smol=${SKIPPER_MODEL:-${XDG_CACHE_HOME:-$HOME/.cache}/skipper/models/SmolLM2-135M-Instruct.Q4_1.gguf}
data=${BENCH_DATA:-$src/tests/data/specbench-20.jsonl}
if [ -s "$smol" ]; then
	say "== skipper bench SmolLM2 ($be)"
	"$b/skipper" bench --data "$data" --max-tokens "$nt" --warmup 1 --policies "none,$src/conf/fixed.ini" \
		--set model.path="$smol" --set model.backend="$be" --out "$out/.smol" >"$out/.smoltab" 2>>"$log"
	rc=$?
	cat "$out/.smoltab" >>"$log"
	for p in none fixed; do
		# | **all** | policy | prompts | tokens | tokens/s | speedup | M | ...
		r=$(grep "^| \*\*all\*\* | $p |" "$out/.smoltab" | awk -F'|' '{ gsub(/ /, ""); print $6 " tok/s, " $7 ", M " $8 " (" $4 " prompts)" }')
		row "SmolLM2-135M $p ($be)" "${r:-n/a (bench exit $rc)}" "$(basename "$data"), $nt tokens, conf/fixed.ini"
	done
else
	row "SmolLM2-135M none / fixed ($be)" "n/a" "model not found: $smol"
fi
# 7. the Qwen2.5-Coder-1.5B shape, as GGUF files of it come (Q4_K
# matrices; the real file mixes in Q6_K), dequantised to BF16 on upload
QL=${BENCH_QWEN_LAYERS:-28} QE=1536 QF=8960 QH=12 QKV=2 QV=151936
qwen=$dir/qwen2.5-1.5b-shape-q4_k-L$QL.gguf
if [ ! -s "$qwen" ]; then
	mkdir -p "$dir"
	say "== gen-model (Qwen2.5-1.5B shape, $QL layers) -> $qwen"
	"$b/tests/gen-model" --out "$qwen.part" --arch qwen2 --dtype q4_k --layers "$QL" --embd $QE --ff $QF \
		--heads $QH --kv-heads $QKV --vocab $QV --ctx 32768 --theta 1000000 --tied --name qwen2.5-1.5b-shape \
		--seed 1 >>"$log" 2>&1 && mv "$qwen.part" "$qwen"
fi
qours=
if [ -s "$qwen" ]; then
	say "== bench-verify Qwen shape ($be)"
	"$b/tests/bench-verify" "$qwen" --backend "$be" --prompt "$np" --tokens "$nt" --sizes 1,2,4,8,16 --reps "$reps" \
		>"$out/.verify" 2>&1
	cat "$out/.verify" >>"$log"
	qours=$(val decode_tok_per_s "$out/.verify")
fi
if [ -n "$qours" ]; then
	# BF16 matrices (the tied head read once), F32 norms and biases
	qbytes=$(awk -v L="$QL" -v E=$QE -v F=$QF -v H=$QH -v KV=$QKV -v V=$QV 'BEGIN {
		hd = E / H; layer = 2 * (2 * E * E + 2 * E * KV * hd + 3 * E * F) + 4 * (2 * E + E + 2 * KV * hd)
		printf "%.0f", L * layer + 4 * E + 2 * V * E + 2 * E }')
	note="Qwen2.5-Coder-1.5B shape, random Q4_K weights ($QL layers), BF16 on the device"
	row "skipper decode, Qwen 1.5B shape ($be)" "$qours tok/s" "$note"
	if [ -n "$bw" ]; then
		qroof=$(awk -v B="$bw" -v W="$qbytes" 'BEGIN { printf "%.2f", B / W }')
		row "**decode / roofline, Qwen 1.5B shape**" "**$(awk -v a="$qours" -v r="$qroof" 'BEGIN { printf "%.1f %%", 100 * a / r }')**" "roofline $qroof tok/s, $(awk -v W="$qbytes" 'BEGIN { printf "%.2f GB", W / 1e9 }') a token; target >= 70 %"
	fi
	verify_rows "$out/.verify" ", Qwen 1.5B shape" 2 4 8 16
else
	row "skipper decode, Qwen 1.5B shape ($be)" "n/a" "no model or the backend failed, see bench.log"
fi
rm -f "$out/.membw" "$out/.verify" "$out/.torch" "$out/.smoltab" "$out"/.smol.*
cat "$md"
