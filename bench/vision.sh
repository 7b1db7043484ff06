#!/usr/bin/env bash
# vision.sh: an image's encoding time and the time to the first token of a
# prompt with it, troupe against llama.cpp's mtmd (llama-mtmd-cli) on the
# same files, same machine, same threads, the engines alternating (never at
# the same time: two engines on the same cores would measure each other).
#
# usage: LLAMA_CPP=/path/to/llama.cpp/build/bin bench/vision.sh MODEL.gguf MMPROJ.gguf IMAGE
#
#   LLAMA_CPP   directory holding llama-mtmd-cli (a CPU build of llama.cpp;
#               never part of this repository)
#   THREADS     threads for both engines (default 2)
#   REPS        repetitions of each engine (default 3)
#   TROUPE      the troupe binary (default: built from this checkout)
#
# Each repetition is one process of llama-mtmd-cli (-n 1, greedy, the
# prompt in chatml with the image first) and one repetition of
# `troupe bench vision` on the same text. Encode: llama.cpp's "mtmd batch
# encoding done in N ms" (summed over an image's batches: Idefics3's tiles
# come in several) against troupe's Projector.Encode. Time to first token:
# llama.cpp's log timestamps from the line before it reads the image to its
# perf report after the first token (decode, preprocess, encode, prefill,
# one sample), against troupe's image bytes to first token through the
# runtime. Prints one markdown row with the means and troupe's ratio
# (llama.cpp's time over troupe's: above 1 is troupe faster).
#
# The text model's vocabulary must hold the tokens mtmd looks up for the
# projector type (SmolVLM's "<global-img>" and "<fake_token_around_image>"
# as single tokens): a synthetic text model with another vocabulary makes
# llama-mtmd-cli fail at the overview image ("invalid token[1] = -1").
set -euo pipefail

die() { echo "vision.sh: $*" >&2; exit 1; }

[[ -n "${LLAMA_CPP:-}" ]] || die "set LLAMA_CPP to the directory of a llama.cpp build's binaries (llama-mtmd-cli)"
[[ -x "$LLAMA_CPP/llama-mtmd-cli" ]] || die "$LLAMA_CPP/llama-mtmd-cli: not found or not executable"
command -v jq >/dev/null || die "jq is required"
(($# == 3)) || die "usage: LLAMA_CPP=DIR $0 MODEL.gguf MMPROJ.gguf IMAGE"
model=$1 mmproj=$2 image=$3
for f in "$model" "$mmproj" "$image"; do [[ -f "$f" ]] || die "$f: no such file"; done

THREADS=${THREADS:-2}
REPS=${REPS:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ -z "${TROUPE:-}" ]]; then
	TROUPE=$tmp/troupe
	(cd "$root" && go build -o "$TROUPE" ./cmd/troupe) || die "building troupe failed"
fi
text="Describe this image."
# mtmd-cli's chatml rendering of one user turn with the image first, for troupe.
prompt=$'<|im_start|>user\n<__media__>'"$text"$'<|im_end|>\n<|im_start|>assistant\n'

# stamp_ms converts a log timestamp (minutes.seconds.millis.micros) to ms.
stamp_ms() { awk -F. '{ printf "%.3f", $1 * 60000 + $2 * 1000 + $3 + $4 / 1000 }' <<<"$1"; }

l_enc=() l_ttft=() t_enc=() t_ttft=()
for ((r = 0; r < REPS; r++)); do
	log=$tmp/mtmd.log
	"$LLAMA_CPP/llama-mtmd-cli" -m "$model" --mmproj "$mmproj" --image "$image" -p "$text" -n 1 --temp 0 -t "$THREADS" \
		--chat-template chatml -c 8192 -v >"$log" 2>&1 || die "llama-mtmd-cli failed: $(tail -3 "$log")"
	enc=$(grep -o 'mtmd batch encoding done in [0-9]* ms' "$log" | awk '{ s += $6 } END { print s + 0 }')
	begin=$(grep 'For normal use cases' "$log" | tail -1 | cut -d' ' -f1)
	end=$(grep 'llama_perf_context_print: *load time' "$log" | tail -1 | cut -d' ' -f1)
	[[ -n "$begin" && -n "$end" && "$enc" != 0 ]] || die "llama-mtmd-cli's log lacks its timings: $log"
	l_enc+=("$enc")
	l_ttft+=("$(jq -n --argjson a "$(stamp_ms "$begin")" --argjson b "$(stamp_ms "$end")" '$b - $a')")

	out=$("$TROUPE" bench vision -m "$model" --mmproj "$mmproj" --image "$image" -p "$prompt" -r 1 -t "$THREADS" -o json) ||
		die "troupe bench vision failed"
	t_enc+=("$(jq '.mean_encode_ms' <<<"$out")")
	t_ttft+=("$(jq '.mean_ttft_ms' <<<"$out")")
	rows=$(jq '.image_rows' <<<"$out")
	echo "rep $r: encode llama.cpp ${l_enc[-1]} ms, troupe ${t_enc[-1]} ms; ttft llama.cpp ${l_ttft[-1]} ms, troupe ${t_ttft[-1]} ms" >&2
done

mean() { printf '%s\n' "$@" | jq -s 'add / length * 10 | round / 10'; }
ratio() { jq -n --argjson a "$1" --argjson b "$2" 'if $b > 0 then ($a / $b * 100 | round / 100) else null end'; }
le=$(mean "${l_enc[@]}") te=$(mean "${t_enc[@]}") lt=$(mean "${l_ttft[@]}") tt=$(mean "${t_ttft[@]}")
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
echo "machine: $cpu, $(nproc) vCPUs; threads $THREADS; $REPS reps each, alternating; llama.cpp: $LLAMA_CPP"
echo
echo "| projector | image rows | encode troupe ms | encode llama.cpp ms | ratio | TTFT troupe ms | TTFT llama.cpp ms | ratio |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
echo "| $(basename "$mmproj") | $rows | $te | $le | $(ratio "$le" "$te") | $tt | $lt | $(ratio "$lt" "$tt") |"
