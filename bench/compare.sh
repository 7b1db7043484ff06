#!/usr/bin/env bash
# compare.sh: troupe against llama.cpp on the same files, same machine, same
# thread count, one after the other (never at the same time: two engines on
# the same cores would measure each other).
#
# usage: LLAMA_CPP=/path/to/llama.cpp/build/bin bench/compare.sh MODEL.gguf...
#
#   LLAMA_CPP   directory holding llama-bench and llama-batched-bench (a CPU
#               build of llama.cpp; never part of this repository)
#   THREADS     threads for both engines (default 2)
#   REPS        llama-bench repetitions (default 3)
#   PP, TG      llama-bench test sizes (default 512 and 128)
#   NPL         parallel sequences for the batched test (default 16)
#   BPP, BTG    batched test prompt and generation lengths (default 128, 128)
#   TROUPE      the troupe binary (default: built from this checkout)
#
# For each model it prints one markdown row: pp and tg tokens/s of both
# engines with troupe's ratio to llama.cpp, and the total tokens/s of the
# batched test (llama-batched-bench's S t/s) with its ratio. Needs jq.
set -euo pipefail

. "$(dirname "$0")/lib.sh"

[[ -n "${LLAMA_CPP:-}" ]] || die "set LLAMA_CPP to the directory of a llama.cpp build's binaries (llama-bench, llama-batched-bench)"
for b in llama-bench llama-batched-bench; do
	[[ -x "$LLAMA_CPP/$b" ]] || die "$LLAMA_CPP/$b: not found or not executable"
done
command -v jq >/dev/null || die "jq is required"
(($# > 0)) || die "usage: LLAMA_CPP=DIR $0 MODEL.gguf..."

THREADS=${THREADS:-2}
REPS=${REPS:-3}
PP=${PP:-512}
TG=${TG:-128}
NPL=${NPL:-16}
BPP=${BPP:-128}
BTG=${BTG:-128}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log=$tmp/llama.log # llama.cpp's stderr (its output goes missing when stderr is /dev/null)
need_troupe "$tmp"

ratio() { jq -n --argjson a "$1" --argjson b "$2" 'if $b > 0 then ($a / $b * 100 | round / 100) else null end'; }
fmt() { jq -n --argjson v "$1" '$v * 100 | round / 100'; }

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
echo "machine: $cpu, $(nproc) vCPUs; threads $THREADS; llama.cpp: $LLAMA_CPP"
echo
echo "| model | type | pp$PP troupe | pp$PP llama.cpp | ratio | tg$TG troupe | tg$TG llama.cpp | ratio | batched $NPL troupe | batched $NPL llama.cpp | ratio |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for m in "$@"; do
	[[ -f "$m" ]] || die "$m: no such file"
	lb=$("$LLAMA_CPP/llama-bench" -m "$m" -p "$PP" -n "$TG" -r "$REPS" -t "$THREADS" -o json 2>"$log") ||
		die "llama-bench failed on $m: $(tail -1 "$log")"
	l_pp=$(jq "[.[] | select(.n_prompt == $PP and .n_gen == 0)][0].avg_ts" <<<"$lb")
	l_tg=$(jq "[.[] | select(.n_gen == $TG and .n_prompt == 0)][0].avg_ts" <<<"$lb")

	tb=$("$TROUPE" bench model -m "$m" -p "$PP" -n "$TG" -r "$REPS" -t "$THREADS" -o json) ||
		die "troupe bench model failed on $m"
	t_pp=$(jq "[.[] | select(.n_prompt == $PP)][0].avg_ts" <<<"$tb")
	t_tg=$(jq "[.[] | select(.n_gen == $TG)][0].avg_ts" <<<"$tb")
	name=$(jq -r '.[0].model' <<<"$tb")

	ctx=$((NPL * (BPP + BTG)))
	lbb=$("$LLAMA_CPP/llama-batched-bench" -m "$m" -c "$ctx" -b 2048 -ub 512 -npp "$BPP" -ntg "$BTG" -npl "$NPL" \
		-t "$THREADS" --output-format jsonl 2>"$log" | grep '^{') || die "llama-batched-bench failed on $m: $(tail -1 "$log")"
	l_b=$(jq -s '.[0].speed' <<<"$lbb")
	tbb=$("$TROUPE" bench batched -m "$m" -npp "$BPP" -ntg "$BTG" -npl "$NPL" -t "$THREADS" --output json) ||
		die "troupe bench batched failed on $m"
	t_b=$(jq -s '.[0].speed' <<<"$tbb")

	echo "| $(basename "$m") | ${name#* * } | $(fmt "$t_pp") | $(fmt "$l_pp") | $(ratio "$t_pp" "$l_pp") |" \
		"$(fmt "$t_tg") | $(fmt "$l_tg") | $(ratio "$t_tg" "$l_tg") |" \
		"$(fmt "$t_b") | $(fmt "$l_b") | $(ratio "$t_b" "$l_b") |"
done
