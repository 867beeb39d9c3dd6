#!/bin/sh
# [model] backend: cuda fails with a reason when the CUDA module or a device
# is missing, auto falls back to the CPU silently, and the module loader
# refuses a file that is not a skipper backend module.
set -u
: "${top_builddir:=.}"
S="$top_builddir/skipper"
t=$(mktemp -d "${TMPDIR:-/tmp}/t-backend-select.XXXXXX") || exit 1
trap 'rm -rf "$t"' EXIT
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
fail() { n=$((n + 1)); echo "not ok $n - $1"; sed 's/^/#   /' "$t/err"; }
gen() { "$S" generate -m "$t/m.gguf" -p hi --set generate.max_tokens=2 --stats "$@" >"$t/out" 2>"$t/err"; }

echo "1..7"
"$top_builddir/tests/gen-model" --out "$t/m.gguf" --layers 2 --embd 64 --ff 128 --heads 4 --kv-heads 2 \
	--vocab 300 >/dev/null 2>&1 || { echo "Bail out! gen-model failed"; exit 1; }
mkdir "$t/empty" "$t/fake"

SKIPPER_PLUGIN_PATH="$t/empty" gen --set model.backend=cuda
if [ $? -ne 0 ] && grep -q "backend cuda: module skipper-backend-cuda.so not found in $t/empty" "$t/err"; then
	ok "backend=cuda without the module: error naming the search path"
else fail "backend=cuda without the module"; fi

SKIPPER_PLUGIN_PATH="$t/empty" gen --set model.backend=auto
if [ $? -eq 0 ] && grep -q "^backend  *cpu$" "$t/err"; then
	ok "backend=auto without the module runs on the CPU"
else fail "backend=auto without the module"; fi

# any shared object that is not a backend module: a policy plugin
plugin=$(ls "$top_builddir"/.libs/skipper-policy-*.so 2>/dev/null | head -n 1)
if [ -n "$plugin" ]; then
	cp "$plugin" "$t/fake/skipper-backend-cuda.so"
	SKIPPER_PLUGIN_PATH="$t/fake" gen --set model.backend=cuda
	if [ $? -ne 0 ] && grep -q "skipper-backend-cuda.so: not a skipper backend module: no exported" "$t/err"; then
		ok "a foreign .so is refused"
	else fail "a foreign .so is refused"; fi
	SKIPPER_PLUGIN_PATH="$t/fake" gen --set model.backend=auto
	if [ $? -eq 0 ] && grep -q "^backend  *cpu$" "$t/err"; then
		ok "backend=auto with a foreign .so runs on the CPU"
	else fail "backend=auto with a foreign .so"; fi
else
	ok "# SKIP no policy plugin built to stand in for a foreign .so"
	ok "# SKIP no policy plugin built to stand in for a foreign .so"
fi

fake="$top_builddir/tests/plugins/.libs/fake-backend.so"
if [ -f "$fake" ]; then
	cp "$fake" "$t/fake/skipper-backend-cuda.so"
	SKIPPER_PLUGIN_PATH="$t/fake" gen --set model.backend=cuda
	if [ $? -ne 0 ] && grep -q "refused $t/fake/skipper-backend-cuda.so: built for skipper 0.0.0-other" "$t/err"; then
		ok "a module from another skipper version is refused, naming the file"
	else fail "a module from another skipper version is refused"; fi
else
	ok "# SKIP tests/plugins/fake-backend.so not built"
fi

# the real module (when this build has one) on this machine
if [ -f "$top_builddir/.libs/skipper-backend-cuda.so" ]; then
	SKIPPER_PLUGIN_PATH="$top_builddir/.libs" gen --set model.backend=cuda
	rc=$?
	if [ $rc -eq 0 ] && grep -q "^backend  *cuda (" "$t/err"; then
		ok "backend=cuda runs on the device"
	elif [ $rc -ne 0 ] && grep -q "backend cuda: no CUDA device\|backend cuda: the NVIDIA driver" "$t/err"; then
		ok "backend=cuda without a device: clear error"
	else fail "backend=cuda with the module"; fi
	SKIPPER_PLUGIN_PATH="$top_builddir/.libs" gen --set model.backend=auto
	if [ $? -eq 0 ] && grep -q "^backend  *c" "$t/err"; then
		ok "backend=auto with the module runs ($(grep '^backend' "$t/err" | sed 's/  */ /g'))"
	else fail "backend=auto with the module"; fi
else
	ok "# SKIP this build has no CUDA module"
	ok "# SKIP this build has no CUDA module"
fi
