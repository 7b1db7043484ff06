#!/usr/bin/env bash
# disagg.sh: inter-token latency of short requests while long prompts
# arrive, on a two-member cluster on this machine (automanaged provider,
# 127.0.0.1: the network is free and the members share the cores), once
# colocated (both members --role both: replicas, placement by prefix and
# load) and once disaggregated (--role decode and --role prefill: long
# prompts are computed on the prefill member and their K/V blocks moved).
# Both runs send the same load to the first member: a stream of short
# requests and, at the same time, a stream of long prompts.
#
# usage: bench/disagg.sh MODEL.gguf
#
#   SHORT_PROMPTS, SHORT_CONC, SHORT_IN, SHORT_OUT  the short requests
#               (default 24 requests, 4 in flight, 16 words, 64 tokens)
#   LONG_PROMPTS, LONG_CONC, LONG_IN, LONG_OUT      the long prompts
#               (default 6, 1 in flight, 384 words, 4 tokens)
#   THREADS     threads per member (default 1: two members, two cores)
#   DISAGG_TOKENS  --disagg-tokens of the disaggregated run (default 256)
#   MODES       which runs, in order (default "colocated disaggregated"); also
#               single: one member alone (--role both), the decode capacity
#               of the disaggregated run without its prefill member
#   TROUPE      the troupe binary (default: built from this checkout)
#
# Prints one markdown row per mode: the short requests' median and p99
# ITL, mean TPOT, the long prompts' mean TTFT, failed requests, and how
# many requests the first member disaggregated. Needs jq.
set -euo pipefail

. "$(dirname "$0")/lib.sh"
(($# == 1)) || die "usage: $0 MODEL.gguf"
model=$1
command -v jq >/dev/null || die "jq is required"
SHORT_PROMPTS=${SHORT_PROMPTS:-24} SHORT_CONC=${SHORT_CONC:-4} SHORT_IN=${SHORT_IN:-16} SHORT_OUT=${SHORT_OUT:-64}
LONG_PROMPTS=${LONG_PROMPTS:-6} LONG_CONC=${LONG_CONC:-1} LONG_IN=${LONG_IN:-384} LONG_OUT=${LONG_OUT:-4}
THREADS=${THREADS:-1}
DISAGG_TOKENS=${DISAGG_TOKENS:-256}
need_troupe "$root/bin"

tmp=$(mktemp -d)
trap 'stop_all; rm -rf "$tmp"' EXIT

metric() { curl -s "$1/metrics" | awk -v m="$2" '!done && $1 ~ "^"m"({|$)" {print $2; done = 1}'; }

echo "| mode | short: median ITL ms | short: p99 ITL ms | short: mean TPOT ms | long: mean TTFT ms | failed | disaggregated |"
echo "|---|---:|---:|---:|---:|---:|---:|"
MODES=${MODES:-"colocated disaggregated"}
for mode in $MODES; do
	case $mode in
	colocated) roles=(both both) ;;
	disaggregated) roles=(decode prefill) ;;
	single) roles=(both) ;;
	*) die "MODES: $mode: want colocated, disaggregated or single" ;;
	esac
	urls=()
	seeds=127.0.0.1:18290
	((${#roles[@]} == 1)) || seeds+=,127.0.0.1:18291
	for i in $(seq 0 $((${#roles[@]} - 1))); do
		port=$((18180 + i))
		"$TROUPE" serve -m "$model" --port "$port" -t "$THREADS" --log-format json --cluster disaggbench \
			--provider automanaged --automanaged-port $((18290 + i)) --seeds "$seeds" \
			--advertise "127.0.0.1:$((18190 + i))" --role "${roles[$i]}" --disagg-tokens "$DISAGG_TOKENS" \
			>"$tmp/$mode-node$i.log" 2>&1 &
		pids+=($!)
		urls+=("http://127.0.0.1:$port")
	done
	for u in "${urls[@]}"; do
		for _ in $(seq 600); do [[ $(curl -s -o /dev/null -w '%{http_code}' "$u/health") == 200 ]] && break; sleep 0.1; done
		for _ in $(seq 600); do [[ $(metric "$u" troupe:cluster_members) == ${#roles[@]} ]] && break; sleep 0.1; done
	done
	sleep 1 # the members' first gossiped loads (roles): placement keeps requests colocated until then
	"$TROUPE" bench serve --url "${urls[0]}" --num-prompts "$SHORT_PROMPTS" --max-concurrency "$SHORT_CONC" \
		--input-len "$SHORT_IN" --output-len "$SHORT_OUT" --seed 1 --output json >"$tmp/$mode-short.json" &
	short=$!
	"$TROUPE" bench serve --url "${urls[0]}" --num-prompts "$LONG_PROMPTS" --max-concurrency "$LONG_CONC" \
		--input-len "$LONG_IN" --output-len "$LONG_OUT" --seed 2 --output json >"$tmp/$mode-long.json" &
	long=$!
	wait "$short" || { tail -n 3 "$tmp"/*.log >&2; die "bench serve (short) failed"; }
	wait "$long" || { tail -n 3 "$tmp"/*.log >&2; die "bench serve (long) failed"; }
	d=$(metric "${urls[0]}" troupe:cluster_disaggregated_total)
	jq -s --arg m "$mode" --arg d "${d:-0}" -r '
		"| \($m) | \(.[0].median_itl_ms | round) | \(.[0].p99_itl_ms | round) | \(.[0].mean_tpot_ms | round) | \(.[1].mean_ttft_ms | round) | \(.[0].failed + .[1].failed) | \($d) |"' \
		"$tmp/$mode-short.json" "$tmp/$mode-long.json"
	stop_all
done
