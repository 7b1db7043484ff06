package toolcall

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
)

// templateFormats is the format each shared chat template teaches (None:
// it has no tool calls, or a format not parsed here).
var templateFormats = map[string]Format{
	"templates/CohereForAI-c4ai-command-r-plus-tool_use":      CommandRPlus,
	"templates/CohereForAI-c4ai-command-r7b-12-2024-tool_use": CommandR7B,
	"templates/HuggingFaceTB-SmolLM2-135M-Instruct":           None,
	"templates/NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use": Hermes,
	"templates/NousResearch-Hermes-3-Llama-3.1-8B-tool_use":   Hermes,
	"templates/Qwen-Qwen2.5-7B-Instruct":                      Hermes,
	"templates/deepseek-ai-DeepSeek-R1-Distill-Llama-8B":      DeepSeekR1,
	"templates/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B":      DeepSeekR1,
	"templates/fireworks-ai-llama-3-firefunction-v2":          FireFunction2,
	"templates/google-gemma-2-2b-it":                          None,
	"templates/llama-cpp-deepseek-r1":                         DeepSeekR1,
	"templates/meetkai-functionary-medium-v3.1":               Functionary31,
	"templates/meetkai-functionary-medium-v3.2":               FunctionaryV3,
	"templates/meta-llama-Llama-3.1-8B-Instruct":              Llama3JSON,
	"templates/meta-llama-Llama-3.2-3B-Instruct":              Llama3JSON,
	"templates/meta-llama-Llama-3.3-70B-Instruct":             Llama3JSON,
	"templates/microsoft-Phi-3.5-mini-instruct":               None,
	"templates/mistralai-Mistral-Nemo-Instruct-2407":          Mistral,
	"templates-more/GLM-4.6":                                  GLM45,
	"templates-more/HuggingFaceTB-SmolLM3-3B":                 None,
	"templates-more/LFM2.5-Instruct":                          LFM2,
	"templates-more/Mistral-Small-3.2-24B-Instruct-2506":      Mistral,
	"templates-more/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16":      Qwen3Coder,
	"templates-more/Qwen-Qwen3-0.6B":                          Hermes,
	"templates-more/Qwen3-Coder":                              Qwen3Coder,
	"templates-more/Qwen3.5-4B":                               Qwen3Coder,
	"templates-more/deepseek-ai-DeepSeek-V3.1":                DeepSeekV31,
	"templates-more/google-gemma-4-31B-it":                    Gemma4,
	"templates-more/ibm-granite-granite-4.0":                  Hermes,
	"templates-more/mistralai-Ministral-3-14B-Reasoning-2512": Mistral,
	"templates-more/moonshotai-Kimi-K2":                       KimiK2,
	"templates-more/openai-gpt-oss-120b":                      OpenAI,
	"templates-more/unsloth-mistral-Devstral-Small-2507":      Mistral,
}

// TestDetectTemplates: every shared template is detected as its format,
// and every template there is listed.
func TestDetectTemplates(t *testing.T) {
	seen := 0
	for _, dir := range []string{"templates", "templates-more"} {
		files, _ := filepath.Glob(filepath.Join(testmodels.Path(t, dir), "*.jinja"))
		if len(files) == 0 {
			t.Fatalf("no templates in %s", dir)
		}
		for _, f := range files {
			key := dir + "/" + strings.TrimSuffix(filepath.Base(f), ".jinja")
			want, ok := templateFormats[key]
			if !ok {
				t.Errorf("%s: not listed in templateFormats", key)
				continue
			}
			seen++
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if got := Detect(string(src)); got != want {
				t.Errorf("Detect(%s) = %q, want %q", key, got, want)
			}
		}
	}
	if seen != len(templateFormats) {
		t.Errorf("found %d of the %d listed templates", seen, len(templateFormats))
	}
}
