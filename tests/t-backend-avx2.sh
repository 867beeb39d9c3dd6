#!/bin/sh
# t-backend again with the AVX2 kernels (the native run takes AVX-512 where
# the CPU has it); skipped on CPUs without AVX2.
grep -qw avx2 /proc/cpuinfo 2>/dev/null || { echo "1..0 # SKIP no AVX2 on this CPU"; exit 0; }
SKIPPER_CPU_ISA=avx2 exec "${top_builddir:-.}/tests/t-backend" "$@"
