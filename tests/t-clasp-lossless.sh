#!/bin/sh
# clasp on SmolLM2-135M: greedy output == plain decoding token for token
# (`skipper bench` exits 1 on any difference), with a short LOI so the DP
# re-runs inside each request; the DP time shows as policy time.
set -u
. "$top_srcdir/tests/lossless-smollm2.sh"
lossless_smollm2 clasp 'skip_layers = 8\ninterval = 4\ncosts = false'
