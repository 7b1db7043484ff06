#!/usr/bin/env bash
# cluster.sh: serving throughput of one troupe node against a cluster of
# several on this machine, with the same load (troupe bench serve), one after
# the other. The nodes join through etcd on 127.0.0.1 (Debian's etcd-server).
#
# usage: bench/cluster.sh MODEL.gguf
#
#   NODES       cluster sizes to measure, in order (default "1 3")
#   ENTRY       where the load enters the cluster: one (every request to the
#               first node, which places it) or all (round robin: one bench
#               process per node, each NUM_PROMPTS/N prompts and
#               CONCURRENCY/N in flight; the figures are summed)
#   NUM_PROMPTS requests per run (default 200)
#   CONCURRENCY requests in flight at most (default 16)
#   INPUT_LEN, OUTPUT_LEN  prompt words and max_tokens (default 64, 32)
#   THREADS     threads per node (default 2; several nodes share the cores)
#   TROUPE      the troupe binary (default: built from this checkout)
#
# A single node runs without --cluster (no cluster code in its path); a
# cluster of one runs with it. Prints one markdown row per size: requests/s,
# output tokens/s, mean TTFT and E2E latency, failed requests. Needs jq.
set -euo pipefail

. "$(dirname "$0")/lib.sh"
(($# == 1)) || die "usage: $0 MODEL.gguf"
model=$1
command -v etcd >/dev/null || die "etcd not found (apt-get install etcd-server)"
command -v jq >/dev/null || die "jq is required"

NODES=${NODES:-"1 3"}
ENTRY=${ENTRY:-one}
NUM_PROMPTS=${NUM_PROMPTS:-200}
CONCURRENCY=${CONCURRENCY:-16}
INPUT_LEN=${INPUT_LEN:-64}
OUTPUT_LEN=${OUTPUT_LEN:-32}
THREADS=${THREADS:-2}
need_troupe "$root/bin"
[[ $ENTRY == one || $ENTRY == all ]] || die "ENTRY=$ENTRY: want one or all"

tmp=$(mktemp -d)

etcd --data-dir "$tmp/etcd" --name b --listen-client-urls http://127.0.0.1:23790 \
	--advertise-client-urls http://127.0.0.1:23790 --listen-peer-urls http://127.0.0.1:23800 \
	--initial-advertise-peer-urls http://127.0.0.1:23800 --initial-cluster b=http://127.0.0.1:23800 \
	>"$tmp/etcd.log" 2>&1 &
etcd_pid=$!
trap 'stop_all; kill $etcd_pid 2>/dev/null; wait $etcd_pid 2>/dev/null; rm -rf "$tmp"' EXIT

# wait_for URL METRIC VALUE: until the node's /metrics shows METRIC >= VALUE.
wait_for() {
	for _ in $(seq 300); do
		v=$(curl -s "$1/metrics" | awk -v m="$2" '$1 ~ "^"m"({|$)" {print $2; exit}')
		[[ -n $v ]] && awk -v v="$v" -v w="$3" 'BEGIN{exit !(v >= w)}' && return 0
		sleep 0.1
	done
	die "$1: $2 did not reach $3"
}

echo "| nodes | entry | requests/s | output tok/s | mean TTFT ms | mean E2E ms | failed |"
echo "|---:|---|---:|---:|---:|---:|---:|"
for n in $NODES; do
	urls=()
	for i in $(seq 0 $((n - 1))); do
		port=$((18080 + i))
		args=(serve -m "$model" --port "$port" -t "$THREADS" --log-format json)
		((n == 1)) || args+=(--cluster bench --provider etcd --etcd 127.0.0.1:23790 --advertise "127.0.0.1:$((19090 + i))")
		"$TROUPE" "${args[@]}" >"$tmp/node$i.log" 2>&1 &
		pids+=($!)
		urls+=("http://127.0.0.1:$port")
	done
	for u in "${urls[@]}"; do
		for _ in $(seq 600); do [[ $(curl -s -o /dev/null -w '%{http_code}' "$u/health") == 200 ]] && break; sleep 0.1; done
		((n == 1)) || wait_for "$u" 'troupe:cluster_members' "$n"
	done
	entries=("${urls[0]}")
	[[ $ENTRY == one ]] || entries=("${urls[@]}")
	k=${#entries[@]}
	bp=()
	for j in $(seq 0 $((k - 1))); do
		"$TROUPE" bench serve --url "${entries[$j]}" --num-prompts $((NUM_PROMPTS / k)) \
			--max-concurrency $((CONCURRENCY / k > 0 ? CONCURRENCY / k : 1)) --input-len "$INPUT_LEN" \
			--output-len "$OUTPUT_LEN" --seed $((j + 1)) --output json >"$tmp/r$n-$j.json" &
		bp+=($!)
	done
	for p in "${bp[@]}"; do wait "$p" || { tail -n 3 "$tmp"/node*.log >&2; die "troupe bench serve failed"; }; done
	jq -s --arg n "$n" --arg e "$ENTRY" -r '
		(map(.duration) | max) as $d |
		"| \($n) | \($e) | \((map(.completed) | add) / $d | .*100 | round / 100) | \((map(.total_output_tokens) | add) / $d | .*10 | round / 10) | \((map(.mean_ttft_ms * .completed) | add) / (map(.completed) | add) | round) | \((map(.mean_e2el_ms * .completed) | add) / (map(.completed) | add) | round) | \(map(.failed) | add) |"' \
		"$tmp"/r"$n"-*.json
	stop_all
done
