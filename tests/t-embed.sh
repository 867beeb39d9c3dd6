#!/bin/sh
# A program embeds skipper from the installed header, library and
# skipper.pc alone (skipper(3)): install this build tree into a scratch
# DESTDIR, build tests/embed/example.c out of tree against it, and run it:
# lookup decoding on the default model, the same text as skipper generate.
: "${top_builddir:?run through make check}" "${top_srcdir:?run through make check}"
MAKE=${MAKE:-make}
CC=${CC:-cc}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/t-embed.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM
n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; sed 's/^/# /' "$tmp/log" 2>/dev/null | tail -20; }

if ! command -v pkg-config >/dev/null 2>&1; then
	echo "1..0 # SKIP pkg-config not installed"
	exit 0
fi
model="${SKIPPER_TEST_MODEL:-${XDG_CACHE_HOME:-$HOME/.cache}/skipper/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
echo "1..7"

# 1. install into a scratch root
if env -u MAKEFLAGS -u MFLAGS $MAKE -C "$top_builddir" install DESTDIR="$tmp/root" >"$tmp/log" 2>&1; then
	ok "make install DESTDIR=..."
else
	not_ok "make install DESTDIR=..."
	exit 1
fi
pc=$(find "$tmp/root" -name skipper.pc | head -n 1)
hdr=$(find "$tmp/root" -path '*/skipper/skipper.h' | head -n 1)
if [ -n "$pc" ] && [ -n "$hdr" ]; then ok "skipper/skipper.h and skipper.pc installed"; else not_ok "header and .pc installed"; fi

# 2. build out of tree: a copy of the source, nothing from this tree on the paths
export PKG_CONFIG_PATH="$(dirname "$pc")" PKG_CONFIG_LIBDIR="$(dirname "$pc")" PKG_CONFIG_SYSROOT_DIR="$tmp/root"
mkdir "$tmp/src"
cp "$top_srcdir/tests/embed/example.c" "$tmp/src/"
flags=$(pkg-config --cflags --libs skipper)
if (cd "$tmp/src" && env -u CPATH -u C_INCLUDE_PATH -u LIBRARY_PATH \
	$CC -std=c99 -Wall -Wextra -pedantic -Werror -o example example.c $flags) >"$tmp/log" 2>&1; then
	ok "the example builds against pkg-config skipper alone"
else
	not_ok "the example builds against pkg-config skipper alone"
	exit 1
fi
# pkgconf puts the sysroot before the variable, pkg-config does not
libdir=$(pkg-config --variable=libdir skipper)
case "$libdir" in "$tmp/root"*) ;; *) libdir="$tmp/root$libdir" ;; esac
run() { LD_LIBRARY_PATH="$libdir" SKIPPER_PLUGIN_PATH="$top_builddir/.libs" "$tmp/src/example" "$@"; }

# 3. its errors come from the library, with the key named
if run "hi" policy.name=nope >"$tmp/out" 2>"$tmp/log"; then
	not_ok "an unknown policy is refused"
elif grep -q "nope" "$tmp/log"; then
	ok "an unknown policy is refused, named: $(head -n 1 "$tmp/log")"
else
	not_ok "an unknown policy is refused, named"
fi

# 5-7. lookup decoding on the default model, the text skipper generate writes
if [ -z "$model" ] || [ ! -f "$model" ]; then
	for i in 5 6 7; do ok "generation # SKIP default model not fetched (scripts/fetch-model.sh)"; done
	[ "$fails" -eq 0 ]
	exit
fi
prompt="Repeat exactly: the cat sat on the mat, the cat sat on the mat, the cat sat on the mat."
set -- model.path="$model" model.threads=1 generate.max_tokens=48 generate.seed=1
if run "$prompt" "$@" >"$tmp/out" 2>"$tmp/log" && [ -s "$tmp/out" ]; then
	ok "the example generates: $(head -c 60 "$tmp/out" | tr '\n' ' ')"
else
	not_ok "the example generates"
fi
if grep -q "lookup drafted [1-9][0-9]* accepted [1-9]" "$tmp/log"; then
	ok "with lookup drafts accepted: $(tail -n 1 "$tmp/log")"
else
	not_ok "with lookup drafts accepted"
fi
SKIPPER_PLUGIN_PATH="$top_builddir/.libs" "$top_builddir/skipper" generate -p "$prompt" --policy lookup \
	-m "$model" -t 1 -n 48 --seed 1 >"$tmp/cli" 2>/dev/null
if cmp -s "$tmp/out" "$tmp/cli"; then
	ok "the same text as skipper generate"
else
	diff "$tmp/out" "$tmp/cli" >"$tmp/log"
	not_ok "the same text as skipper generate"
fi
[ "$fails" -eq 0 ]
