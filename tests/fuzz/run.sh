#!/bin/sh
# make fuzz: every fuzz target built with clang's libFuzzer, ASan and UBSan,
# each run for FUZZ_SECONDS on its seeds (tests/fuzz/seeds/NAME/, read only)
# and a working corpus (tests/fuzz/libfuzzer/corpus/NAME/ in the build tree,
# kept between runs), then one line per target: executions, coverage,
# crashes. tests/fuzz/README says what to do with a crash.
#
# Called by `make fuzz` (tests/fuzz/local.am), which passes:
#   top_srcdir top_builddir          absolute paths
#   FUZZ_TARGETS                     names: tests/fuzz/fuzz-NAME.c
#   FUZZ_SECONDS                     per target (default 60)
#   FUZZ_CC                          a clang with libFuzzer (default clang)
#   FUZZ_CORE_SOURCES FUZZ_HUB_SOURCES   libskipper's and the hub client's sources
#   FUZZ_CPPFLAGS FUZZ_DEP_CFLAGS FUZZ_LIBS
# and from the environment: FUZZ_JOBS (parallel compiles, default: CPUs),
# FUZZ_MERGE=1 (afterwards, add the working-corpus inputs that reach new
# coverage to tests/fuzz/seeds/NAME/, to be reviewed and committed).
set -u
: "${top_srcdir:?}" "${top_builddir:?}" "${FUZZ_TARGETS:?}"
: "${FUZZ_SECONDS:=60}" "${FUZZ_CC:=clang}" "${FUZZ_CORE_SOURCES:=}" "${FUZZ_HUB_SOURCES:=}"
: "${FUZZ_CPPFLAGS:=}" "${FUZZ_DEP_CFLAGS:=}" "${FUZZ_LIBS:=}" "${FUZZ_MERGE:=0}"
: "${FUZZ_JOBS:=$(nproc 2>/dev/null || echo 2)}"
out="$top_builddir/tests/fuzz/libfuzzer"
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cflags="-g -O1 -std=gnu11 -pthread $san"
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

case "$FUZZ_SECONDS" in
'' | *[!0-9]*) echo "make fuzz: FUZZ_SECONDS=$FUZZ_SECONDS is not a number of seconds" >&2; exit 2 ;;
esac
for t in $FUZZ_TARGETS; do
	[ -f "$top_srcdir/tests/fuzz/fuzz-$t.c" ] || {
		echo "make fuzz: no target '$t' (no tests/fuzz/fuzz-$t.c)" >&2
		exit 2
	}
done
mkdir -p "$out/obj" "$out/bin" "$out/log" "$out/corpus" "$out/artifacts" || exit 1

# 1. A compiler that links libFuzzer targets, or say what to install.
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; return (int)(n & 0); }\n' \
	>"$out/probe.c"
# shellcheck disable=SC2086 # flags are word lists
if ! $FUZZ_CC $san -fsanitize=fuzzer "$out/probe.c" -o "$out/probe" >"$out/probe.log" 2>&1; then
	{
		echo "make fuzz: '$FUZZ_CC' cannot build a libFuzzer target:"
		sed -n '1,5s/^/    /p' "$out/probe.log"
		echo "libFuzzer comes with clang's runtime libraries. On Debian:"
		echo "    apt-get install clang libclang-rt-dev"
		echo "or name a clang that has it: make fuzz FUZZ_CC=clang-16"
	} >&2
	exit 1
fi
rm -f "$out/probe" "$out/probe.c" "$out/probe.log"

