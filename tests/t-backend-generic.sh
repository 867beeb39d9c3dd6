#!/bin/sh
# t-backend again with the plain C kernels forced.
SKIPPER_CPU_ISA=generic exec "${top_builddir:-.}/tests/t-backend" "$@"
