# ref-env.sh: the set-up the *-ref.sh scripts share, sourced from the
# repository root: L the llama.cpp build (LLAMA), MODELS, a temporary
# directory $tmp (removed on exit) holding troupe built from this tree, and
# build_dump, which compiles a dumper against L. It never builds llama.cpp.
set -eu
L=${LLAMA:-/work/peer/llama.cpp}
MODELS=${MODELS:-../shared/models}
tmp=$(mktemp -d)
trap 'rm -r "$tmp"' EXIT
go build -o "$tmp/troupe" ./cmd/troupe

# build_dump OUT SRC LIB...: compiles scripts/SRC into $tmp/OUT against L's
# headers, linking the LIBs (-lllama, -lmtmd, ...), then ggml's.
build_dump() {
	out=$1 src=$2
	shift 2
	g++ -O2 -std=c++17 -o "$tmp/$out" "scripts/$src" -I"$L/tools/mtmd" -I"$L/include" -I"$L/ggml/include" \
		-L"$L/build/bin" "$@" -lggml -lggml-base -Wl,-rpath,"$L/build/bin"
}
