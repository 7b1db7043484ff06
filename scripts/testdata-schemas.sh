#!/usr/bin/env bash
# Installs the JSON Schema Test Suite (Debian's json-schema-test-suite,
# upstream github.com/json-schema-org/JSON-Schema-Test-Suite 2.0.0, MIT
# ("Expat") licence: scripts/testdata-schemas.LICENSE), whose draft 6 and
# draft 7 schemas the structured-output test samples beside its own corpus
# (actors: TestSchemaCorpus). The test reads
# $TROUPE_SCHEMA_SUITE (default /usr/share/json-schema-test-suite).
#
# Usage: scripts/testdata-schemas.sh
# Idempotent: nothing happens when the suite is there.
set -euo pipefail
. "$(dirname "$0")/apt-install.sh"

dir="${TROUPE_SCHEMA_SUITE:-/usr/share/json-schema-test-suite}"
[[ -d "$dir/tests/draft7" ]] && exit 0
apt_install testdata-schemas json-schema-test-suite "JSON Schema Test Suite for the structured-output test"
test -d "$dir/tests/draft7"
