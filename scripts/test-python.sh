#!/bin/sh
# The Python the test suite runs: Debian's python3 with numpy and yaml from
# Debian (apt-get install python3-numpy python3-yaml python3-venv) and, from
# PyPI, llama.cpp's own gguf package, the openai package and
# prometheus_client, installed in a virtual environment in the skipper cache,
# next to the models. tests/t-gguf-ref.sh compares our GGUF reader and
# quantisers with gguf; the skipper serve tests drive the server with openai
# and read /metrics with prometheus_client. Prints the interpreter's path:
#     make check PYTHON3="$(scripts/test-python.sh)"
# Does nothing when the environment is already there. Without PyPI the
# server packages are left out (a note says so) and their test skips.
set -eu
cache="${SKIPPER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/skipper}"
venv="$cache/venv"
# pinned: the references move only when we move them
gguf_version=0.19.0
openai_version=3.63.0
prometheus_version=0.26.0
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
# openai brings its own dependencies (httpx, pydantic, ...), left to pip
server="import importlib.metadata as m
assert m.version('openai') == '$openai_version' and m.version('prometheus_client') == '$prometheus_version'"
if ! "$venv/bin/python3" -c "$server" >/dev/null 2>&1; then
	"$venv/bin/python3" -m pip install --quiet --disable-pip-version-check "openai==$openai_version" \
		"prometheus_client==$prometheus_version" >&2 ||
		echo "test-python: could not install openai and prometheus_client: the skipper serve test that uses them skips" >&2
fi
echo "$venv/bin/python3"
