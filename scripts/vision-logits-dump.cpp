// vision-logits-dump writes llama.cpp's teacher-forced logits of a prompt
// with one image, and its greedy continuation, for model's
// TestVisionLogitsParity. The prompt (one "<__media__>" marker) is
// tokenized by mtmd_tokenize (add_special, parse_special); text chunks are
// decoded by llama_decode with logits for every position, image chunks are
// encoded by mtmd_encode_chunk and decoded by mtmd_helper_decode_image_chunk
// (what mtmd_helper_eval_chunks does per chunk; it asks for the last
// position's logits only, hence the loop here). One batch per chunk, CPU,
// 2 threads, flash attention on (the text model, as lora-dump) and off
// (the encoder, as vision-dump), f16 KV cache. With CAUSAL=1 the image's
// rows are decoded by a batch of our own with causal attention, where
// mtmd's helper switches it off for Gemma 3 projectors
// (mtmd_decode_use_non_causal).
//
// Writes OUT.ids (int32 per position: the token id, -1 for an image row;
// positions are 0, 1, 2, ...), OUT.emb (the image's rows, float32, from
// the encoder), OUT.logits (float32 vocab-wide rows, one per text
// position, in order) and OUT.gen (int32: NGEN greedy ids after the
// prompt, each decoded alone). For an M-RoPE model (Qwen-VL projectors,
// mtmd_decode_use_mrope) also OUT.pos: int32 (t, h, w) per position, the
// rope positions mtmd gives (text at (p, p, p); an image's rows at
// (p0, p0+row, p0+column), the text after it from p0 + max(rows,
// columns)). Built and run by scripts/vision-logits-ref.sh
// against a llama.cpp build (not part of troupe; never commit one).
//
// Run: vision-logits-dump MODEL MMPROJ IMAGE PROMPT NGEN OUT
#include "ref-common.h"
#include "mtmd.h"
#include "mtmd-helper.h"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

template <typename T> static bool write_vec(const std::string &path, const std::vector<T> &v) {
    FILE *f = fopen(path.c_str(), "wb");
    if (!f) return false;
    fwrite(v.data(), sizeof(T), v.size(), f);
    return fclose(f) == 0;
}

