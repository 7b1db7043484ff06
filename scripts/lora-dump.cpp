// lora-dump writes llama.cpp's logits of a token sequence with LoRA
// adapters applied, for model's TestLoRAParity: the sequence decoded as one
// batch (CPU, 2 threads, flash attention on, f16 KV cache), every row's
// logits as float32 rows to OUT. Built and run by scripts/lora-ref.sh
// against a llama.cpp build (not part of troupe; never commit one).
//
// Run: lora-dump MODEL OUT IDS [ADAPTER SCALE]...   (IDS: comma-separated token ids)
#include "ref-common.h"
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
int main(int argc, char **argv) {
    if (argc < 4 || (argc - 4) % 2 != 0) { fprintf(stderr, "usage: lora-dump MODEL OUT IDS [ADAPTER SCALE]...\n"); return 2; }
    llama_backend_init();
    llama_model *model = refModel(argv[1]);
    if (!model) return 1;
    std::vector<llama_token> ids;
    for (char *p = argv[3]; *p;) { ids.push_back(strtol(p, &p, 10)); if (*p == ',') p++; }
    llama_context *ctx = refContext(model, 256, false);
    if (!ctx) return 1;
    std::vector<llama_adapter_lora *> adapters;
    std::vector<float> scales;
    for (int i = 4; i + 1 < argc; i += 2) {
        llama_adapter_lora *a = llama_adapter_lora_init(model, argv[i]);
        if (!a) { fprintf(stderr, "lora-dump: cannot load %s\n", argv[i]); return 1; }
        adapters.push_back(a);
        scales.push_back(strtof(argv[i + 1], nullptr));
    }
    if (!adapters.empty() && llama_set_adapters_lora(ctx, adapters.data(), adapters.size(), scales.data()) != 0) return 1;
    llama_batch b = llama_batch_init(256, 0, 1);
    for (size_t p = 0; p < ids.size(); p++) {
        int i = b.n_tokens++;
        b.token[i] = ids[p]; b.pos[i] = p; b.n_seq_id[i] = 1; b.seq_id[i][0] = 0; b.logits[i] = 1;
    }
    if (llama_decode(ctx, b) != 0) return 1;
    int nv = llama_vocab_n_tokens(llama_model_get_vocab(model));
    FILE *f = fopen(argv[2], "wb");
    if (!f) return 1;
    for (int i = 0; i < b.n_tokens; i++) fwrite(llama_get_logits_ith(ctx, i), sizeof(float), nv, f);
    fclose(f);
    return 0;
}
