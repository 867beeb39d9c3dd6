#!/bin/sh
# Build llama.cpp natively, the peer of scripts/bench-peers.py: the source
# that the llama-cpp-python 0.3.36 sdist vendors (the version the tests'
# reference data comes from), targets llama-bench llama-completion
# llama-lookup llama-server llama-speculative llama-tokenize. Prints the
# directory of the binaries (give it to bench-peers.py --llama-bin, or set
# LLAMA_BIN).
#   scripts/build-llamacpp.sh [--sdist FILE] [--jobs N] [--configure-only] [DIR]
# `--help` tells more. Long (about half an hour on two cores).
set -eu

version=0.3.36
me=build-llamacpp
targets="llama-bench llama-completion llama-lookup llama-server llama-speculative llama-tokenize"

usage() {
	cat <<EOF
usage: scripts/build-llamacpp.sh [options] [DIR]
Download the llama-cpp-python $version sdist (pip download --no-binary :all:),
unpack it into DIR/llama_cpp_python-$version and build its vendored llama.cpp
in vendor/llama.cpp/build, natively, with static libraries (cmake
-DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DCMAKE_BUILD_TYPE=Release
-DBUILD_SHARED_LIBS=OFF), targets:
$targets.
Prints the directory of the binaries. Nothing is left behind on failure; a
finished build is not redone.
  DIR                   where to build (default
                        \${XDG_CACHE_HOME:-~/.cache}/skipper/llama.cpp)
  --sdist FILE          use this llama_cpp_python-$version.tar.gz instead of
                        downloading it (also: env LLAMA_CPP_SDIST)
  --jobs N              parallel compile jobs (default: nproc)
  --configure-only      run the cmake configure step in a temporary
                        directory, print its summary, keep nothing
  -h, --help            this text
On CPUs with AMX (amx_tile / amx_int8 in /proc/cpuinfo) AMX code generation is
turned off (-mno-amx-tile -mno-amx-int8 -mno-amx-bf16): with it, llama.cpp's
native build crashes (SIGSEGV in ggml_backend_amx_mul_mat) on every batch of
more than one row, which prompt processing and speculative verification use.
EOF
}

die() { echo "$me: $*" >&2; exit 1; }
usage_error() { echo "$me: $*" >&2; echo "Try 'scripts/build-llamacpp.sh --help'." >&2; exit 2; }

sdist="${LLAMA_CPP_SDIST:-}"
jobs=$(nproc 2>/dev/null || echo 2)
configure_only=""
dir=""
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help) usage; exit 0 ;;
	--sdist) [ $# -ge 2 ] || usage_error "--sdist needs a file"; sdist=$2; shift 2 ;;
	--jobs)
		[ $# -ge 2 ] || usage_error "--jobs needs a number"
		case $2 in '' | *[!0-9]* | 0) usage_error "--jobs: expected a number >= 1, got '$2'" ;; esac
		jobs=$2; shift 2 ;;
	--configure-only) configure_only=1; shift ;;
	-*) usage_error "unknown option '$1'" ;;
	*) [ -z "$dir" ] || usage_error "one DIR only ('$dir', then '$1')"; dir=$1; shift ;;
	esac
done
[ -n "$dir" ] || dir="${XDG_CACHE_HOME:-$HOME/.cache}/skipper/llama.cpp"

command -v cmake >/dev/null || die "cmake is needed (apt-get install cmake)"
command -v c++ >/dev/null || command -v g++ >/dev/null || die "a C++ compiler is needed (apt-get install g++)"
if [ -n "$sdist" ]; then
	[ -f "$sdist" ] || die "--sdist $sdist: no such file"
else
	python3 -m pip --version >/dev/null 2>&1 ||
		die "python3 and pip are needed to download the sdist (apt-get install python3-pip), or give --sdist FILE"
fi

dest="$dir/llama_cpp_python-$version"
bin="$dest/vendor/llama.cpp/build/bin"
if [ -z "$configure_only" ] && [ -d "$dest" ]; then
	missing=""
	for t in $targets; do [ -x "$bin/$t" ] || missing="$missing $t"; done
	[ -n "$missing" ] || { echo "$bin"; exit 0; }
	die "$dest exists but lacks$missing: remove it and run again"
fi

# AMX: see --help. lscpu shows the same flags as /proc/cpuinfo.
cmake_flags=""
if grep -q -w -e amx_tile -e amx_int8 /proc/cpuinfo 2>/dev/null; then
	cmake_flags="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
	echo "$me: this CPU has AMX: building with $cmake_flags (llama.cpp's AMX path crashes on multi-row batches)" >&2
fi

if [ -n "$configure_only" ]; then
	tmp=$(mktemp -d) || die "cannot create a temporary directory"
else
	mkdir -p "$dir" || die "$dir: cannot create the directory"
	# beside DEST, so that the finished tree moves into place in one rename
	tmp=$(mktemp -d "$dir/.build.XXXXXX") || die "$dir: cannot create a temporary directory"
fi
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ -z "$sdist" ]; then
	echo "$me: downloading the llama-cpp-python $version sdist from PyPI" >&2
	python3 -m pip download --quiet --no-deps --no-binary :all: --dest "$tmp/dl" "llama-cpp-python==$version" >&2 ||
		die "pip could not download llama-cpp-python==$version (see above)"
	sdist="$tmp/dl/llama_cpp_python-$version.tar.gz"
	[ -f "$sdist" ] || die "pip left no $(basename "$sdist") in $tmp/dl"
fi
mkdir "$tmp/src"
tar -xzf "$sdist" -C "$tmp/src" || die "$sdist: cannot unpack"
src="$tmp/src/llama_cpp_python-$version"
[ -f "$src/vendor/llama.cpp/CMakeLists.txt" ] || die "$sdist: no vendor/llama.cpp/CMakeLists.txt in it (not the llama-cpp-python $version sdist?)"

cd "$src/vendor/llama.cpp"
# static: the binaries do not depend on the build directory they were built in
set -- -B build -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF
[ -z "$cmake_flags" ] || set -- "$@" "-DCMAKE_C_FLAGS=$cmake_flags" "-DCMAKE_CXX_FLAGS=$cmake_flags"
echo "$me: cmake $*" >&2
cmake "$@" >&2 || die "cmake could not configure llama.cpp (see above)"
if [ -n "$configure_only" ]; then
	echo "$me: configured in a temporary directory (removed); a full build runs:" >&2
	echo "$me: cmake --build build --config Release -j $jobs --target $targets" >&2
	exit 0
fi
echo "$me: building $targets with $jobs jobs" >&2
# shellcheck disable=SC2086 # the target list is one word per target
cmake --build build --config Release -j "$jobs" --target $targets >&2 || die "the llama.cpp build failed (see above)"
for t in $targets; do [ -x "build/bin/$t" ] || die "the build made no build/bin/$t"; done
cd /
mv "$src" "$dest" || die "cannot move the build to $dest"
echo "$bin"
