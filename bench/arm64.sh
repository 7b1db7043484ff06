#!/usr/bin/env bash
# arm64.sh: real figures on an arm64 machine (an Apple Silicon Mac, AWS
# Graviton, Ampere), for the README's ARM64 table: the kernel benchmarks at
# each ISA level troupe runs on this CPU, then troupe against llama.cpp on
# the float files by make bench-compare. Run from a checkout:
#
#   LLAMA_CPP=/path/to/llama.cpp/build/bin bench/arm64.sh
#
#   LLAMA_CPP   a native llama.cpp build's bin directory (cmake -B build &&
#               cmake --build build --config Release); without it only the
#               kernel benchmarks run
#   THREADS     threads for both engines (default 4)
#   TYPES       weight types for bench-compare (default "F32 F16 BF16 Q4_0 Q8_0 Q4_K_M")
set -euo pipefail

die() { echo "arm64.sh: $*" >&2; exit 1; }
case $(uname -m) in arm64 | aarch64) ;; *) die "run it on an arm64 machine (this is $(uname -m))" ;; esac
cd "$(dirname "$0")/.."
command -v go >/dev/null || die "go not found"
THREADS=${THREADS:-4}
TYPES=${TYPES:-F32 F16 BF16 Q4_0 Q8_0 Q4_K_M}

echo "# $(uname -sm); $( (sysctl -n machdep.cpu.brand_string 2>/dev/null || grep -m1 -i 'model name\|CPU part' /proc/cpuinfo) | tr -s ' ')"
make build >/dev/null
./bin/troupe version
levels=(neon dotprod i8mm)
for level in "${levels[@]}"; do
	echo "## kernels at $level (TROUPE_CPU=$level; a level above this CPU's runs as its best)"
	TROUPE_CPU=$level go test -run '^$' -bench 'MatMulFloat|MatMulQ$|MatMulQLegacy|Attention$' -benchtime 2s ./compute | grep -E '^Benchmark'
done
if [[ -n ${LLAMA_CPP:-} ]]; then
	THREADS=$THREADS make bench-compare LLAMA_CPP="$LLAMA_CPP" BENCH_TYPES="$TYPES"
else
	echo "LLAMA_CPP not set: skipping troupe against llama.cpp (make bench-compare)"
fi
