#!/usr/bin/env bash
# Installs clang (Debian's clang-14), which model/gpu's TestKernelsCompile
# uses to compile the CUDA kernels (model/gpu/kernels.cu) on machines
# without a GPU or a CUDA toolkit: NVRTC compiles them only where a GPU is.
#
# Usage: scripts/testdata-clang.sh
# Idempotent: nothing happens when a clang is on the PATH.
set -euo pipefail

for c in clang clang-19 clang-18 clang-17 clang-16 clang-15 clang-14; do
	command -v "$c" >/dev/null && exit 0
done
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
if ! command -v apt-get >/dev/null; then
	echo "testdata-clang: no clang and no apt-get; install clang 14+ for the CUDA kernel compile test" >&2
	exit 1
fi
echo "testdata-clang: installing clang-14" >&2
$sudo apt-get install -y --no-install-recommends clang-14 >/dev/null ||
	{ $sudo apt-get update >/dev/null && $sudo apt-get install -y --no-install-recommends clang-14 >/dev/null; }
command -v clang-14 >/dev/null