# 2. libskipper and the hub client for libFuzzer (coverage instrumented,
# sanitized), rebuilt when a source, a header or the flags changed.
flags="$FUZZ_CC $cflags -fsanitize=fuzzer-no-link $FUZZ_CPPFLAGS $FUZZ_DEP_CFLAGS"
stamp="$out/obj/stamp"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$flags $FUZZ_CORE_SOURCES $FUZZ_HUB_SOURCES" ] ||
	[ -n "$(find "$top_srcdir/core" "$top_srcdir/hub" "$top_builddir/build-config.h" -newer "$stamp" \
		\( -name '*.[ch]' \) 2>/dev/null | head -n 1)" ]; then
	echo "make fuzz: compiling libskipper and the hub client for libFuzzer ($FUZZ_CC, ASan + UBSan)"
	rm -f "$out"/obj/*.o "$out"/obj/*.a "$stamp"
	# one line per source: LIB SRC; hub and server sources see the GNU
	# extensions, as in the build (the server's: those fuzz targets name)
	# libskipper: its base and the subsystems that parse (the CPU backend
	# and the rest of the engine parse nothing, and use _Float16, which
	# Debian 12's clang 14 lacks; the engine's cost-cache reader stands alone)
	{
		for s in $FUZZ_CORE_SOURCES; do
			case $s in
			core/base/*.c | core/model/*.c | core/tokenizer/*.c | core/config/*.c | core/policy/*.c | \
				core/engine/costs_cache.c | core/engine/history.c | core/engine/lookup.c | \
				core/server/*.c) echo "core $s" ;;
			esac
		done
		for s in $FUZZ_HUB_SOURCES; do
			case $s in *.c) echo "hub $s" ;; esac
		done
	} >"$out/obj/sources"
	FUZZ_SRCDIR=$top_srcdir FUZZ_FLAGS=$flags
	export FUZZ_SRCDIR FUZZ_FLAGS
	# shellcheck disable=SC2016
	if ! xargs -P "$FUZZ_JOBS" -L 1 sh -c '
		lib=$1 src=$2 obj="$0/obj/$1-$(echo "$2" | tr / _ | sed "s/\.c\$//").o"
		extra=; case $2 in hub/* | core/server/*) extra=-D_GNU_SOURCE ;; esac
		cd "$FUZZ_SRCDIR" && $FUZZ_FLAGS $extra -w -c "$src" -o "$obj" || { echo "make fuzz: cannot compile $src" >&2; exit 255; }
	' "$out" <"$out/obj/sources" 2>"$out/log/compile.log" >&2; then
		cat "$out/log/compile.log" >&2
		exit 1
	fi
	ar rcs "$out/obj/libcore.a" "$out"/obj/core-*.o &&
		{ [ -z "$FUZZ_HUB_SOURCES" ] || ar rcs "$out/obj/libhub.a" "$out"/obj/hub-*.o; } || exit 1
	echo "$flags $FUZZ_CORE_SOURCES $FUZZ_HUB_SOURCES" >"$stamp"
fi

# 3. Each target, linked and run.
libs="$out/obj/libcore.a"
[ -f "$out/obj/libhub.a" ] && libs="$out/obj/libhub.a $libs"
status=0
summary=""
start=$(date +%s)
for t in $FUZZ_TARGETS; do
	bin="$out/bin/fuzz-$t"
	log="$out/log/$t.log"
	seeds="$top_srcdir/tests/fuzz/seeds/$t"
	corpus="$out/corpus/$t"
	arts="$out/artifacts/$t"
	mkdir -p "$corpus" "$arts"
	# shellcheck disable=SC2086
	if ! (cd "$top_srcdir" && $flags -fsanitize=fuzzer -DSKIPPER_LIBFUZZER "tests/fuzz/fuzz-$t.c" \
		$libs $FUZZ_LIBS -o "$bin") >"$log" 2>&1; then
		cat "$log" >&2
		summary="$summary$(printf '%-12s cannot build (%s)' "$t" "$log")
"
		status=1
		continue
	fi
	[ -d "$seeds" ] || { echo "make fuzz: no seeds for $t in $seeds" >&2; status=1; continue; }
	ls "$arts" >"$out/artifacts/$t.before" 2>/dev/null
	echo "make fuzz: $t for ${FUZZ_SECONDS}s (log: $log)"
	t0=$(date +%s)
	"$bin" -max_total_time="$FUZZ_SECONDS" -print_final_stats=1 -timeout=30 -rss_limit_mb=2048 \
		-artifact_prefix="$arts/" "$corpus" "$seeds" >>"$log" 2>&1
	rc=$?
	secs=$(($(date +%s) - t0))
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
	last=$(grep -E '^#[0-9]+.* cov: ' "$log" | tail -n 1)
	cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
	corp=$(echo "$last" | sed -n 's/.* corp: \([0-9]*\).*/\1/p')
	[ -n "$execs" ] || execs=$(echo "$last" | sed -n 's/^#\([0-9]*\).*/\1/p')
	# shellcheck disable=SC2010 # libFuzzer names artifacts KIND-SHA1
	new=$(ls "$arts" 2>/dev/null | grep -v -x -F -f "$out/artifacts/$t.before")
	crashes=$(printf '%s' "$new" | grep -c .)
	line=$(printf '%-12s %10s executions (%s/s) in %ss, coverage %s edges %s features, corpus %s, crashes %s' \
		"$t" "${execs:-?}" "${rate:-?}" "$secs" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$crashes")
	if [ "$rc" != 0 ] || [ "$crashes" != 0 ]; then
		status=1
		for a in $new; do line="$line
             $arts/$a"; done
		[ -n "$new" ] || line="$line (libFuzzer exit $rc, see $log)"
		grep -m 1 -E 'ERROR: |runtime error|==[0-9]+==' "$log" | sed 's/^/             /' >&2
	fi
	summary="$summary$line
"
	if [ "$FUZZ_MERGE" = 1 ] && [ "$crashes" = 0 ]; then
		"$bin" -merge=1 "$seeds" "$corpus" >>"$log" 2>&1 &&
			echo "make fuzz: $t: new coverage merged into $seeds (review, then git add)"
	fi
done
echo
echo "make fuzz: ${FUZZ_SECONDS}s per target, $(($(date +%s) - start))s in all, ASan + UBSan ($FUZZ_CC)"
printf '%s' "$summary"
exit $status
