#!/bin/sh
# Build with CUDA, run the whole test suite (the GPU tests run where there
# is a GPU) and the GPU benchmarks, on a fresh device machine: one command.
#   scripts/device-check.sh [STEP...]     STEP: stash build check bench
# Default: build check bench. Each step does what it needs of the earlier
# ones when they have not run on this machine (check builds first), so the
# steps can be split over calls, each under the device's 10-minute limit.
# Results go to $OUT (default ./device-out), at most these 6 files:
#   summary.md  steps, exit codes, test totals, the GPU tests' lines
#   env.txt     GPU, driver, compilers, libraries, Python packages found
#   build.log   configure + make;  check.log  make check (+ failing logs)
#   bench.md    the benchmark table;  bench.log  the benchmarks' output
# Offline machines: scripts/device-prep.sh, run beforehand where there is a
# network, leaves .device/ (generated build system, -dev packages) and the
# SmolLM2 model in two halves (.device-model1/, .device-model2/); carry
# them. `stash` keeps a carried half in /var/tmp/skipper-device for the
# next call on the same machine; once both halves are there they are
# joined, checked against .device/model.sha256 and put in the model cache.
# SKIPPER_MODEL=PATH names a SmolLM2 file directly; DEVICE_TESTS="t1 t2"
# limits `check` to those tests. See kernels/bench/README.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
cd "$src" || exit 1
out=${OUT:-$src/device-out}
b=$src/build-device
stash=${DEVICE_STASH:-/var/tmp/skipper-device}
deps=${DEVICE_DEPS_DIR:-/opt/skipper-deps}
jobs=$(nproc 2>/dev/null || echo 4)
step_limit=${DEVICE_STEP_TIMEOUT:-560}
mkdir -p "$out" "$stash"
summary=$out/summary.md
[ -f "$summary" ] || printf '# scripts/device-check.sh\n\n' >"$summary"
note() { echo "$*" | tee -a "$summary"; }

env_report() {
	{
		echo "== $(date -u) steps: $*"
		uname -a
		cat /etc/os-release 2>/dev/null | head -n 2
		nvidia-smi 2>&1 | head -n 15
		for t in nvcc gcc make autoreconf automake libtoolize pkg-config python3 dpkg apt-get; do
			printf '%-11s %s\n' "$t" "$(command -v $t || echo MISSING)"
		done
		nvcc --version 2>&1 | tail -n 2
		gcc --version 2>&1 | head -n 1
		for p in inih jansson libcurl libcrypto; do
			printf 'pkg-config %-9s %s\n' "$p" "$(pkg-config --modversion $p 2>/dev/null || echo MISSING)"
		done
		ls /usr/lib/x86_64-linux-gnu 2>/dev/null | grep -E '^lib(inih|jansson|curl|crypto)\.so' | tr '\n' ' '
		echo
		python3 -c 'import torch, transformers; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), "transformers", transformers.__version__)' 2>&1 | tail -n 1
		df -h /var/tmp "$src" 2>/dev/null | tail -n +2
		free -g 2>/dev/null | head -n 2
	} >>"$out/env.txt" 2>&1
}

# A GPU is there: the GPU tests must run, not skip.
have_gpu() { nvidia-smi -L 2>/dev/null | grep -q '^GPU'; }

do_stash() {
	for f in .device-model*/model.part*; do
		[ -f "$f" ] && cp "$f" "$stash/" && note "- stash: kept $f in $stash"
	done
	return 0
}

# SmolLM2: SKIPPER_MODEL, the cache, or the halves joined
find_model() {
	cache=${XDG_CACHE_HOME:-$HOME/.cache}/skipper/models/SmolLM2-135M-Instruct.Q4_1.gguf
	if [ -n "${SKIPPER_MODEL:-}" ] && [ -s "$SKIPPER_MODEL" ]; then
		export SKIPPER_TEST_MODEL="$SKIPPER_MODEL"
		return 0
	fi
	if [ ! -s "$cache" ]; then
		do_stash >/dev/null
		if [ -f "$stash/model.part00" ] && [ -f "$stash/model.part01" ] && [ -f .device/model.sha256 ]; then
			mkdir -p "$(dirname "$cache")"
			cat "$stash/model.part00" "$stash/model.part01" >"$cache.tmp"
			if [ "$(sha256sum <"$cache.tmp" | cut -d' ' -f1)" = "$(cat .device/model.sha256)" ]; then
				mv "$cache.tmp" "$cache"
				note "- model: SmolLM2 joined from its two halves"
			else
				rm -f "$cache.tmp"
				note "- model: the joined halves do not match .device/model.sha256"
			fi
		fi
	fi
	if [ -s "$cache" ]; then
		export SKIPPER_MODEL="$cache" SKIPPER_TEST_MODEL="$cache"
	else
		note "- model: no SmolLM2 here (SKIPPER_MODEL, or both halves from scripts/device-prep.sh): its tests and benchmark skip"
	fi
}

