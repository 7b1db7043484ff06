// ggml-dequant writes one tensor of a GGUF file dequantized by ggml's own
// to_float (ggml-base's type traits: dequantize_row_mxfp4 and the others)
// to stdout as little-endian float32, for references such as
// scripts/make-refs-mxfp4.py makes.
//
// Build against a llama.cpp build (not part of troupe; never commit one):
//
//	L=/work/peer/llama.cpp
//	g++ -O2 -o /tmp/ggml-dequant scripts/ggml-dequant.cpp -I$L/ggml/include \
//	    -L$L/build/bin -lggml-base -Wl,-rpath,$L/build/bin
//
// Run: ggml-dequant MODEL TENSOR [raw] > OUT.f32 (raw: the tensor's bytes
// as stored instead)
#include "ggml.h"
#include "gguf.h"
#include <cstdio>
#include <vector>
int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) { fprintf(stderr, "usage: ggml-dequant MODEL TENSOR [raw]\n"); return 2; }
    gguf_init_params ip = {true, nullptr};
    gguf_context *g = gguf_init_from_file(argv[1], ip);
    if (!g) { fprintf(stderr, "cannot read %s\n", argv[1]); return 1; }
    int64_t id = gguf_find_tensor(g, argv[2]);
    if (id < 0) { fprintf(stderr, "no tensor %s\n", argv[2]); return 1; }
    ggml_type t = gguf_get_tensor_type(g, id);
    size_t size = gguf_get_tensor_size(g, id);
    const ggml_type_traits *tr = ggml_get_type_traits(t);
    if (!tr->to_float) { fprintf(stderr, "%s: no to_float\n", ggml_type_name(t)); return 1; }
    std::vector<unsigned char> data(size);
    FILE *f = fopen(argv[1], "rb");
    if (!f || fseek(f, (long)(gguf_get_data_offset(g) + gguf_get_tensor_offset(g, id)), SEEK_SET) != 0 ||
        fread(data.data(), 1, size, f) != size) { fprintf(stderr, "cannot read %s's data\n", argv[2]); return 1; }
    fclose(f);
    if (argc == 4) {
        fwrite(data.data(), 1, size, stdout);
        return 0;
    }
    int64_t n = (int64_t)(size / ggml_type_size(t)) * ggml_blck_size(t);
    std::vector<float> out(n);
    tr->to_float(data.data(), out.data(), n);
    fwrite(out.data(), sizeof(float), n, stdout);
    return 0;
}
