package toolcall

// ReasoningMarker returns the text by which a chat template shows that it
// knows the format's reasoning block (the marker that opens it; gpt-oss's
// analysis channel), and false when the format has no reasoning. A
// template that holds it teaches its model to reason apart from the
// answer: the output's reasoning is split out (Result.Reasoning).
func (f Format) ReasoningMarker() (string, bool) {
	d := f.def()
	if !d.reasoning {
		return "", false
	}
	if f == OpenAI {
		return "<|channel|>analysis", true
	}
	return d.thinkStart, d.thinkStart != ""
}
