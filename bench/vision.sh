#!/usr/bin/env bash
# vision.sh: an image's encoding time and the time to the first token of a
# prompt with it, troupe against llama.cpp's mtmd (llama-mtmd-cli) on the
# same files, same machine, same threads, the engines alternating (never at
# the same time: two engines on the same cores would measure each other).
#
# usage: LLAMA_CPP=/path/to/llama.cpp/build/bin bench/vision.sh MODEL.gguf MMPROJ.gguf IMAGE
#        LLAMA_CPP=/path/to/llama.cpp/build/bin bench/vision.sh --shapes [SHAPE...]
#
# The second form makes, with `troupe synth`, random-weight files of the
# projector shapes troupe serves (default all five: gemma3, smolvlm-256m,
# qwen2vl, qwen2.5vl, qwen3vl), each with a tiny text model of its width and a
# synthetic PNG of the size the shape encodes in one go, into VISION_DIR
# (default a temporary folder; kept files are reused), and runs the
# comparison on each.
#
#   LLAMA_CPP   directory holding llama-mtmd-cli (a CPU build of llama.cpp;
#               never part of this repository)
#   THREADS     threads for both engines (default 2)
#   REPS        pairs (llama.cpp then troupe, then the other way round,
#               and so on) (default 2)
#   TTFT_REPS   of those, how many time troupe's first token too (default
#               REPS; troupe's TTFT encodes the image a second time)
#   TROUPE      the troupe binary (default: built from this checkout)
#   MODELS      the test models folder, for stories260K.gguf and the qwen2
#               vocabulary (default $TROUPE_TEST_MODELS or ../shared/models)
#
# Each pair is one process of llama-mtmd-cli (-n 1, greedy, the prompt in
# chatml with the image first) and one process of `troupe bench vision -r 1`
# on the same text. Encode: llama.cpp's "mtmd batch encoding done in N ms"
# lines (one a batch: Idefics3's tiles come one a batch) against troupe's
# Projector.Encode; both without loading. CPU: llama.cpp's process user +
# system time (/usr/bin/time) less that of a run that loads both files and
# stops at an image it cannot decode, so encode, prefill and one token;
# troupe's process CPU time over its encode alone. Time to first token:
# llama.cpp's log timestamps from the line before it reads the image to its
# perf report after the first token (decode, preprocess, encode, prefill,
# one sample), against troupe's image bytes to first token through the
# runtime. The load average is read before each run. Prints one markdown
# row a shape with the means and troupe's ratios (llama.cpp's time over
# troupe's: above 1 is troupe faster).
#
# SmolVLM (Idefics3) encodes an image as tiles of 512 px and an overview,
# one batch each; its row compares one tile's encode. The synthetic text
# model's vocabulary lacks the "<global-img>" token mtmd looks up for the
# overview, so llama-mtmd-cli stops there (after its tiles): that row has
# no llama.cpp TTFT.
set -euo pipefail

. "$(dirname "$0")/lib.sh"

[[ -n "${LLAMA_CPP:-}" ]] || die "set LLAMA_CPP to the directory of a llama.cpp build's binaries (llama-mtmd-cli)"
[[ -x "$LLAMA_CPP/llama-mtmd-cli" ]] || die "$LLAMA_CPP/llama-mtmd-cli: not found or not executable"
command -v jq >/dev/null || die "jq is required"
[[ -x /usr/bin/time ]] || die "/usr/bin/time (GNU time) is required"

THREADS=${THREADS:-2}
REPS=${REPS:-2}
TTFT_REPS=${TTFT_REPS:-$REPS}
MODELS=${MODELS:-${TROUPE_TEST_MODELS:-$root/../shared/models}}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
need_troupe "$tmp"
text="Describe this image."
# mtmd-cli's chatml rendering of one user turn with the image first, for troupe.
prompt=$'<|im_start|>user\n<__media__>'"$text"$'<|im_end|>\n<|im_start|>assistant\n'

# stamp_ms converts a log timestamp (minutes.seconds.millis.micros) to ms.
stamp_ms() { awk -F. '{ printf "%.3f", $1 * 60000 + $2 * 1000 + $3 + $4 / 1000 }' <<<"$1"; }
loadavg() { cut -d' ' -f1 /proc/loadavg; }
# cpu_ms reads GNU time's "%U %S" line (its last: a failed command's
# status line comes first) as milliseconds.
cpu_ms() { tail -1 "$1" | awk '{ printf "%.0f", ($1 + $2) * 1000 }'; }
mean() { printf '%s\n' "$@" | jq -s 'add / length * 10 | round / 10'; }
ratio() { jq -n --argjson a "$1" --argjson b "$2" 'if $b > 0 then ($a / $b * 100 | round / 100) else null end'; }

