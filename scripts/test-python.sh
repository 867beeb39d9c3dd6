#!/bin/sh
# The Python the test suite runs: Debian's python3 with numpy and yaml from
# Debian (apt-get install python3-numpy python3-yaml python3-venv) and
# llama.cpp's own gguf package from PyPI, installed in a virtual environment
# in the skipper cache, next to the models. tests/t-gguf-ref.sh compares our
# GGUF reader and quantisers with it. Prints the interpreter's path:
#     make check PYTHON3="$(scripts/test-python.sh)"
# Does nothing when the environment is already there.
set -eu
cache="${SKIPPER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/skipper}"
venv="$cache/venv"
gguf_version=0.19.0 # pinned: the reference moves only when we move it
py=/usr/bin/python3
[ -x "$py" ] || py=python3

check="import numpy, gguf, importlib.metadata as m; assert m.version('gguf') == '$gguf_version'"
if ! "$venv/bin/python3" -c "$check" >/dev/null 2>&1; then
	need="apt-get install python3-numpy python3-yaml python3-venv"
	"$py" -c 'import numpy, yaml' >/dev/null 2>&1 || { echo "test-python: $py lacks numpy or yaml: $need" >&2; exit 1; }
	mkdir -p "$cache"
	# system site packages: numpy and yaml stay Debian's; gguf is pure
	# Python, so --no-deps installs nothing else from PyPI
	"$py" -m venv --clear --system-site-packages "$venv" >&2 || { echo "test-python: no venv: $need" >&2; exit 1; }
	"$venv/bin/python3" -m pip install --quiet --disable-pip-version-check --no-deps "gguf==$gguf_version" >&2
	"$venv/bin/python3" -c "$check" >&2
fi
echo "$venv/bin/python3"
