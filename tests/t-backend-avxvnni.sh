#!/bin/sh
# t-backend again with the AVX-VNNI kernels: vpdpbusd on ymm, VEX-encoded on
# CPUs with AVX-VNNI, EVEX-encoded (the same kernels) on AVX-512 VNNI ones,
# where the native run takes AVX-512; skipped on CPUs with neither.
f=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null) "
case "$f" in
*" avx_vnni "*) ;;
*" avx512vl "*" avx512_vnni "*) ;;
*) echo "1..0 # SKIP neither AVX-VNNI nor AVX-512 VNNI on this CPU"; exit 0 ;;
esac
SKIPPER_CPU_ISA=avxvnni exec "${top_builddir:-.}/tests/t-backend" "$@"
