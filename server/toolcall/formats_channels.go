package toolcall

import "strings"

// registerFunctionary: functionary v3.2 writes ">>>RECIPIENT\n" before each
// part ("all" for text, a function's name before its JSON arguments); the
// prompt ends with the first ">>>".
func registerFunctionary() {
	const start = ">>>"
	register(FunctionaryV3, &format{prefix: start, blocks: []block{{start: start, modes: inContent,
		scan: func(s string, final bool) (int, status, outcome) {
			nl := strings.IndexByte(s, '\n')
			head := s[len(start):]
			if nl >= 0 {
				head = s[len(start):nl]
			}
			if nl >= 0 && !isName(head) || nl < 0 && !isNamePrefix(head) {
				return len(start), failed, outcome{}
			}
			if nl < 0 {
				if final {
					return len(s), failed, outcome{}
				}
				return 0, needMore, outcome{}
			}
			if head == "all" {
				return nl + 1, done, outcome{}
			}
			if head == "python" && !strings.HasPrefix(strings.TrimSpace(s[nl+1:]), "{") {
				// code, to the next part or the end
				end := strings.Index(s[nl+1:], start)
				if end < 0 {
					if !final {
						return 0, needMore, outcome{}
					}
					end = len(s) - nl - 1
				}
				code := strings.TrimSpace(s[nl+1 : nl+1+end])
				var o object
				o.add("code", quote(code))
				return nl + 1 + end, done, outcome{calls: []Call{{Name: "python", Arguments: o.String()}}}
			}
			n, st := jsonValue(s[nl+1:], final)
			n += nl + 1
			if st != done {
				return n, st, outcome{}
			}
			args := strings.TrimSpace(s[nl+1 : n])
			if !strings.HasPrefix(args, "{") {
				return n, failed, outcome{}
			}
			return n, done, outcome{calls: []Call{{Name: head, Arguments: args}}}
		}}}})
}

// registerHarmony: gpt-oss writes messages <|channel|>CHANNEL<|message|>TEXT
// ended by <|end|>, <|call|> or <|return|>, later ones opened by
// <|start|>assistant. "analysis" is reasoning, "final" and "commentary"
// content; a header with " to=functions.NAME" makes the message a call.
func registerHarmony() {
	header := func(start string) block {
		return block{start: start, modes: inAny, scan: func(s string, final bool) (int, status, outcome) {
			m := strings.Index(s, "<|message|>")
			if m < 0 {
				if final {
					return len(s), failed, outcome{}
				}
				return 0, needMore, outcome{}
			}
			h := s[len(start):m]
			body := m + len("<|message|>")
			recipient, channel := harmonyHeader(start, h)
			if recipient == "" {
				if channel == "analysis" {
					return body, done, outcome{setMode: inReasoning}
				}
				return body, done, outcome{setMode: inContent}
			}
			end, endLen := len(s), 0
			for _, e := range []string{"<|call|>", "<|end|>", "<|return|>", "<|start|>"} {
				if i := strings.Index(s[body:], e); i >= 0 && body+i < end {
					end, endLen = body+i, len(e)
					if e == "<|start|>" {
						endLen = 0
					}
				}
			}
			if endLen == 0 && end == len(s) && !final {
				return 0, needMore, outcome{}
			}
			args := strings.TrimSpace(s[body:end])
			name := strings.TrimPrefix(recipient, "functions.")
			if !isObject(args) || !isName(name) {
				return end + endLen, failed, outcome{}
			}
			return end + endLen, done, outcome{calls: []Call{{Name: name, Arguments: args}}, setMode: inContent}
		}}
	}
	ends := func(e string) block { return switchTo(e, inAny, inContent) }
	register(OpenAI, &format{reasoning: true, blocks: []block{
		header("<|channel|>"), header("<|start|>"), ends("<|end|>"), ends("<|call|>"), ends("<|return|>"),
	}})
}

// harmonyHeader reads "[assistant] [to=R] [<|channel|>]CHANNEL [to=R] [<|constrain|>json|json]".
func harmonyHeader(start, h string) (recipient, channel string) {
	if start == "<|start|>" {
		_, after, ok := strings.Cut(h, "<|channel|>")
		if before, _, _ := strings.Cut(h, "<|channel|>"); strings.Contains(before, "to=") {
			recipient = field(before, "to=")
		}
		if !ok {
			return recipient, ""
		}
		h = after
	}
	h = strings.ReplaceAll(h, "<|constrain|>", " ")
	fs := strings.Fields(h)
	if len(fs) > 0 {
		channel = fs[0]
		if i := strings.Index(channel, "to="); i > 0 { // "commentaryto=..." never; keep the word
			channel = channel[:i]
		}
	}
	if r := field(h, "to="); r != "" {
		recipient = r
	}
	return recipient, channel
}

// field returns the word that follows key in h.
func field(h, key string) string {
	i := strings.Index(h, key)
	if i < 0 {
		return ""
	}
	fs := strings.Fields(h[i+len(key):])
	if len(fs) == 0 {
		return ""
	}
	return fs[0]
}
