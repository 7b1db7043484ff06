#!/usr/bin/env bash
# mmap.sh: a model run under memory limits below its size, so that its
# weights come from the mapped file, evicted and read again by the OS.
#
# usage: bench/mmap.sh MODEL.gguf [LIMIT...]
#
#   LIMIT       cgroup memory limits, in bytes or with a K, M or G suffix
#               (default: 3G 1.5G 1G); "none" runs without one
#   BASE        the limit of the first row and of the reference tokens
#               (default none; a limit keeps a model near the machine's size
#               from pressing on everything else)
#   LLAMA_CPP   directory holding llama-bench and llama-batched-bench: they
#               run on the same file under the same limit (optional).
#               llama-bench repacks Q4_K weights into memory of its own as
#               troupe's "all" does; llama-batched-bench runs with --no-repack
#               (one sequence), reading every weight from the mapping
#   THREADS     threads for both engines (default 2)
#   PP, TG      test sizes (default 512 and 128); REPS repetitions (default 1)
#   NTOK        greedy tokens compared with the unlimited run (default 32)
#   REPACK      troupe's --repack (default auto, which chooses from the limit)
#   TROUPE      the troupe binary (default: built from this checkout)
#
# Each run is a fresh cgroup v1 memory group (/sys/fs/cgroup/memory/NAME)
# holding only that process; page cache counts against its limit, and the
# model file's cached pages are dropped (posix_fadvise DONTNEED) before
# each run so that none are charged elsewhere. It prints one markdown row per
# limit: troupe's pp and tg t/s, whether its greedy tokens equal the
# unlimited run's, the group's peak usage and page faults, and llama.cpp's
# pp and tg under the same limit, repacking and not ("OOM": killed at the
# limit). Where the memory controller is not
# writable (no root, cgroup v2 only) it says so and exits 0. Needs jq and
# python3.
set -euo pipefail

. "$(dirname "$0")/lib.sh"

