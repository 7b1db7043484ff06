// ref-dump makes one reference case the way ../shared/reference's were
// made: llama.cpp (CPU, 2 threads, flash attention on, f16 KV cache)
// tokenizes the prompt (special tokens added and parsed), decodes it as one
// batch, then generates N tokens greedily one per step. It writes every
// row's logits (float32, prompt_ids ++ greedy_ids without the last) to
// OUT.logits and, on stdout, the lines scripts/make-refs.py turns into
// OUT.json: "prompt_ids ...", "greedy_ids ...", "pieces <hex>...",
// "n_vocab N", "min_gap G".
//
// Build against a llama.cpp build (not part of troupe; never commit one):
//
//	L=/work/peer/llama.cpp
//	g++ -O2 -o /tmp/ref-dump scripts/ref-dump.cpp -I$L/include -I$L/ggml/include \
//	    -L$L/build/bin -lllama -lggml -lggml-base -Wl,-rpath,$L/build/bin
//
// Run: ref-dump MODEL PROMPT N OUT [q8_0] (q8_0: a Q8_0 KV cache instead)
#include "ref-common.h"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
int main(int argc, char **argv) {
    if (argc != 5 && argc != 6) { fprintf(stderr, "usage: ref-dump MODEL PROMPT N OUT [q8_0]\n"); return 2; }
    bool q8 = argc == 6 && strcmp(argv[5], "q8_0") == 0;
    const char *path = argv[1], *prompt = argv[2];
    int nGen = atoi(argv[3]);
    std::string out = argv[4];
    llama_backend_init();
    llama_model *model = refModel(path);
    if (!model) return 1;
    const llama_vocab *vocab = llama_model_get_vocab(model);
    llama_context *ctx = refContext(model, 256, q8);
    if (!ctx) return 1;
    int nv = llama_vocab_n_tokens(vocab);
    std::vector<llama_token> ids(256);
    int np = llama_tokenize(vocab, prompt, strlen(prompt), ids.data(), ids.size(), true, true);
    if (np <= 0) return 1;
    ids.resize(np);
    FILE *f = fopen((out + ".logits").c_str(), "wb");
    llama_batch b = llama_batch_init(256, 0, 1);
    std::vector<llama_token> gen;
    double minGap = 1e30;
    int start = 0, end = np;
    for (;;) {
        b.n_tokens = 0;
        for (int p = start; p < end; p++) {
            int i = b.n_tokens++;
            llama_token t = p < np ? ids[p] : gen[p - np];
            b.token[i] = t; b.pos[i] = p; b.n_seq_id[i] = 1; b.seq_id[i][0] = 0; b.logits[i] = 1;
        }
        if (llama_decode(ctx, b) != 0) return 1;
        for (int i = 0; i < end - start; i++) fwrite(llama_get_logits_ith(ctx, i), 4, nv, f);
        const float *last = llama_get_logits_ith(ctx, end - start - 1);
        int best = 0;
        for (int v = 1; v < nv; v++) if (last[v] > last[best]) best = v;
        double second = -1e30;
        for (int v = 0; v < nv; v++) if (v != best && last[v] > second) second = last[v];
        if (last[best] - second < minGap) minGap = last[best] - second;
        gen.push_back(best);
        if ((int)gen.size() == nGen) break;
        start = end;
        end = start + 1;
    }
    fclose(f);
    printf("prompt_ids");
    for (int t : ids) printf(" %d", t);
    printf("\ngreedy_ids");
    for (int t : gen) printf(" %d", t);
    printf("\npieces");
    for (int t : gen) {
        char buf[256];
        int n = llama_token_to_piece(vocab, t, buf, sizeof buf, 0, false);
        printf(" ");
        for (int i = 0; i < n; i++) printf("%02x", (unsigned char)buf[i]);
        if (n == 0) printf("-");
    }
    printf("\nn_vocab %d\nmin_gap %.6g\n", nv, minGap);
    return 0;
}
