#!/bin/sh
# The cost curve is cached per machine, and "machine" is more than the
# model name /proc/cpuinfo gives: virtual machines call a Zen 3, 4 and 5
# alike "AMD EPYC", with curves apart by half. A run on a processor of
# another family, or with other flags, measures its own curve; the first
# processor's curve is then still used for it. Other kernels on the same
# processor (SKIPPER_CPU_ISA) measure their own; a setting that chooses the
# same kernels does not. The other processor is a
# copy of /proc/cpuinfo mounted over it in a private mount namespace (skipped
# where unshare cannot make one). A generated model.
set -u
sk="$top_builddir/skipper"
t=$(mktemp -d "${TMPDIR:-/tmp}/t-costs-machine.XXXXXX") || exit 1
trap 'rm -rf "$t"' EXIT

if ! grep -q '^flags' /proc/cpuinfo 2>/dev/null || ! unshare -m sh -c \
	"mount --bind /proc/cpuinfo /proc/cpuinfo" 2>/dev/null; then
	echo "1..0 # SKIP no x86 /proc/cpuinfo, or no private mount namespace (unshare -m, as root)"
	exit 0
fi
echo "1..7"

"$top_builddir/tests/gen-model" --out "$t/tiny.gguf" --layers 2 --embd 64 --ff 128 --vocab 256 --ctx 256 \
	>/dev/null || { echo "Bail out! gen-model failed"; exit 1; }
export SKIPPER_CACHE_DIR="$t/cache"
unset SKIPPER_DATA_PATH XDG_CACHE_HOME SKIPPER_CPU_ISA SKIPPER_CPU_HUGEPAGES

# run [CPUINFO]: generate with lookup (which needs the curve) with CPUINFO
# (default: the real one) mounted over /proc/cpuinfo
run() {
	unshare -m sh -c 'mount --bind "$1" /proc/cpuinfo && shift && exec "$@"' sh "${1:-/proc/cpuinfo}" \
		"$sk" generate -m "$t/tiny.gguf" -t 1 --set model.backend=cpu --policy lookup -n 4 -p "a b a b a b"
}
curves() { ls "$t/cache/costs" 2>/dev/null | grep -c '\.costs$'; }

# ok N DESCRIPTION CONDITION...
ok() {
	n=$1 what=$2
	shift 2
	if "$@"; then echo "ok $n - $what"; else sed 's/^/# /' "$t/err"; echo "not ok $n - $what"; fi
}

run >"$t/out" 2>"$t/err"
ok 1 "a first run measures and caches one curve" [ "$?" = 0 -a "$(curves)" = 1 ]

# the same processor one family on: only the model name is the same
awk -F: 'BEGIN { OFS = ":" } /^cpu family/ { $2 = " " ($2 + 1) } { print }' /proc/cpuinfo >"$t/family"
run "$t/family" >"$t/out" 2>"$t/err"
ok 2 "a processor of another family measures its own curve" [ "$?" = 0 -a "$(curves)" = 2 ]

# the same processor without one of its flags (AVX-512 off in a guest, say)
awk '/^flags/ { sub(/ [a-z0-9_]+$/, "") } { print }' /proc/cpuinfo >"$t/flags"
run "$t/flags" >"$t/out" 2>"$t/err"
ok 3 "a processor with other flags measures its own curve" [ "$?" = 0 -a "$(curves)" = 3 ]

run >"$t/out" 2>"$t/err"
ok 4 "the first processor finds its curve again" [ "$?" = 0 -a "$(curves)" = 3 ]
run "$t/family" >"$t/out" 2>"$t/err"
ok 5 "and so does the second" [ "$?" = 0 -a "$(curves)" = 3 ]

# the backend's identity holds the kernels it chose, not the variable asked
SKIPPER_CPU_ISA=generic run >"$t/out" 2>"$t/err"
ok 6 "other kernels (SKIPPER_CPU_ISA=generic) measure their own curve" [ "$?" = 0 -a "$(curves)" = 4 ]
SKIPPER_CPU_ISA=avx512 run >"$t/out" 2>"$t/err"
ok 7 "SKIPPER_CPU_ISA=avx512 (the top: the kernels chosen without it) finds the first curve" [ "$?" = 0 -a "$(curves)" = 4 ]
