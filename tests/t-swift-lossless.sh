#!/bin/sh
# swift on SmolLM2-135M: greedy output == plain decoding token for token
# (`skipper bench` exits 1 on any difference) with tree verification;
# the search runs from the first request on.
set -u
. "$top_srcdir/tests/lossless-smollm2.sh"
lossless_smollm2 swift 'gamma = 8\ncosts = false'
