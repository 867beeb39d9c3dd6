#!/bin/sh
# t-cudaemu-backend.sh with every kernel's blocks, warps and lanes run in
# descending order (SKIPPER_CUDAEMU_ORDER, tests/cudaemu/README): of two
# threads or blocks that race (no barrier between one's write and the
# other's access) each goes first in one of the two orders, so a race the
# ascending order happens to resolve right shows here.
SKIPPER_CUDAEMU_ORDER=reverse exec "${top_srcdir:-.}/tests/t-cudaemu-backend.sh" "$@"