int main(int argc, char **argv) {
    if (argc != 7) { fprintf(stderr, "usage: vision-logits-dump MODEL MMPROJ IMAGE PROMPT NGEN OUT\n"); return 2; }
    const bool causal = getenv("CAUSAL") && atoi(getenv("CAUSAL"));
    const int ngen = atoi(argv[5]);
    const std::string out = argv[6];
    llama_backend_init();
    llama_model *model = refModel(argv[1]);
    if (!model) return 1;
    llama_context *lctx = refContext(model, 512, false);
    if (!lctx) return 1;
    auto mcp = mtmd_context_params_default();
    mcp.use_gpu = false;
    mcp.print_timings = false;
    mcp.n_threads = 2;
    mcp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    mcp.warmup = false;
    mtmd_context *mctx = mtmd_init_from_file(argv[2], model, mcp);
    if (!mctx) { fprintf(stderr, "vision-logits-dump: cannot load %s\n", argv[2]); return 1; }
    mtmd_bitmap *bm = mtmd_helper_bitmap_init_from_file(mctx, argv[3], false).bitmap;
    if (!bm) { fprintf(stderr, "vision-logits-dump: cannot decode %s\n", argv[3]); return 1; }
    mtmd_input_chunks *chunks = mtmd_input_chunks_init();
    mtmd_input_text text{argv[4], strlen(argv[4]), true, true};
    const mtmd_bitmap *bms[] = {bm};
    if (mtmd_tokenize(mctx, chunks, &text, bms, 1) != 0) { fprintf(stderr, "vision-logits-dump: tokenize failed\n"); return 1; }

    const int nv = llama_vocab_n_tokens(llama_model_get_vocab(model));
    const int nembd = llama_model_n_embd_inp(model);
    const bool mrope = mtmd_decode_use_mrope(mctx);
    std::vector<int32_t> ids, pos;
    std::vector<float> logits, emb;
    llama_pos n_past = 0;
    for (size_t c = 0; c < mtmd_input_chunks_size(chunks); c++) {
        const mtmd_input_chunk *ch = mtmd_input_chunks_get(chunks, c);
        if (mtmd_input_chunk_get_type(ch) == MTMD_INPUT_CHUNK_TYPE_TEXT) {
            size_t n;
            const llama_token *toks = mtmd_input_chunk_get_tokens_text(ch, &n);
            llama_batch b = llama_batch_init(n, 0, 1);
            for (size_t i = 0; i < n; i++) {
                b.token[i] = toks[i]; b.pos[i] = n_past + i; b.n_seq_id[i] = 1; b.seq_id[i][0] = 0; b.logits[i] = 1;
                ids.push_back(toks[i]);
                for (int k = 0; k < 3; k++) pos.push_back(n_past + i);
            }
            b.n_tokens = n;
            if (llama_decode(lctx, b) != 0) return 1;
            for (size_t i = 0; i < n; i++) {
                const float *l = llama_get_logits_ith(lctx, i);
                logits.insert(logits.end(), l, l + nv);
            }
            llama_batch_free(b);
            n_past += n;
            continue;
        }
        if (mtmd_encode_chunk(mctx, ch) != 0) { fprintf(stderr, "vision-logits-dump: encode failed\n"); return 1; }
        float *e = mtmd_get_output_embd(mctx);
        const int n = mtmd_input_chunk_get_n_tokens(ch);
        if (mrope) {
            const mtmd_image_tokens *it = mtmd_input_chunk_get_tokens_image(ch);
            for (int i = 0; i < n; i++) {
                mtmd_decoder_pos p = mtmd_image_tokens_get_decoder_pos(it, n_past, i);
                pos.push_back(p.t); pos.push_back(p.y); pos.push_back(p.x);
            }
        } else if (mtmd_input_chunk_get_n_pos(ch) != n) { fprintf(stderr, "vision-logits-dump: image of %d tokens at %d positions\n", n, (int) mtmd_input_chunk_get_n_pos(ch)); return 1; }
        emb.insert(emb.end(), e, e + (size_t) n * nembd);
        for (int i = 0; i < n; i++) ids.push_back(-1);
        if (causal && !mrope) {
            llama_batch b = llama_batch_init(n, nembd, 1);
            memcpy(b.embd, e, sizeof(float) * n * nembd);
            for (int i = 0; i < n; i++) { b.pos[i] = n_past + i; b.n_seq_id[i] = 1; b.seq_id[i][0] = 0; b.logits[i] = 0; }
            b.n_tokens = n;
            if (llama_decode(lctx, b) != 0) return 1;
            llama_batch_free(b);
            n_past += n;
        } else if (mtmd_helper_decode_image_chunk(mctx, lctx, ch, e, n_past, 0, 512, &n_past, nullptr, nullptr) != 0) {
            return 1;
        }
    }
    // Greedy continuation from the last text position's logits.
    std::vector<int32_t> gen;
    const float *last = logits.data() + logits.size() - nv;
    std::vector<float> row(last, last + nv);
    for (int g = 0; g < ngen; g++) {
        int best = 0;
        for (int j = 1; j < nv; j++) if (row[j] > row[best]) best = j;
        gen.push_back(best);
        llama_batch b = llama_batch_init(1, 0, 1);
        for (int k = 0; k < 3; k++) pos.push_back(n_past);
        b.token[0] = best; b.pos[0] = n_past++; b.n_seq_id[0] = 1; b.seq_id[0][0] = 0; b.logits[0] = 1; b.n_tokens = 1;
        if (llama_decode(lctx, b) != 0) return 1;
        const float *l = llama_get_logits_ith(lctx, 0);
        row.assign(l, l + nv);
        llama_batch_free(b);
    }
    if (mrope && !write_vec(out + ".pos", pos)) return 1;
    if (!write_vec(out + ".ids", ids) || !write_vec(out + ".emb", emb) || !write_vec(out + ".logits", logits) || !write_vec(out + ".gen", gen)) return 1;
    printf("%zu positions (%zu image rows), %zu logit rows, greedy", ids.size(), emb.size() / nembd, logits.size() / nv);
    for (int32_t g : gen) printf(" %d", g);
    printf("\n");
    mtmd_input_chunks_free(chunks);
    mtmd_bitmap_free(bm);
    mtmd_free(mctx);
    llama_free(lctx);
    llama_model_free(model);
    return 0;
}
