#!/bin/sh
# One-command set-up for a fresh Debian machine (run as root, from the source
# tree): install the build and test dependencies, fetch the default model,
# build, then either generate text with self-speculative decoding
# (`quickstart.sh generate`, the default) or run the test suite
# (`quickstart.sh check`). Safe to run again: every step is idempotent.
set -eu
cd "$(dirname "$0")/.."
what="${1:-generate}"
case "$what" in
generate|check) ;;
*) echo "usage: $0 [generate|check]" >&2; exit 2 ;;
esac

jobs=$(nproc 2>/dev/null || echo 2)
run() { echo "+ $*" >&2; "$@"; }

# Debian packages: toolchain, libraries found by pkg-config (libmicrohttpd
# for skipper serve), nginx for the hub and serve tests, python3 + pip to
# fetch the default model from PyPI; for the tests, curl, numpy, yaml and
# venv (scripts/test-python.sh adds llama.cpp's gguf package, openai and
# prometheus_client), and clang with its runtime libraries, which hold
# libFuzzer (`make fuzz`; on Debian 12 libclang-rt-dev is libclang-rt-14-dev,
# clang 14's).
pkgs="autoconf automake libtool pkg-config make gcc g++ libc6-dev libinih-dev libjansson-dev
      libcurl4-openssl-dev libssl-dev libmicrohttpd-dev nginx-light python3 python3-pip ca-certificates"
[ "$what" = check ] && pkgs="$pkgs curl python3-numpy python3-yaml python3-venv clang libclang-rt-dev"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "quickstart: missing Debian packages:$missing (run as root, or apt-get install them)" >&2
		exit 1
	fi
	run apt-get update -qq
	DEBIAN_FRONTEND=noninteractive run apt-get install -y -qq --no-install-recommends $missing
fi

model=$(run ./scripts/fetch-model.sh)
if [ "$what" = check ]; then
	# the tests also check parity with llama.cpp on a qwen2 / K-quant model
	run ./scripts/fetch-model.sh qwen2.5-coder-0.5b >/dev/null
fi

[ -x configure ] || run autoreconf -fi
[ -f Makefile ] || run ./configure
run make -j"$jobs"

if [ "$what" = check ]; then
	python=$(run ./scripts/test-python.sh)
	status=0
	run make -j"$jobs" check PYTHON3="$python" || status=$?
	# One closing line any CI can read, after what was skipped and why.
	fail=$(cat tests/*.trs tests/*/*.trs 2>/dev/null | grep -c '^:test-result: \(FAIL\|ERROR\|XPASS\)' || true)
	skip=$(cat tests/*.trs tests/*/*.trs 2>/dev/null | grep -c '^:test-result: SKIP' || true)
	pass=$(cat tests/*.trs tests/*/*.trs 2>/dev/null | grep -c '^:test-result: PASS' || true)
	[ "$status" = 0 ] || { [ -f test-suite.log ] && cat test-suite.log >&2; }
	cat tests/*.log tests/*/*.log 2>/dev/null | sed -n 's/^SKIP: /skipped: /p'
	echo "$pass passed, $fail failed, $skip skipped"
	# Every fuzz target built with libFuzzer and run briefly (FUZZ_SECONDS
	# each, 5 by default: about two minutes in all on 2 cores with the
	# build), so that `make fuzz` cannot break unseen again; a crash fails
	# the check (tests/fuzz/README says what to do with it).
	run make fuzz FUZZ_SECONDS="${FUZZ_SECONDS:-5}" || status=1
	exit "$status"
fi

# Not installed: the policy plugins are found in the build tree.
export SKIPPER_PLUGIN_PATH="$PWD/.libs"
run ./skipper generate -m "$model" -c conf/fixed.ini --stats \
	-p "Explain in three sentences why the sky is blue."
