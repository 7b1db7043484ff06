// vision-dump writes what llama.cpp's mtmd makes of image files with a
// projector (mmproj) file, for model/vision's TestParity: for each IMAGE,
// OUTDIR/NAME.pix (the preprocessed tiles, clip_image_f32's float32
// values, tile after tile) and OUTDIR/NAME.emb (the encoder's output
// rows, float32). Images are decoded by mtmd's helper (stb_image) and
// preprocessed by mtmd-image.cpp's preprocessor of the projector's type;
// the encoder runs on the CPU, 2 threads, flash attention off (FA=1: on).
// It uses mtmd's internal headers (clip.h, clip-impl.h, mtmd-image.h),
// whose symbols libmtmd exports. Built and run by scripts/vision-ref.sh
// against a llama.cpp build (not part of troupe; never commit one).
//
// Run: vision-dump MMPROJ OUTDIR IMAGE...
#include "clip.h"
#include "clip-impl.h"
#include "mtmd-image.h"
#include "mtmd-helper.h"
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

static bool write_f32(const std::string &path, const std::vector<float> &v) {
    FILE *f = fopen(path.c_str(), "wb");
    if (!f) return false;
    fwrite(v.data(), sizeof(float), v.size(), f);
    return fclose(f) == 0;
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: vision-dump MMPROJ OUTDIR IMAGE...\n"); return 2; }
    ggml_backend_load_all();
    clip_context_params cp{};
    cp.use_gpu = false;
    cp.flash_attn_type = getenv("FA") && atoi(getenv("FA")) ? CLIP_FLASH_ATTN_TYPE_ENABLED : CLIP_FLASH_ATTN_TYPE_DISABLED;
    cp.image_min_tokens = -1;
    cp.image_max_tokens = -1;
    cp.warmup = false;
    clip_init_result r = clip_init(argv[1], cp);
    clip_ctx *ctx = r.ctx_v;
    if (!ctx) { fprintf(stderr, "vision-dump: cannot load %s\n", argv[1]); return 1; }
    std::unique_ptr<mtmd_image_preprocessor> pre;
    switch (clip_get_projector_type(ctx)) {
        case PROJECTOR_TYPE_GEMMA3: pre = std::make_unique<mtmd_image_preprocessor_fixed_size>(ctx); break;
        case PROJECTOR_TYPE_IDEFICS3: pre = std::make_unique<mtmd_image_preprocessor_idefics3>(ctx); break;
        case PROJECTOR_TYPE_QWEN2VL:
        case PROJECTOR_TYPE_QWEN25VL:
        case PROJECTOR_TYPE_QWEN3VL: pre = std::make_unique<mtmd_image_preprocessor_dyn_size>(ctx); break; // as mtmd.cpp's Qwen-VL types
        default: fprintf(stderr, "vision-dump: projector type not handled here\n"); return 1;
    }
    for (int i = 3; i < argc; i++) {
        mtmd_bitmap *bm = mtmd_helper_bitmap_init_from_file(nullptr, argv[i], false).bitmap; // images only: no context needed
        if (!bm) { fprintf(stderr, "vision-dump: cannot decode %s\n", argv[i]); return 1; }
        clip_image_u8 img;
        img.set_size({(int) mtmd_bitmap_get_nx(bm), (int) mtmd_bitmap_get_ny(bm)}, false);
        const unsigned char *data = mtmd_bitmap_get_data(bm);
        img.cpy_buf(std::vector<uint8_t>(data, data + mtmd_bitmap_get_n_bytes(bm)));
        mtmd_bitmap_free(bm);
        mtmd_image_preproc_out out = pre->preprocess(img);
        std::vector<float> pix, emb;
        std::vector<clip_image_f32 *> tiles;
        if (out.has_overview()) tiles.push_back(&out.overview);
        for (auto &e : out.entries) tiles.push_back(&e);
        for (clip_image_f32 *t : tiles) {
            const auto &b = t->get_ro_buf();
            pix.insert(pix.end(), b.begin(), b.end());
            std::vector<float> e(clip_n_output_tokens(ctx, t) * clip_n_mmproj_embd(ctx));
            if (!clip_image_encode(ctx, 2, t, e)) { fprintf(stderr, "vision-dump: encode failed\n"); return 1; }
            emb.insert(emb.end(), e.begin(), e.end());
        }
        std::string name = argv[i];
        name = name.substr(name.find_last_of('/') + 1);
        name = name.substr(0, name.find_last_of('.'));
        std::string dir = argv[2];
        if (!write_f32(dir + "/" + name + ".pix", pix) || !write_f32(dir + "/" + name + ".emb", emb)) return 1;
        printf("%s: %zu tiles, %zu pixel values, %zu embedding values\n", name.c_str(), tiles.size(), pix.size(), emb.size());
    }
    clip_free(ctx);
    return 0;
}
