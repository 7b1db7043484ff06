// rerank-dump makes rerank references: for each line "QUERY<TAB>DOCUMENT"
// of stdin, the sequence llama-server's format_prompt_rerank builds (the
// model's rerank template with {query} and {document} replaced, tokenized
// with special tokens parsed and none added; else [BOS] query [EOS] [SEP]
// doc [EOS], each where the vocabulary adds it, EOS falling back to SEP),
// decoded alone with embeddings on and rank pooling (CPU, 2 threads,
// llama.cpp's default context parameters otherwise), and prints one JSON
// line: {"query", "document", "tokens", "scores", "pooled"} where scores
// are the n_cls_out values llama_get_embeddings_seq gives (llama-server's
// relevance_score is the first) and pooled is the final hidden state the
// classification head read (the sequence decoded again with last pooling
// for qwen3, cls otherwise; not normalized).
//
// Build against a llama.cpp build (not part of troupe; never commit one):
//
//	L=/work/peer/llama.cpp
//	g++ -O2 -o /tmp/rerank-dump scripts/rerank-dump.cpp -I$L/include -I$L/ggml/include \
//	    -L$L/build/bin -lllama -lggml -lggml-base -Wl,-rpath,$L/build/bin
//
// Run: rerank-dump MODEL < pairs.tsv
#include "llama.h"
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

static std::vector<llama_token> tokenize(const llama_vocab *v, const std::string &s, bool add, bool parse) {
    int n = -llama_tokenize(v, s.data(), (int)s.size(), nullptr, 0, add, parse);
    std::vector<llama_token> out(n > 0 ? n : 0);
    if (n > 0) llama_tokenize(v, s.data(), (int)s.size(), out.data(), n, add, parse);
    return out;
}

static void replace_all(std::string &s, const std::string &from, const std::string &to) {
    for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) s.replace(pos, from.size(), to);
}

static void json_string(const std::string &s) {
    putchar('"');
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

// format_prompt_rerank of llama.cpp's tools/server/server-common.cpp.
static std::vector<llama_token> rerank_tokens(const llama_model *m, const llama_vocab *v, const std::string &q, const std::string &d) {
    const char *tmpl = llama_model_chat_template(m, "rerank");
    if (tmpl) {
        std::string p = tmpl;
        replace_all(p, "{query}", q);
        replace_all(p, "{document}", d);
        return tokenize(v, p, false, true);
    }
    std::vector<llama_token> out, qt = tokenize(v, q, false, false), dt = tokenize(v, d, false, false);
    llama_token eos = llama_vocab_eos(v);
    if (eos == LLAMA_TOKEN_NULL) eos = llama_vocab_sep(v);
    if (llama_vocab_get_add_bos(v)) out.push_back(llama_vocab_bos(v));
    out.insert(out.end(), qt.begin(), qt.end());
    if (llama_vocab_get_add_eos(v)) out.push_back(eos);
    if (llama_vocab_get_add_sep(v)) out.push_back(llama_vocab_sep(v));
    out.insert(out.end(), dt.begin(), dt.end());
    if (llama_vocab_get_add_eos(v)) out.push_back(eos);
    return out;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: rerank-dump MODEL < pairs.tsv\n"); return 2; }
    llama_log_set([](ggml_log_level, const char *, void *) {}, nullptr);
    llama_backend_init();
    auto mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) { fprintf(stderr, "rerank-dump: cannot load %s\n", argv[1]); return 1; }
    const llama_vocab *vocab = llama_model_get_vocab(model);
    auto cp = llama_context_default_params();
    cp.n_ctx = 512; cp.n_batch = 512; cp.n_ubatch = 512;
    cp.n_threads = 2; cp.n_threads_batch = 2;
    cp.embeddings = true;
    cp.pooling_type = LLAMA_POOLING_TYPE_RANK;
    llama_context *ctx = llama_init_from_model(model, cp);
    char arch[64] = "";
    llama_model_meta_val_str(model, "general.architecture", arch, sizeof arch);
    cp.pooling_type = std::string(arch) == "qwen3" ? LLAMA_POOLING_TYPE_LAST : LLAMA_POOLING_TYPE_CLS;
    llama_context *pctx = llama_init_from_model(model, cp);
    if (!ctx || !pctx) { fprintf(stderr, "rerank-dump: cannot make a context\n"); return 1; }
    int n_embd = llama_model_n_embd(model);
    int n_out = (int)llama_model_n_cls_out(model);
    std::string line;
    while (std::getline(std::cin, line)) {
        size_t tab = line.find('\t');
        if (tab == std::string::npos) { fprintf(stderr, "rerank-dump: line without a tab\n"); return 1; }
        std::string q = line.substr(0, tab), d = line.substr(tab + 1);
        std::vector<llama_token> toks = rerank_tokens(model, vocab, q, d);
        llama_memory_clear(llama_get_memory(ctx), true);
        llama_batch b = llama_batch_init((int)toks.size(), 0, 1);
        for (size_t i = 0; i < toks.size(); i++) {
            b.token[i] = toks[i]; b.pos[i] = (llama_pos)i; b.n_seq_id[i] = 1; b.seq_id[i][0] = 0; b.logits[i] = true;
        }
        b.n_tokens = (int)toks.size();
        if (llama_decode(ctx, b) < 0) { fprintf(stderr, "rerank-dump: decode failed\n"); return 1; }
        const float *e = llama_get_embeddings_seq(ctx, 0);
        llama_memory_clear(llama_get_memory(pctx), true);
        if (llama_decode(pctx, b) < 0) { fprintf(stderr, "rerank-dump: decode failed\n"); return 1; }
        const float *h = llama_get_embeddings_seq(pctx, 0);
        if (!e || !h) { fprintf(stderr, "rerank-dump: no sequence embedding\n"); return 1; }
        printf("{\"query\":"); json_string(q);
        printf(",\"document\":"); json_string(d);
        printf(",\"tokens\":[");
        for (size_t i = 0; i < toks.size(); i++) printf(i ? ",%d" : "%d", toks[i]);
        printf("],\"scores\":[");
        for (int i = 0; i < n_out; i++) printf(i ? ",%.9g" : "%.9g", e[i]);
        printf("],\"pooled\":[");
        for (int i = 0; i < n_embd; i++) printf(i ? ",%.9g" : "%.9g", h[i]);
        printf("]}\n");
        llama_batch_free(b);
    }
    llama_free(pctx);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
