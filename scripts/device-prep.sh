#!/bin/sh
# Gather what scripts/device-check.sh needs on a GPU machine that reaches
# no network and may lack our build tools. Run HERE, in the repository
# root, on a machine with apt and the network. Writes only git-ignored
# folders, which the device calls then carry:
#   .device/autotools.tar.gz  configure, Makefile.in & co. (the device image
#                             may have no autoconf/automake/libtool)
#   .device/debs/*.deb        headers and libraries of the build deps (inih,
#                             jansson, libcurl, libcrypto) from this machine's
#                             apt; unpacked there only for what is missing
#   .device-curl/pycurl-*.whl a self-contained libcurl + libcrypto (the ones
#                             the pycurl wheel vendors), used only where the
#                             image lacks them; carry it with the build
#   .device/model.sha256      and the SmolLM2-135M GGUF (93 MB) in two halves,
#   .device-model1/, .device-model2/   each under the 64 MiB a call carries
# The model halves need two calls on the same (warm) machine: the first
# stashes its half outside the checkout (`device-check.sh stash ...`), the
# second joins them. Without them the SmolLM2 parts skip.
set -eu
[ -f configure.ac ] && [ -d scripts ] || { echo "device-prep: run in the repository root" >&2; exit 2; }
rm -rf .device .device-curl .device-model1 .device-model2
mkdir -p .device/debs

# 1. generated build system, up to date with the .am files
if [ ! -f configure ] || [ ! -f Makefile.in ]; then
	autoreconf -fi
fi
tar -czf .device/autotools.tar.gz configure Makefile.in aclocal.m4 build-aux m4 build-config.h.in

# 2. build dependencies (-dev packages: headers, .pc files, link names; the
# two small runtime libraries; libcurl and libcrypto must be on the device)
(cd .device/debs && apt-get download libinih1 libinih-dev libjansson4 libjansson-dev libcurl4-openssl-dev \
	libssl-dev) || echo "device-prep: apt-get download failed; the device must have the build deps" >&2

# 3. libcurl and libcrypto for an image without them: a manylinux wheel
# vendors both with everything they need, found by their $ORIGIN
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
	--platform manylinux_2_28_x86_64 -d .device-curl pycurl ||
	echo "device-prep: pycurl wheel not downloaded; the device image must have libcurl and libcrypto" >&2

# 4. the model, if cached here
model=${SKIPPER_MODEL:-${XDG_CACHE_HOME:-$HOME/.cache}/skipper/models/SmolLM2-135M-Instruct.Q4_1.gguf}
if [ -s "$model" ]; then
	mkdir -p .device-model1 .device-model2
	split -n 2 -d "$model" .device/model.part
	mv .device/model.part00 .device-model1/
	mv .device/model.part01 .device-model2/
	(sha256sum <"$model" | cut -d' ' -f1) >.device/model.sha256
else
	echo "device-prep: $model not found (scripts/fetch-model.sh): SmolLM2 parts will skip on the device" >&2
fi
du -sh .device .device-curl .device-model1 .device-model2 2>/dev/null || true
