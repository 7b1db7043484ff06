#!/usr/bin/env bash
# Installs clang (Debian's clang-14), which gpu's TestKernelsCompile
# uses to compile the CUDA kernels (gpu/kernels_*.cu) on machines
# without a GPU or a CUDA toolkit: NVRTC compiles them only where a GPU is.
#
# Usage: scripts/testdata-clang.sh
# Idempotent: nothing happens when a clang is on the PATH.
set -euo pipefail
. "$(dirname "$0")/apt-install.sh"

for c in clang clang-19 clang-18 clang-17 clang-16 clang-15 clang-14; do
	command -v "$c" >/dev/null && exit 0
done
apt_install testdata-clang clang-14 "clang 14+ for the CUDA kernel compile test"
command -v clang-14 >/dev/null
