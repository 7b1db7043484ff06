package synth

import "github.com/troupe-llm/troupe/model/gguf"

// Rerankers (Shape.Rerank), as llama.cpp's converter writes them: a BERT
// cross-encoder (bge-reranker) gets RoBERTa's classification head, cls
// (dim×dim, with a bias, then tanh) and cls.output (one logit, with a
// bias); a qwen3 reranker (Qwen3-Reranker) gets cls.output, the output
// matrix's rows of "yes" and "no" (here random rows), the labels "yes" and
// "no" and the rerank prompt. Both say pooling_type 4 (rank).

// qwen3RerankTemplate is the rerank prompt convert_hf_to_gguf writes for
// Qwen3-Reranker (tokenizer.chat_template.rerank).
const qwen3RerankTemplate = "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n" +
	"<|im_start|>user\n<Instruct>: Given a web search query, retrieve relevant passages that answer the query\n<Query>: {query}\n<Document>: {document}<|im_end|>\n" +
	"<|im_start|>assistant\n<think>\n\n</think>\n\n"

// poolingRank is llama.cpp's LLAMA_POOLING_TYPE_RANK.
const poolingRank = 4

// rankTensors are a reranker shape's classification head, after its other
// tensors; nil for other shapes.
func rankTensors(s Shape) []matrix {
	if !s.Rerank {
		return nil
	}
	if isEncoder(s) {
		return []matrix{
			{name: "cls.weight", kind: "cls", cols: s.Dim, rows: s.Dim}, {name: "cls.bias", cols: s.Dim},
			{name: "cls.output.weight", kind: "cls", cols: s.Dim, rows: 1}, {name: "cls.output.bias", cols: 1},
		}
	}
	return []matrix{{name: "cls.output.weight", kind: "cls", cols: s.Dim, rows: 2}}
}

// setRankKV writes a decoder reranker's keys (pooling, labels, prompt);
// writeBERT writes an encoder's pooling itself.
func setRankKV(gw *gguf.Writer, s Shape) {
	if !s.Rerank {
		return
	}
	gw.SetKV(s.Arch+".pooling_type", uint32(poolingRank))
	gw.SetKV(s.Arch+".classifier.output_labels", []string{"yes", "no"})
	gw.SetKV("tokenizer.chat_template.rerank", qwen3RerankTemplate)
}
