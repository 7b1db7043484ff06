// ref-common.h: the llama.cpp set-up the reference dumpers share
// (ref-dump.cpp, kv-ref-dump.cpp, lora-dump.cpp, vision-logits-dump.cpp),
// included from beside them: CPU only, 2 threads.
#pragma once
#include "llama.h"

// refModel loads the model at path onto the CPU (nullptr if it cannot).
static llama_model *refModel(const char *path) {
    auto mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    return llama_model_load_from_file(path, mp);
}

// refContext is a context of n positions decoded in batches of up to n,
// with 2 threads, flash attention on and an f16 KV cache (a Q8_0 one with
// q8); nullptr if it cannot be made.
static llama_context *refContext(llama_model *model, int n, bool q8) {
    auto cp = llama_context_default_params();
    cp.n_ctx = n; cp.n_batch = n; cp.n_ubatch = n;
    cp.n_threads = 2; cp.n_threads_batch = 2;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_ENABLED;
    cp.type_k = q8 ? GGML_TYPE_Q8_0 : GGML_TYPE_F16;
    cp.type_v = q8 ? GGML_TYPE_Q8_0 : GGML_TYPE_F16;
    return llama_init_from_model(model, cp);
}
