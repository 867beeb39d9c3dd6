#!/bin/sh
# A third party can build a policy from the installed header and
# skipper-policy.pc alone: install this build tree into a scratch DESTDIR,
# build tests/example-policy out of tree against it, load it with the real
# loader (tests/policy-probe) and run its hooks on the mock host.
: "${top_builddir:?run through make check}" "${top_srcdir:?run through make check}"
MAKE=${MAKE:-make}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/t-example-policy.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM
n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; sed 's/^/# /' "$tmp/log" 2>/dev/null | tail -20; }

if ! command -v pkg-config >/dev/null 2>&1; then
	echo "1..0 # SKIP pkg-config not installed"
	exit 0
fi
echo "1..10"

# 1. install into a scratch root (only what the example needs to be there)
if env -u MAKEFLAGS -u MFLAGS $MAKE -C "$top_builddir" install DESTDIR="$tmp/root" >"$tmp/log" 2>&1; then
	ok "make install DESTDIR=..."
else
	not_ok "make install DESTDIR=..."
	exit 1
fi
pc=$(find "$tmp/root" -name skipper-policy.pc | head -n 1)
hdr=$(find "$tmp/root" -path '*/skipper/policy.h' | head -n 1)
if [ -n "$pc" ] && [ -n "$hdr" ]; then ok "header and skipper-policy.pc installed"; else not_ok "header and .pc installed"; fi

# 2. build out of tree: a copy of the sources, nothing from this tree on the include path
export PKG_CONFIG_PATH="$(dirname "$pc")" PKG_CONFIG_LIBDIR="$(dirname "$pc")" PKG_CONFIG_SYSROOT_DIR="$tmp/root"
mkdir "$tmp/src"
cp "$top_srcdir/tests/example-policy/Makefile" "$top_srcdir/tests/example-policy/example.c" "$tmp/src/"
cflags=$(pkg-config --cflags skipper-policy)
case "$cflags" in
*"$tmp/root"*) ok "pkg-config points into the installed tree ($cflags)" ;;
*) echo "$cflags" >"$tmp/log"; not_ok "pkg-config points into the installed tree" ;;
esac
if (cd "$tmp/src" && env -u CPATH -u C_INCLUDE_PATH -u MAKEFLAGS -u MFLAGS $MAKE CFLAGS=-O1) >"$tmp/log" 2>&1 &&
   [ -f "$tmp/src/skipper-policy-example.so" ]; then
	ok "example policy built out of tree"
else
	not_ok "example policy built out of tree"
	exit 1
fi

# 3. exactly one exported symbol
if command -v nm >/dev/null 2>&1; then
	syms=$(nm -D --defined-only "$tmp/src/skipper-policy-example.so" | awk '$2 == "T" && $3 != "_init" && $3 != "_fini" { print $3 }')
	if [ "$syms" = "skipper_policy_init" ]; then ok "only skipper_policy_init exported"; else echo "$syms" >"$tmp/log"; not_ok "only skipper_policy_init exported"; fi
else
	ok "only skipper_policy_init exported # SKIP nm not installed"
fi

# 4. loaded through the loader, by path and by name from a plugin directory
probe="$top_builddir/tests/policy-probe"
if "$probe" "$tmp/src/skipper-policy-example.so" stride=3 draft=2 >"$tmp/log" 2>&1 &&
   grep -q "policy example 0.1.0" "$tmp/log" && grep -q "mlp \[1,4,7,10\]" "$tmp/log" && grep -q "example: 3 rounds" "$tmp/log"; then
	ok "loaded by path and run on the mock host"
else
	not_ok "loaded by path and run on the mock host"
fi
if "$probe" -d "$tmp/src" example stride=nope >"$tmp/log" 2>&1; then
	not_ok "found by name; a bad value is refused with the host's message"
elif grep -q "\[example\] stride: expected an integer in \[1, 64\], got 'nope'" "$tmp/log"; then
	ok "found by name; a bad value is refused with the host's message"
