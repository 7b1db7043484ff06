// kv-ref-dump writes llama.cpp's teacher-forced logits with an f16 or q8_0
// KV cache (flash attention on, 2 threads, CPU), the way
// ../shared/reference made caseN.logits: the prompt as one batch, then one
// token a step, every row's logits as float32. TestKVCacheLlamaCpp
// (model/kvref_test.go) compares troupe's with them.
//
// Build against a llama.cpp build (not part of troupe; never commit one):
//
//	L=/work/peer/llama.cpp
//	g++ -O2 -o /tmp/kv-ref-dump scripts/kv-ref-dump.cpp -I$L/include -I$L/ggml/include \
//	    -L$L/build/bin -lllama -lggml -lggml-base -Wl,-rpath,$L/build/bin
//
// Run: kv-ref-dump MODEL f16|q8_0 PROMPT_LEN OUT ID... (ids: prompt_ids then
// greedy_ids of a reference case), into DIR/<reference>/caseN.<type>, then
// TROUPE_KV_REF=DIR go test ./model -run TestKVCacheLlamaCpp.
// llama.cpp rotates q, k and v by a Walsh-Hadamard matrix around a
// quantized cache (head sizes that are multiples of 64) unless
// LLAMA_ATTN_ROT_DISABLE=1; troupe does the same rotations.
#include "ref-common.h"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
int main(int argc, char **argv) {
    if (argc < 6) { fprintf(stderr, "usage\n"); return 2; }
    const char *path = argv[1];
    bool q8 = strcmp(argv[2], "q8_0") == 0;
    int promptLen = atoi(argv[3]);
    const char *out = argv[4];
    std::vector<llama_token> ids;
    for (int i = 5; i < argc; i++) ids.push_back(atoi(argv[i]));
    llama_backend_init();
    llama_model *model = refModel(path);
    if (!model) return 1;
    llama_context *ctx = refContext(model, 256, q8);
    if (!ctx) return 1;
    int nv = llama_vocab_n_tokens(llama_model_get_vocab(model));
    FILE *f = fopen(out, "wb");
    llama_batch b = llama_batch_init(256, 0, 1);
    for (int start = 0; start < (int)ids.size() - 1;) {
        int end = start == 0 ? promptLen : start + 1;
        b.n_tokens = 0;
        for (int p = start; p < end; p++) {
            int i = b.n_tokens++;
            b.token[i] = ids[p]; b.pos[i] = p; b.n_seq_id[i] = 1; b.seq_id[i][0] = 0; b.logits[i] = 1;
        }
        if (llama_decode(ctx, b) != 0) return 1;
        for (int i = 0; i < end - start; i++) fwrite(llama_get_logits_ith(ctx, i), 4, nv, f);
        start = end;
    }
    fclose(f);
    return 0;
}
