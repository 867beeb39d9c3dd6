#!/bin/sh
# Run the GGUF fuzz target (built without libFuzzer) over the committed seeds
# and over truncations and byte flips of freshly generated models: a llama
# Q4_1, a qwen2 Q4_K and a qwen3 Q6_K one.
: "${top_builddir:=.}" "${top_srcdir:=.}"
fuzz="$top_builddir/tests/fuzz/fuzz-gguf"
gen="$top_builddir/tests/gen-model"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/t-fuzz-gguf.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
echo 1..7

"$fuzz" "$top_srcdir"/tests/fuzz/seeds/gguf/* >"$tmp/log" 2>&1 \
	&& echo "ok 1 - committed seeds" || { echo "not ok 1 - committed seeds"; sed 's/^/# /' "$tmp/log"; }

t=1
for model in "llama q4_1 --embd 32 --ff 32 --heads 2 --kv-heads 1" \
	"qwen2 q4_k --embd 256 --ff 256 --heads 2 --kv-heads 1" \
	"qwen3 q6_k --embd 256 --ff 256 --heads 2 --kv-heads 1 --head-dim 128"; do
	set -- $model
	arch=$1 dtype=$2
	shift 2
	rm -f "$tmp"/cut.* "$tmp"/flip.*
	"$gen" --out "$tmp/m.gguf" --arch "$arch" --dtype "$dtype" --layers 1 "$@" || exit 1
	size=$(wc -c <"$tmp/m.gguf")
	i=0
	for n in 0 3 4 8 16 23 24 40 64 100 200 500 1000 2000 4000 8000 $((size / 2)) $((size - 33)) $((size - 1)); do
		[ "$n" -lt "$size" ] || continue
		head -c "$n" "$tmp/m.gguf" >"$tmp/cut.$n"
		i=$((i + 1))
	done
	t=$((t + 1))
	"$fuzz" "$tmp"/cut.* >"$tmp/log" 2>&1 \
		&& echo "ok $t - $arch $dtype: $i truncations" || { echo "not ok $t - $arch $dtype: truncations"; sed 's/^/# /' "$tmp/log"; }

	# flip single bytes in the header, metadata, tensor infos and (last
	# offsets) the first blocks of tensor data, scales included
	i=0
	for off in 4 8 12 16 20 24 28 33 40 60 90 130 200 300 600 1000 1500 2200 3000 4100 5000 \
		$((size - 4000)) $((size - 3000)) $((size - 2000)) $((size - 1000)); do
		[ "$off" -lt "$size" ] && [ "$off" -gt 0 ] || continue
		cp "$tmp/m.gguf" "$tmp/flip.$off"
		printf '\377' | dd of="$tmp/flip.$off" bs=1 seek="$off" conv=notrunc 2>/dev/null
		i=$((i + 1))
	done
	t=$((t + 1))
	"$fuzz" "$tmp"/flip.* >"$tmp/log" 2>&1 \
		&& echo "ok $t - $arch $dtype: $i byte flips" || { echo "not ok $t - $arch $dtype: byte flips"; sed 's/^/# /' "$tmp/log"; }
done
