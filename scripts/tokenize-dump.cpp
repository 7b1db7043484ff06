// tokenize-dump: llama.cpp's tokenizer over every case of a test-tokenizer-0
// style .inp file (cases separated by "\n__ggml_vocab_test__\n"), in one
// process, for scripts/make-vocab-refs.py.
//
// Build against a llama.cpp build (not part of troupe; never commit one):
//
//	L=/work/peer/llama.cpp
//	g++ -O2 -o /tmp/tokenize-dump scripts/tokenize-dump.cpp -I$L/include -I$L/ggml/include \
//	    -L$L/build/bin -lllama -lggml -lggml-base -Wl,-rpath,$L/build/bin
//
// Usage: tokenize-dump VOCAB.gguf CASES.inp MODE
//
//	MODE plain:   one line of ids per case, no BOS/EOS, special tokens not
//	              parsed (llama.cpp's test-tokenizer-0);
//	MODE special: the same with BOS/EOS as the vocab asks and special tokens
//	              parsed;
//	MODE detok:   per case, the special-mode ids detokenized back
//	              (llama_detokenize, remove_special false) with unparse_special
//	              false, then true: two hex strings separated by a space.
#include "llama.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

static std::vector<llama_token> tokenize(const llama_vocab * v, const std::string & text, bool special) {
    std::vector<llama_token> ids(text.size() + 16);
    int n = llama_tokenize(v, text.data(), text.size(), ids.data(), ids.size(), special, special);
    if (n < 0) {
        ids.resize(-n);
        n = llama_tokenize(v, text.data(), text.size(), ids.data(), ids.size(), special, special);
    }
    ids.resize(n);
    return ids;
}

static std::string detokenize(const llama_vocab * v, const std::vector<llama_token> & ids, bool unparse) {
    std::vector<char> buf(ids.size() * 16 + 64);
    int n = llama_detokenize(v, ids.data(), ids.size(), buf.data(), buf.size(), false, unparse);
    if (n < 0) {
        buf.resize(-n);
        n = llama_detokenize(v, ids.data(), ids.size(), buf.data(), buf.size(), false, unparse);
    }
    return std::string(buf.data(), n);
}

int main(int argc, char ** argv) {
    if (argc != 4 || (strcmp(argv[3], "plain") && strcmp(argv[3], "special") && strcmp(argv[3], "detok"))) {
        fprintf(stderr, "usage: tokenize-dump VOCAB.gguf CASES.inp plain|special|detok\n");
        return 2;
    }
    const std::string mode = argv[3];
    llama_log_set([](ggml_log_level, const char *, void *) {}, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        fprintf(stderr, "tokenize-dump: cannot load %s\n", argv[1]);
        return 1;
    }
    const llama_vocab * v = llama_model_get_vocab(model);

    std::ifstream in(argv[2], std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string s = ss.str();
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> cases;
    while (!s.empty()) {
        size_t i = s.find(sep);
        if (i == std::string::npos) {
            cases.push_back(s);
            break;
        }
        cases.push_back(s.substr(0, i));
        s = s.substr(i + sep.size());
    }

    for (const auto & text : cases) {
        std::vector<llama_token> ids = tokenize(v, text, mode != "plain");
        if (mode == "detok") {
            for (int unparse = 0; unparse < 2; unparse++) {
                for (unsigned char c : detokenize(v, ids, unparse)) {
                    printf("%02x", c);
                }
                printf(unparse ? "\n" : " ");
            }
            continue;
        }
        for (llama_token id : ids) {
            printf(" %d", id);
        }
        printf("\n");
    }
    llama_model_free(model);
    return 0;
}