(($# > 0)) || die "usage: $0 MODEL.gguf [LIMIT...]"
model=$1
shift
[[ -f "$model" ]] || die "$model: no such file"
limits=("$@")
((${#limits[@]} > 0)) || limits=(3G 1.5G 1G)
cgroot=/sys/fs/cgroup/memory
if ! [[ -w $cgroot && -f $cgroot/memory.limit_in_bytes ]] || ! mkdir "$cgroot/troupe-mmap-probe-$$" 2>/dev/null; then
	echo "mmap.sh: skipped: no writable cgroup v1 memory controller at $cgroot"
	exit 0
fi
rmdir "$cgroot/troupe-mmap-probe-$$"
command -v jq >/dev/null || die "jq is required"

THREADS=${THREADS:-2}
PP=${PP:-512}
TG=${TG:-128}
REPS=${REPS:-1}
NTOK=${NTOK:-32}
REPACK=${REPACK:-auto}
tmp=$(mktemp -d)
cleanup() {
	rmdir "$cgroot"/troupe-mmap-$$-* 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
need_troupe "$tmp"

bytes() { # 1.5G -> 1610612736
	python3 -c 'import sys; s = sys.argv[1]; m = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
print(int(float(s[:-1]) * m[s[-1]]) if s[-1] in m else int(s))' "$1"
}
evict() { python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$model"; }

# limited LIMIT CMD...: runs CMD (a command or a function) in a fresh
# memory group limited to LIMIT bytes ("none": no limit), leaving the
# group's peak usage and major faults in $tmp/peak and $tmp/faults. Call it
# in a subshell ($(...)): the subshell joins the group for the run.
limited() {
	local limit=$1 cg=$cgroot/troupe-mmap-$$-$BASHPID rc=0
	shift
	mkdir "$cg"
	[[ $limit == none ]] || echo "$limit" >"$cg/memory.limit_in_bytes"
	evict
	echo $BASHPID >"$cg/cgroup.procs"
	"$@" || rc=$?
	echo $BASHPID >"$cgroot/cgroup.procs"
	cat "$cg/memory.max_usage_in_bytes" >"$tmp/peak"
	awk '$1 == "total_pgmajfault" { print $2 }' "$cg/memory.stat" >"$tmp/faults"
	rmdir "$cg"
	return $rc
}

greedy() { # greedy token ids of a fixed prompt
	"$TROUPE" run -m "$model" -p "Once upon a time, in a land far away," -n "$NTOK" --temp 0 -t "$THREADS" \
		--repack "$REPACK" --output json 2>>"$tmp/troupe.log" | jq -c .ids
}

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
echo "machine: $cpu, $(nproc) vCPUs, $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo); threads $THREADS"
echo "model: $model ($(du -h --apparent-size "$model" | cut -f1)); troupe --repack $REPACK; tokens compared: $NTOK"
echo
base_name=${BASE:-none}
BASE=$base_name
[[ $BASE == none ]] || BASE=$(bytes "$BASE")
want=$(limited "$BASE" greedy) || die "the unlimited run failed: $(tail -3 "$tmp/troupe.log")"
echo "| limit | troupe pp$PP t/s | troupe tg$TG t/s | greedy tokens | peak usage | major faults | llama-bench pp$PP | llama-bench tg$TG | llama.cpp --no-repack pp$PP | --no-repack tg$TG |"
echo "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|"
for l in base "${limits[@]}"; do
	limit=$BASE
	[[ $l == base ]] || limit=$(bytes "$l")
	same="-"
	if [[ $l != base ]]; then
		if got=$(limited "$limit" greedy); then
			if [[ $got == "$want" ]]; then same=equal; else same="DIFFER: $got vs $want"; fi
		elif (($? == 137)); then
			same=OOM
		else
			same=failed
		fi
	fi
	t_pp=failed t_tg=failed
	if tb=$(limited "$limit" "$TROUPE" bench model -m "$model" -p "$PP" -n "$TG" -r "$REPS" -t "$THREADS" --repack "$REPACK" -o json 2>>"$tmp/troupe.log"); then
		t_pp=$(jq "[.[] | select(.n_prompt == $PP)][0].avg_ts * 100 | round / 100" <<<"$tb")
		t_tg=$(jq "[.[] | select(.n_gen == $TG)][0].avg_ts * 100 | round / 100" <<<"$tb")
	elif (($? == 137)); then
		t_pp=OOM t_tg=OOM
	fi
	peak=$(awk '{ printf "%.2f GiB", $1 / 1073741824 }' "$tmp/peak")
	faults=$(cat "$tmp/faults")
	l_pp=- l_tg=- n_pp=- n_tg=-
	if [[ -n "${LLAMA_CPP:-}" ]]; then
		l_pp=failed l_tg=failed
		if lb=$(limited "$limit" "$LLAMA_CPP/llama-bench" -m "$model" -p "$PP" -n "$TG" -r "$REPS" -t "$THREADS" -o json 2>>"$tmp/llama.log"); then
			l_pp=$(jq "[.[] | select(.n_prompt == $PP and .n_gen == 0)][0].avg_ts * 100 | round / 100" <<<"$lb")
			l_tg=$(jq "[.[] | select(.n_gen == $TG and .n_prompt == 0)][0].avg_ts * 100 | round / 100" <<<"$lb")
		elif (($? == 137)); then
			l_pp=OOM l_tg=OOM
		fi
		n_pp=failed n_tg=failed
		if nb=$(limited "$limit" "$LLAMA_CPP/llama-batched-bench" -m "$model" -c $((PP + TG + 16)) -npp "$PP" -ntg "$TG" -npl 1 \
			-t "$THREADS" --no-repack --output-format jsonl 2>>"$tmp/llama.log"); then
			n_pp=$(grep '^{' <<<"$nb" | tail -1 | jq '.speed_pp * 100 | round / 100')
			n_tg=$(grep '^{' <<<"$nb" | tail -1 | jq '.speed_tg * 100 | round / 100')
		elif (($? == 137)); then
			n_pp=OOM n_tg=OOM
		fi
	fi
	[[ $l != base ]] || l="$base_name (base)"
	echo "| $l | $t_pp | $t_tg | $same | $peak | $faults | $l_pp | $l_tg | $n_pp | $n_tg |"
done
grep -h '^weights:' "$tmp/troupe.log" | sort | uniq -c | sed 's/^/troupe: /' || true
