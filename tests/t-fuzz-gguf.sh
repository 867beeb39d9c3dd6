#!/bin/sh
# Run the GGUF fuzz target (built without libFuzzer) over the committed seeds
# and over truncations and byte flips of a freshly generated model.
: "${top_builddir:=.}" "${top_srcdir:=.}"
fuzz="$top_builddir/tests/fuzz-gguf"
gen="$top_builddir/tests/gen-model"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/t-fuzz-gguf.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
echo 1..3

"$fuzz" "$top_srcdir"/tests/data/fuzz-gguf/* >"$tmp/log" 2>&1 \
	&& echo "ok 1 - committed seeds" || { echo "not ok 1 - committed seeds"; sed 's/^/# /' "$tmp/log"; }

"$gen" --out "$tmp/m.gguf" --dtype q4_1 --layers 1 --embd 32 --ff 32 --heads 2 --kv-heads 1 || exit 1
size=$(wc -c <"$tmp/m.gguf")
i=0
for n in 0 3 4 8 16 23 24 40 64 100 200 500 1000 2000 4000 8000 $((size / 2)) $((size - 33)) $((size - 1)); do
	[ "$n" -lt "$size" ] || continue
	head -c "$n" "$tmp/m.gguf" >"$tmp/cut.$n"
	i=$((i + 1))
done
"$fuzz" "$tmp"/cut.* >"$tmp/log" 2>&1 \
	&& echo "ok 2 - $i truncations" || { echo "not ok 2 - truncations"; sed 's/^/# /' "$tmp/log"; }

# flip single bytes in the header, metadata and tensor infos
i=0
for off in 4 8 12 16 20 24 28 33 40 60 90 130 200 300 600 1000 1500 2200 3000 4100 5000; do
	[ "$off" -lt "$size" ] || continue
	cp "$tmp/m.gguf" "$tmp/flip.$off"
	printf '\377' | dd of="$tmp/flip.$off" bs=1 seek="$off" conv=notrunc 2>/dev/null
	i=$((i + 1))
done
"$fuzz" "$tmp"/flip.* >"$tmp/log" 2>&1 \
	&& echo "ok 3 - $i byte flips" || { echo "not ok 3 - byte flips"; sed 's/^/# /' "$tmp/log"; }
