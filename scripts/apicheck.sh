#!/bin/sh
# apicheck.sh: report incompatible changes to troupe's stable public
# packages (API.md) against the baseline recorded in api/, with
# golang.org/x/exp/cmd/apidiff (pinned in scripts/apidiff/go.mod; built from
# the module cache, so it runs offline once fetched).
#   scripts/apicheck.sh      compare; exit 1 on an incompatible change
#   scripts/apicheck.sh -w   record the current API as the baseline
set -eu
cd "$(dirname "$0")/.."
MOD=github.com/troupe-llm/troupe
# The stable packages, as API.md lists them ("." is the module's root).
PKGS=". langchain troupetest actors actors/backend messages"
mkdir -p bin api
GOFLAGS= go -C scripts/apidiff build -o ../../bin/apidiff golang.org/x/exp/cmd/apidiff
status=0
for p in $PKGS; do
	if [ "$p" = . ]; then path=$MOD; file=api/troupe.export; else path=$MOD/$p; file=api/$(echo "$p" | tr / _).export; fi
	if [ "${1:-}" = -w ]; then
		bin/apidiff -w "$file" "$path"
		echo "recorded $path in $file"
		continue
	fi
	if [ ! -f "$file" ]; then
		echo "apicheck: $path has no baseline ($file): record one with make apicheck-baseline" >&2
		status=1
		continue
	fi
	out=$(bin/apidiff -incompatible "$file" "$path")
	if [ -n "$out" ]; then
		echo "apicheck: incompatible changes to $path:"
		echo "$out" | sed 's/^/  /'
		status=1
	fi
done
[ $status -eq 0 ] && echo "apicheck: no incompatible change to $PKGS"
exit $status
