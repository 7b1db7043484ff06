// vision-ggml-dump computes image embeddings with clip.cpp's SigLIP graph
// for gemma3 and idefics3 projectors (tools/mtmd/models/siglip.cpp,
// build_vit, build_attn without flash attention), transcribed op for op
// onto libggml alone, on the CPU with 2 threads: the stand-in for
// scripts/vision-dump.cpp where a llama.cpp build has libggml but not yet
// libmtmd. It reads preprocessed tiles (float32, RGB interleaved, as
// vision-dump's .pix) and writes the rows (float32). FA=1 takes clip's
// flash-attention path (F16 K and V: llama-server's default on the CPU);
// the references are without it. NL=n runs n blocks
// and writes the residual stream instead (to find where two encoders
// part). Built and run by scripts/vision-ref.sh (GGML_ONLY=1); never
// commit a llama.cpp build.
//
// Run: vision-ggml-dump MMPROJ PIX OUT
#include "ggml.h"
#include "ggml-cpu.h"
#include "gguf.h"
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <string>
#include <vector>
static ggml_context *wctx;
static ggml_tensor *T(const std::string &n) { return ggml_get_tensor(wctx, n.c_str()); }
int main(int argc, char **argv) {
    ggml_cpu_init();
    gguf_init_params gp = {false, &wctx};
    gguf_context *g = gguf_init_from_file(argv[1], gp);
    if (!g) return 1;
    auto u32 = [&](const char *k) { return (int) gguf_get_val_u32(g, gguf_find_key(g, k)); };
    std::string type = gguf_get_val_str(g, gguf_find_key(g, "clip.projector_type"));
    int n_embd = u32("clip.vision.embedding_length"), n_head = u32("clip.vision.attention.head_count");
    int n_layer = u32("clip.vision.block_count"), isz = u32("clip.vision.image_size"), ps = u32("clip.vision.patch_size");
    int merge = gguf_find_key(g, "clip.vision.projector.scale_factor") >= 0 ? u32("clip.vision.projector.scale_factor") : 4;
    float eps = gguf_get_val_f32(g, gguf_find_key(g, "clip.vision.attention.layer_norm_epsilon"));
    int d_head = n_embd / n_head, side = isz / ps, n_pos = side * side;
    float kq_scale = 1.0f / sqrtf((float) d_head);
    FILE *f = fopen(argv[2], "rb");
    std::vector<float> pix;
    float v;
    while (fread(&v, 4, 1, f) == 1) pix.push_back(v);
    fclose(f);
    int per = isz * isz * 3, ntiles = pix.size() / per;
    std::vector<float> out;
    for (int t = 0; t < ntiles; t++) {
        ggml_init_params ip = {(size_t) (getenv("MEM_MB") ? atoi(getenv("MEM_MB")) : 512) << 20, nullptr, false}; // MEM_MB: every intermediate is kept
        ggml_context *ctx0 = ggml_init(ip);
        ggml_tensor *raw = ggml_new_tensor_4d(ctx0, GGML_TYPE_F32, isz, isz, 3, 1);
        float *rd = (float *) raw->data;
        for (int y = 0; y < isz; y++) for (int x = 0; x < isz; x++) for (int c = 0; c < 3; c++)
            rd[c * isz * isz + y * isz + x] = pix[t * per + 3 * (y * isz + x) + c];
        ggml_tensor *inp = ggml_conv_2d(ctx0, T("v.patch_embd.weight"), raw, ps, ps, 0, 0, 1, 1);
        inp = ggml_reshape_3d(ctx0, inp, n_pos, n_embd, 1);
        inp = ggml_cont(ctx0, ggml_transpose(ctx0, inp));
        inp = ggml_add(ctx0, inp, T("v.patch_embd.bias"));
        inp = ggml_add(ctx0, inp, T("v.position_embd.weight"));
        inp = ggml_reshape_2d(ctx0, inp, n_embd, n_pos);
        ggml_tensor *inpL = inp;
        auto norm = [&](ggml_tensor *x, const std::string &p) {
            x = ggml_norm(ctx0, x, eps);
            x = ggml_mul(ctx0, x, T(p + ".weight"));
            return ggml_add(ctx0, x, T(p + ".bias"));
        };
        int nl = getenv("NL") ? atoi(getenv("NL")) : n_layer;
        for (int il = 0; il < nl; il++) {
            std::string b = "v.blk." + std::to_string(il) + ".";
            ggml_tensor *cur = norm(inpL, b + "ln1");
            ggml_tensor *Q = ggml_add(ctx0, ggml_mul_mat(ctx0, T(b + "attn_q.weight"), cur), T(b + "attn_q.bias"));
            ggml_tensor *K = ggml_add(ctx0, ggml_mul_mat(ctx0, T(b + "attn_k.weight"), cur), T(b + "attn_k.bias"));
            ggml_tensor *V = ggml_add(ctx0, ggml_mul_mat(ctx0, T(b + "attn_v.weight"), cur), T(b + "attn_v.bias"));
            Q = ggml_reshape_4d(ctx0, Q, d_head, n_head, n_pos, 1);
            K = ggml_reshape_4d(ctx0, K, d_head, n_head, n_pos, 1);
            V = ggml_reshape_4d(ctx0, V, d_head, n_head, n_pos, 1);
            ggml_tensor *q = ggml_permute(ctx0, Q, 0, 2, 1, 3);
            ggml_tensor *k = ggml_permute(ctx0, K, 0, 2, 1, 3);
            if (getenv("FA") && atoi(getenv("FA"))) { // build_attn's flash path (llama-server's default on the CPU)
                ggml_tensor *v = ggml_permute(ctx0, V, 0, 2, 1, 3);
                k = ggml_cast(ctx0, k, GGML_TYPE_F16);
                v = ggml_cast(ctx0, v, GGML_TYPE_F16);
                cur = ggml_flash_attn_ext(ctx0, q, k, v, nullptr, kq_scale, 0.0f, 0.0f);
                ggml_flash_attn_ext_set_prec(cur, GGML_PREC_F32);
                cur = ggml_reshape_2d(ctx0, cur, cur->ne[0] * cur->ne[1], cur->ne[2] * cur->ne[3]);
            } else {
                ggml_tensor *vv = ggml_cont(ctx0, ggml_permute(ctx0, V, 1, 2, 0, 3));
                ggml_tensor *kq = ggml_mul_mat(ctx0, k, q);
                kq = ggml_soft_max_ext(ctx0, kq, nullptr, kq_scale, 0.0f);
                ggml_tensor *kqv = ggml_mul_mat(ctx0, vv, kq);
                cur = ggml_permute(ctx0, kqv, 0, 2, 1, 3);
                cur = ggml_cont_2d(ctx0, cur, cur->ne[0] * cur->ne[1], cur->ne[2] * cur->ne[3]);
            }
            cur = ggml_add(ctx0, ggml_mul_mat(ctx0, T(b + "attn_out.weight"), cur), T(b + "attn_out.bias"));
            cur = ggml_add(ctx0, cur, inpL);
            inpL = cur;
            cur = norm(cur, b + "ln2");
            cur = ggml_add(ctx0, ggml_mul_mat(ctx0, T(b + "ffn_up.weight"), cur), T(b + "ffn_up.bias"));
            cur = ggml_gelu(ctx0, cur);
            cur = ggml_add(ctx0, ggml_mul_mat(ctx0, T(b + "ffn_down.weight"), cur), T(b + "ffn_down.bias"));
            cur = ggml_add(ctx0, inpL, cur);
            inpL = cur;
        }
        ggml_tensor *cur = norm(inpL, "v.post_ln");
        if (getenv("NL")) cur = inpL;
        if (getenv("NL")) {} else if (type == "gemma3") {
            cur = ggml_transpose(ctx0, cur);
            cur = ggml_cont_4d(ctx0, cur, side, side, n_embd, 1);
            cur = ggml_pool_2d(ctx0, cur, GGML_OP_POOL_AVG, merge, merge, merge, merge, 0, 0);
            cur = ggml_reshape_3d(ctx0, cur, cur->ne[0] * cur->ne[0], n_embd, 1);
            cur = ggml_cont(ctx0, ggml_transpose(ctx0, cur));
            cur = ggml_rms_norm(ctx0, cur, eps);
            cur = ggml_mul(ctx0, cur, T("mm.soft_emb_norm.weight"));
            cur = ggml_mul_mat(ctx0, ggml_cont(ctx0, ggml_transpose(ctx0, T("mm.input_projection.weight"))), cur);
        } else {
            int s = merge, w = side, h = side;
            cur = ggml_reshape_3d(ctx0, cur, n_embd, w, h);
            cur = ggml_reshape_3d(ctx0, cur, n_embd * s, w / s, h);
            cur = ggml_permute(ctx0, cur, 0, 2, 1, 3);
            cur = ggml_cont_3d(ctx0, cur, n_embd * s * s, h / s, w / s);
            cur = ggml_permute(ctx0, cur, 0, 2, 1, 3);
            cur = ggml_cont_2d(ctx0, cur, cur->ne[0], cur->ne[1] * cur->ne[2]);
            cur = ggml_mul_mat(ctx0, T("mm.model.fc.weight"), cur);
        }
        ggml_cgraph *gf = ggml_new_graph_custom(ctx0, 8192, false);
        ggml_build_forward_expand(gf, cur);
        if (ggml_graph_compute_with_ctx(ctx0, gf, 2) != GGML_STATUS_SUCCESS) return 1;
        const float *o = (const float *) cur->data;
        out.insert(out.end(), o, o + ggml_nelements(cur));
        ggml_free(ctx0);
    }
    f = fopen(argv[3], "wb");
    fwrite(out.data(), 4, out.size(), f);
    fclose(f);
    printf("%d tiles, %zu values\n", ntiles, out.size());
}
