#!/usr/bin/env bash
# Installs qemu-aarch64 (Debian's qemu-user) and the aarch64 C library's
# loader (libc6-arm64-cross), with which make test-arm64 runs the arm64 test
# binaries on this machine, once per ISA level.
#
# Usage: scripts/testdata-qemu.sh
# Idempotent: nothing happens when both are there.
set -euo pipefail
. "$(dirname "$0")/apt-install.sh"

command -v qemu-aarch64 >/dev/null ||
	apt_install testdata-qemu qemu-user "qemu-aarch64 for make test-arm64"
[[ -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ]] ||
	apt_install testdata-qemu libc6-arm64-cross "the aarch64 loader for make test-arm64's dynamically linked test binaries"
command -v qemu-aarch64 >/dev/null