# mtmd runs llama-mtmd-cli on model, mmproj, image; its log in $tmp/mtmd.log,
# its CPU time in $tmp/mtmd.cpu.
mtmd() {
	/usr/bin/time -f '%U %S' -o "$tmp/mtmd.cpu" "$LLAMA_CPP/llama-mtmd-cli" -m "$1" --mmproj "$2" --image "$3" -p "$text" \
		-n 1 --temp 0 -t "$THREADS" --chat-template chatml -c 8192 -v >"$tmp/mtmd.log" 2>&1
}

# compare runs the pairs on one set of files; tiles > 0: the row is one
# tile's encode (troupe's encode over that many encodes, llama.cpp's batches'
# mean) and llama-mtmd-cli may fail after them.
compare() {
	local model=$1 mmproj=$2 image=$3 name=$4 tiles=${5:-0}
	mtmd "$model" "$mmproj" "$tmp/not-an-image.png" || true
	local load_cpu
	load_cpu=$(cpu_ms "$tmp/mtmd.cpu")
	local l_enc=() l_cpu=() l_ttft=() t_enc=() t_cpu=() t_ttft=() loads=() r out enc rows begin end ttft_flag
	# one_llama and one_troupe run one side of pair r; the side that goes first
	# alternates from pair to pair (the engine run just before leaves the
	# caches and the clock in a state that favours neither in the mean).
	one_llama() {
		loads+=("$(loadavg)")
		if ! mtmd "$model" "$mmproj" "$image" && ((tiles == 0)); then
			die "llama-mtmd-cli failed: $(tail -3 "$tmp/mtmd.log")"
		fi
		if ((tiles > 0)); then
			enc=$(grep -o 'mtmd batch encoding done in [0-9]* ms' "$tmp/mtmd.log" | awk '{ s += $6; n++ } END { if (n) printf "%.1f", s / n }')
			l_cpu+=("$(jq -n --argjson a "$(cpu_ms "$tmp/mtmd.cpu")" --argjson l "$load_cpu" --argjson n "$(grep -c 'mtmd batch encoding done' "$tmp/mtmd.log")" '($a - $l) / $n | round')")
		else
			enc=$(grep -o 'mtmd batch encoding done in [0-9]* ms' "$tmp/mtmd.log" | awk '{ s += $6 } END { print s + 0 }')
			l_cpu+=("$(($(cpu_ms "$tmp/mtmd.cpu") - load_cpu))")
			begin=$(grep 'For normal use cases' "$tmp/mtmd.log" | tail -1 | cut -d' ' -f1)
			end=$(grep 'llama_perf_context_print: *load time' "$tmp/mtmd.log" | tail -1 | cut -d' ' -f1)
			[[ -n "$begin" && -n "$end" ]] || die "llama-mtmd-cli's log lacks its timings: $(tail -3 "$tmp/mtmd.log")"
			l_ttft+=("$(jq -n --argjson a "$(stamp_ms "$begin")" --argjson b "$(stamp_ms "$end")" '$b - $a')")
		fi
		[[ -n "$enc" && "$enc" != 0 ]] || die "llama-mtmd-cli encoded nothing: $(tail -3 "$tmp/mtmd.log")"
		l_enc+=("$enc")
	}
	one_troupe() {
		loads+=("$(loadavg)")
		ttft_flag=true
		((r < TTFT_REPS && tiles == 0)) || ttft_flag=false
		out=$("$TROUPE" bench vision -m "$model" --mmproj "$mmproj" --image "$image" -p "$prompt" -r 1 -t "$THREADS" --ttft="$ttft_flag" -o json) ||
			die "troupe bench vision failed"
		rows=$(jq '.image_rows' <<<"$out")
		if ((tiles > 0)); then
			t_enc+=("$(jq --argjson n "$tiles" '.mean_encode_ms / $n * 10 | round / 10' <<<"$out")")
			t_cpu+=("$(jq --argjson n "$tiles" '.mean_encode_cpu_ms / $n | round' <<<"$out")")
		else
			t_enc+=("$(jq '.mean_encode_ms' <<<"$out")")
			t_cpu+=("$(jq '.mean_encode_cpu_ms | round' <<<"$out")")
		fi
	}
	for ((r = 0; r < REPS; r++)); do
		if ((r % 2 == 0)); then one_llama && one_troupe; else one_troupe && one_llama; fi
		local lt1=- tt1=-
		((${#l_ttft[@]} > r)) && lt1=${l_ttft[r]}
		if [[ $ttft_flag == true ]]; then
			t_ttft+=("$(jq '.mean_ttft_ms' <<<"$out")")
			tt1="${t_ttft[-1]} ($(jq '.mean_ttft_cpu_ms | round' <<<"$out") CPU-ms)"
		fi
		echo "$name pair $r: encode llama.cpp ${l_enc[-1]} ms (${l_cpu[-1]} CPU-ms), troupe ${t_enc[-1]} ms (${t_cpu[-1]} CPU-ms);" \
			"ttft llama.cpp $lt1 ms, troupe $tt1 ms; load ${loads[-2]} / ${loads[-1]}" >&2
	done
	local le te lc tc lt=- tt=- rt=-
	le=$(mean "${l_enc[@]}") te=$(mean "${t_enc[@]}") lc=$(mean "${l_cpu[@]}") tc=$(mean "${t_cpu[@]}")
	if ((${#l_ttft[@]} > 0 && ${#t_ttft[@]} > 0)); then
		# llama.cpp's TTFT over the same pairs as troupe's (the first TTFT_REPS).
		lt=$(mean "${l_ttft[@]:0:${#t_ttft[@]}}") tt=$(mean "${t_ttft[@]}") rt=$(ratio "$lt" "$tt")
	fi
	echo "| $name | $rows | $te | $le | $(ratio "$le" "$te") | $tc | $lc | $(ratio "$lc" "$tc") | $tt | $lt | $rt | $(printf '%s ' "${loads[@]}")|"
}

# png W H FILE writes a synthetic RGB PNG (a smooth pattern) with python3's
# zlib, no imaging library needed.
png() {
	python3 - "$@" <<'EOF'
import struct, sys, zlib
w, h, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
raw = b''.join(b'\0' + bytes(v for x in range(w) for v in ((x * 7 + y * 3) % 256, (x * y) % 256, (x + 2 * y) % 256)) for y in range(h))
chunk = lambda t, d: struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d))
open(path, 'wb').write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))
EOF
}

# shape makes (if absent) and compares one projector shape's files.
shape() {
	local s=$1 dir=$VISION_DIR tm tdim w h tiles=0
	case $s in
	gemma3) tm=$MODELS/stories260K.gguf tdim=64 w=640 h=480 ;;
	smolvlm-256m) tm=$MODELS/stories260K.gguf tdim=64 w=1024 h=256 tiles=5 ;; # 2048×512: 4 tiles and the overview
	qwen2.5vl | qwen2vl) tm=$dir/qwen2vl-tiny.gguf tdim=256 w=560 h=560 ;;
	qwen3vl) tm=$dir/qwen3vl-tiny-ds3.gguf tdim=256 w=768 h=768 ;; # three deepstack layers, as the projector
	*) die "shape $s: want gemma3, smolvlm-256m, qwen2vl, qwen2.5vl or qwen3vl" ;;
	esac
	[[ -f $dir/$s-mmproj.gguf ]] || "$TROUPE" synth --projector "$s" --text-dim "$tdim" -o "$dir/$s-mmproj.gguf" >&2
	if [[ ! -f $tm ]]; then
		[[ $tm == "$dir"/* ]] || die "$tm: no such file (set MODELS)"
		"$TROUPE" synth --shape "$(basename "$tm" .gguf)" --type Q8_0 --vocab "$MODELS/synthetic/synth-qwen2-tiny256-Q8_0.gguf" -o "$tm" >&2
	fi
	[[ -f $dir/$s.png ]] || png "$w" "$h" "$dir/$s.png"
	compare "$tm" "$dir/$s-mmproj.gguf" "$dir/$s.png" "$s" "$tiles"
}

echo junk >"$tmp/not-an-image.png"
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
header() {
	echo "machine: $cpu, $(nproc) vCPUs; threads $THREADS; $REPS pairs each, alternating; llama.cpp: $LLAMA_CPP"
	echo
	echo "| projector | image rows | encode troupe ms | encode llama.cpp ms | ratio | encode troupe CPU-ms | llama.cpp CPU-ms | ratio | TTFT troupe ms | TTFT llama.cpp ms | ratio | load averages |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
}
if [[ "${1:-}" == --shapes ]]; then
	shift
	(($# > 0)) || set -- gemma3 smolvlm-256m qwen2vl qwen2.5vl qwen3vl
	VISION_DIR=${VISION_DIR:-$tmp}
	mkdir -p "$VISION_DIR"
	rows_out=()
	for s in "$@"; do rows_out+=("$(shape "$s")"); done
	header
	printf '%s\n' "${rows_out[@]}"
	exit 0
fi
(($# == 3)) || die "usage: LLAMA_CPP=DIR $0 MODEL.gguf MMPROJ.gguf IMAGE, or $0 --shapes [SHAPE...]"
for f in "$1" "$2" "$3"; do [[ -f "$f" ]] || die "$f: no such file"; done
row=$(compare "$1" "$2" "$3" "$(basename "$2")")
header
echo "$row"
