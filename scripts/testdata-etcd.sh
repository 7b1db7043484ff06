#!/usr/bin/env bash
# Installs etcd (Debian's etcd-server), which the cluster test starts on
# 127.0.0.1 as the cluster's membership provider (cmd/troupe:
# TestClusterServe). The test runs the binary itself; no service is started.
#
# Usage: scripts/testdata-etcd.sh
# Idempotent: nothing happens when etcd is on the PATH.
set -euo pipefail

command -v etcd >/dev/null && exit 0
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
if ! command -v apt-get >/dev/null; then
	echo "testdata-etcd: no etcd and no apt-get; install etcd 3.4+ for the cluster test" >&2
	exit 1
fi
echo "testdata-etcd: installing etcd-server" >&2
$sudo apt-get install -y --no-install-recommends etcd-server >/dev/null ||
	{ $sudo apt-get update >/dev/null && $sudo apt-get install -y --no-install-recommends etcd-server >/dev/null; }
# The package enables a system service; the test needs only the binary.
$sudo systemctl disable --now etcd >/dev/null 2>&1 || true
command -v etcd >/dev/null
