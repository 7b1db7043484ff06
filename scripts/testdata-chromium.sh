#!/usr/bin/env bash
# Installs Debian's chromium, which the web page's browser test
# (server/webui: TestBrowser) drives headless through chromedp.
#
# Usage: scripts/testdata-chromium.sh
# Idempotent: nothing happens when a chromium is on the PATH (or
# TROUPE_CHROMIUM names one).
set -euo pipefail
. "$(dirname "$0")/apt-install.sh"

[[ -n "${TROUPE_CHROMIUM:-}" && -x "${TROUPE_CHROMIUM}" ]] && exit 0
for c in chromium chromium-browser google-chrome; do
	command -v "$c" >/dev/null && exit 0
done
apt_install testdata-chromium chromium "a headless browser for the web page's test"
command -v chromium >/dev/null
