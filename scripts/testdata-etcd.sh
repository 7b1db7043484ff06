#!/usr/bin/env bash
# Installs etcd (Debian's etcd-server), which the cluster test starts on
# 127.0.0.1 as the cluster's membership provider (cmd/troupe:
# TestClusterServe). The test runs the binary itself; no service is started.
#
# Usage: scripts/testdata-etcd.sh
# Idempotent: nothing happens when etcd is on the PATH.
set -euo pipefail
. "$(dirname "$0")/apt-install.sh"

command -v etcd >/dev/null && exit 0
apt_install testdata-etcd etcd-server "etcd 3.4+ for the cluster test"
# The package enables a system service; the test needs only the binary.
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
$sudo systemctl disable --now etcd >/dev/null 2>&1 || true
command -v etcd >/dev/null