else
	not_ok "found by name; a bad value is refused with the host's message"
fi

# 5. the CLI lists it from a plugin directory given on the command line
if [ -x "$top_builddir/skipper" ]; then
	if "$top_builddir/skipper" policies -v --set policy.plugin_dir="$tmp/src" >"$tmp/log" 2>&1 &&
	   grep -q "^example *0.1.0" "$tmp/log" && grep -q "\[example\] stride = N" "$tmp/log"; then
		ok "skipper policies lists it with its config help"
	else
		not_ok "skipper policies lists it with its config help"
	fi
else
	ok "skipper policies lists it # SKIP skipper not built"
fi

# 6. the installed header compiles as C++ too
cxx=$(command -v c++ || command -v g++ || true)
if [ -n "$cxx" ]; then
	cat >"$tmp/src/cxx.cc" <<'CXX'
#include <skipper/policy.h>
static int make(const skipper_host *, void *, void **state) { *state = 0; return SKIPPER_POLICY_OK; }
static void destroy(void *) {}
static skipper_policy desc() {
	skipper_policy d = skipper_policy();
	d.abi_major = SKIPPER_POLICY_ABI_MAJOR; d.abi_minor = SKIPPER_POLICY_ABI_MINOR;
	d.struct_size = sizeof d; d.name = "cxx"; d.create = make; d.destroy = destroy;
	return d;
}
static const skipper_policy the_desc = desc();
SKIPPER_POLICY_REGISTER(the_desc)
CXX
	if "$cxx" -std=c++11 -Wall -Wextra -pedantic -Werror $cflags -fPIC -fvisibility=hidden -shared \
	       -o "$tmp/src/skipper-policy-cxx.so" "$tmp/src/cxx.cc" >"$tmp/log" 2>&1 &&
	   "$probe" "$tmp/src/skipper-policy-cxx.so" >"$tmp/log" 2>&1; then
		ok "a C++ plugin builds against the header and loads"
	else
		not_ok "a C++ plugin builds against the header and loads"
	fi
else
	ok "C++ plugin # SKIP no C++ compiler"
fi
# 7. a plugin written the new way: no ABI fields in its descriptor (the
# register macro fills them from the header it is built with), a thread model
cat >"$tmp/src/newway.c" <<'NEWWAY'
#include <stddef.h>
#include <skipper/policy.h>
static int make(const struct skipper_host *host, void *ctx, void **state) { *state = NULL; return SKIPPER_POLICY_OK; }
static void destroy(void *state) { (void)state; }
static struct skipper_policy newway = {
	.name = "newway",
	.version = "1.0",
	.description = "written without ABI fields",
	.create = make,
	.destroy = destroy,
	.thread_model = SKIPPER_THREAD_MODEL_SERIALIZE_ALL,
};
SKIPPER_POLICY_REGISTER(newway)
NEWWAY
major=$(sed -n 's/^#define SKIPPER_POLICY_ABI_MAJOR \([0-9]*\)$/\1/p' "$hdr")
minor=$(sed -n 's/^#define SKIPPER_POLICY_ABI_MINOR \([0-9]*\)$/\1/p' "$hdr")
if cc -std=c99 -Wall -Wextra -pedantic -Werror -Wno-unused-parameter $cflags -fPIC -fvisibility=hidden -shared \
       -o "$tmp/src/skipper-policy-newway.so" "$tmp/src/newway.c" >"$tmp/log" 2>&1 &&
   "$probe" "$tmp/src/skipper-policy-newway.so" >"$tmp/log" 2>&1 && grep -q "policy newway 1.0" "$tmp/log" &&
   grep -q "abi $major.$minor, thread model 1" "$tmp/log"; then
	ok "a plugin without ABI fields builds, loads as ABI $major.$minor with its thread model"
else
	not_ok "a plugin without ABI fields builds, loads with the ABI fields filled in"
fi
[ "$fails" -eq 0 ]