# Build deps missing from the image come from .device/debs, unpacked in
# $deps (not /, which they could break); configure gets the flags directly,
# so pkg-config itself is not needed.
dep_flags() {
	lib=$deps/usr/lib/x86_64-linux-gnu
	for f in .device/debs/*.deb; do
		[ -f "$f" ] && dpkg -x "$f" "$deps"
	done
	# never the -dev packages' static archives: -L$lib comes before -lcurl,
	# and libcurl.a there would shadow the image's libcurl.so
	rm -f "$lib"/*.a
	cfg_env=""
	pkg-config --exists inih 2>/dev/null ||
		cfg_env="$cfg_env INIH_CFLAGS=-I$deps/usr/include INIH_LIBS=-L$lib\ -linih"
	pkg-config --exists jansson 2>/dev/null ||
		cfg_env="$cfg_env JANSSON_CFLAGS=-I$deps/usr/include JANSSON_LIBS=-L$lib\ -ljansson"
	# libcurl and libcrypto: headers from the package, the image's own
	# library under the link name the -dev package would have given it;
	# where the image lacks one, the self-contained copy that the pycurl
	# wheel vendors (.device-curl/, its own deps found by their $ORIGIN)
	inc="-I$deps/usr/include/x86_64-linux-gnu\\ -I$deps/usr/include"
	wl=$deps/pycurl/pycurl.libs
	for l in "curl 4 CURL libcurl" "crypto 3 OPENSSL libcrypto >= 3.0"; do
		set -- $l
		name=$1 ver=$2 var=$3
		shift 3
		pkg-config --exists "$*" 2>/dev/null && continue
		so=$(ls /usr/lib/x86_64-linux-gnu/lib$name.so.$ver /usr/lib64/lib$name.so.$ver 2>/dev/null | head -n 1)
		extra=
		if [ -z "$so" ] && w=$(ls .device-curl/pycurl-*.whl 2>/dev/null | head -n 1) && [ -n "$w" ]; then
			[ -d "$wl" ] || python3 -m zipfile -e "$w" "$deps/pycurl" >/dev/null 2>&1
			so=$(ls "$wl"/lib$name-*.so.$ver* 2>/dev/null | head -n 1)
			extra="\\ -Wl,-rpath,$wl\\ -Wl,-rpath-link,$wl"
		fi
		[ -n "$so" ] && mkdir -p "$lib" && ln -sf "$so" "$lib/lib$name.so"
		cfg_env="$cfg_env ${var}_CFLAGS=$inc ${var}_LIBS=-L$lib\\ -l$name$extra"
	done
	echo "$cfg_env"
}

do_build() {
	if [ -x "$b/skipper" ] && [ -f "$b/config.status" ]; then
		make -C "$b" -j"$jobs" >>"$out/build.log" 2>&1
		return
	fi
	{
		if [ ! -f configure ]; then
			if [ -z "${DEVICE_USE_TARBALL:-}" ] && command -v autoreconf >/dev/null && command -v automake >/dev/null &&
				command -v libtoolize >/dev/null; then
				autoreconf -fi
			elif [ -f .device/autotools.tar.gz ]; then
				tar -xzf .device/autotools.tar.gz
				# the tree's copy has fresh times: make the generated files newer
				# than their sources so make never tries to run automake here
				touch aclocal.m4; sleep 1; touch configure; sleep 1
				touch Makefile.in build-config.h.in
			else
				echo "device-check: no configure, no autotools, no .device/autotools.tar.gz (scripts/device-prep.sh)"
				return 1
			fi
		fi
		cfg_env=$(dep_flags)
		echo "configure environment: $cfg_env"
		mkdir -p "$b"
		cd "$b" || return 1
		eval "env $cfg_env LDFLAGS=\"-Wl,-rpath,$deps/usr/lib/x86_64-linux-gnu\" \"$src/configure\" --with-cuda" &&
			make -j"$jobs"
		rc=$?
		cd "$src" || return 1
		return $rc
	} >>"$out/build.log" 2>&1
}

do_check() {
	[ -x "$b/skipper" ] || do_build || return 1
	find_model
	if have_gpu; then
		export SKIPPER_TEST_REQUIRE_CUDA=1
	else
		note "- check: nvidia-smi lists no GPU: the GPU tests will skip"
	fi
	# DEVICE_TESTS: only these tests (e.g. to rerun the GPU ones)
	timeout "$step_limit" make -C "$b" -j"$jobs" check ${DEVICE_TESTS:+TESTS="$DEVICE_TESTS"} >"$out/check.log" 2>&1
	rc=$?
	# the failing tests' own logs
	for r in $(grep -lE '^:test-result: (FAIL|ERROR)' "$b"/tests/*.trs "$b"/tests/*/*.trs 2>/dev/null); do
		printf '\n===== %s\n' "${r%.trs}.log" >>"$out/check.log"
		cat "${r%.trs}.log" >>"$out/check.log"
	done
	grep -E '^# (TOTAL|PASS|SKIP|XFAIL|FAIL|XPASS|ERROR):' "$out/check.log" | sed 's/^/    /' >>"$summary"
	grep -E '^(PASS|FAIL|SKIP|ERROR): tests/t-(cuda|engine-cuda|lossless-cuda)' "$out/check.log" |
		awk '{ k[$1 " " $2]++ } END { for (x in k) print "    " x ": " k[x] }' | sort >>"$summary"
	return $rc
}

do_bench() {
	[ -x "$b/skipper" ] || do_build || return 1
	find_model
	timeout "$step_limit" sh "$src/kernels/bench/run.sh" "$b" "$out"
}

[ $# -gt 0 ] || set -- build check bench
env_report "$@"
status=0
for s in "$@"; do
	t0=$(date +%s)
	case $s in
	stash) do_stash ;;
	build) do_build ;;
	check) do_check ;;
	bench) do_bench ;;
	*) echo "device-check: unknown step '$s' (stash build check bench)" >&2; exit 2 ;;
	esac
	rc=$?
	[ $rc = 0 ] || status=1
	note "- $s: exit $rc, $(($(date +%s) - t0)) s"
done
[ -f "$out/bench.md" ] && { echo; cat "$out/bench.md"; } >>"$summary"
cat "$summary"
exit $status
