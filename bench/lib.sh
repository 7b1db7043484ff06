# lib.sh: what the bench scripts share. Each starts with
#   set -euo pipefail
#   . "$(dirname "$0")/lib.sh"
# root is this checkout.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

die() { echo "$(basename "$0"): $*" >&2; exit 1; }

# need_troupe DIR: unless $TROUPE names a troupe binary, builds one from
# this checkout as DIR/troupe and sets TROUPE to it.
need_troupe() {
	if [[ -z "${TROUPE:-}" ]]; then
		TROUPE=$1/troupe
		(cd "$root" && go build -o "$TROUPE" ./cmd/troupe) || die "building troupe failed"
	fi
}

# stop_all kills the background processes in pids and waits for them.
pids=()
stop_all() {
	((${#pids[@]} == 0)) || { kill "${pids[@]}" 2>/dev/null || true; wait "${pids[@]}" 2>/dev/null || true; }
	pids=()
}
