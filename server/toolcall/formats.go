package toolcall

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Block builders shared by the formats.

// switchTo is a marker that only changes where plain text goes.
func switchTo(start string, in, to mode) block {
	return block{start: start, modes: in, scan: func(string, bool) (int, status, outcome) {
		return len(start), done, outcome{setMode: to}
	}}
}

// think is the <think>...</think> pair (or another pair of markers).
func think(open, close string) []block {
	return []block{switchTo(open, inContent, inReasoning), switchTo(close, inReasoning, inContent)}
}

// between is a block from start to end whose inside parse reads. Without
// its end, at the end of the output, it holds what follows start (models
// often stop before writing the end marker).
func between(start, end string, modes mode, parse func(inside string) ([]Call, bool)) block {
	return block{start: start, modes: modes, scan: func(s string, final bool) (int, status, outcome) {
		j := strings.Index(s[len(start):], end)
		if j < 0 {
			if !final {
				return 0, needMore, outcome{}
			}
			if calls, ok := parse(s[len(start):]); ok {
				return len(s), done, outcome{calls: calls}
			}
			return len(s), failed, outcome{}
		}
		n := len(start) + j + len(end)
		calls, ok := parse(s[len(start) : len(start)+j])
		if !ok {
			return n, failed, outcome{}
		}
		return n, done, outcome{calls: calls}
	}}
}

func one(c Call, ok bool) ([]Call, bool) {
	if !ok {
		return nil, false
	}
	return []Call{c}, true
}

// hermesCall reads a <tool_call> body: one JSON call object.
func hermesCall(inside string) ([]Call, bool) {
	t := strings.TrimSpace(inside)
	if n, st := jsonEnd(t); st != done || n != len(t) {
		return nil, false
	}
	return one(callObject(t))
}

// isName reports whether s is a function name: letters, digits, _ - . :
func isName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("_-.:/", r)) {
			return false
		}
	}
	return true
}

// isNamePrefix reports whether s may begin a name: s is a name but for a
// character not yet complete at its end.
func isNamePrefix(s string) bool {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				s = s[:i]
			}
			break
		}
	}
	return s == "" || isName(s)
}

// cutTag returns the text between open and close in s and what follows.
func cutTag(s, open, close string) (inside, rest string, ok bool) {
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	if !strings.HasPrefix(s, open) {
		return "", s, false
	}
	inside, rest, ok = strings.Cut(s[len(open):], close)
	return inside, rest, ok
}

// trimNewline drops one newline on each side, as the templates put them.
func trimNewline(s string) string {
	s = strings.TrimPrefix(s, "\n")
	return strings.TrimSuffix(s, "\n")
}

// qwen3CoderCall reads <function=NAME><parameter=K>\nV\n</parameter>...</function>.
func qwen3CoderCall(inside string) ([]Call, bool) {
	s := strings.TrimSpace(inside)
	if !strings.HasPrefix(s, "<function=") || !strings.HasSuffix(s, "</function>") {
		return nil, false
	}
	name, body, ok := strings.Cut(s[len("<function="):len(s)-len("</function>")], ">")
	if !ok || !isName(name) {
		return nil, false
	}
	var params []param
	for {
		body = strings.TrimLeftFunc(body, unicode.IsSpace)
		if body == "" {
			break
		}
		head, rest, ok := cutTag(body, "<parameter=", ">")
		if !ok || !isName(head) {
			return nil, false
		}
		v, after, ok := strings.Cut(rest, "</parameter>")
		if !ok {
			return nil, false
		}
		params = append(params, param{head, trimNewline(v)})
		body = after
	}
	return []Call{{Name: name, params: params, textParams: true}}, true
}

// glmCall reads NAME\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>...
func glmCall(inside string) ([]Call, bool) {
	s := strings.TrimSpace(inside)
	name, body := s, ""
	if i := strings.Index(s, "<arg_key>"); i >= 0 {
		name, body = s[:i], s[i:]
	}
	name = strings.TrimSpace(name)
	if !isName(name) {
		return nil, false
	}
	var params []param
	for {
		body = strings.TrimLeftFunc(body, unicode.IsSpace)
		if body == "" {
			break
		}
		k, rest, ok := cutTag(body, "<arg_key>", "</arg_key>")
		if !ok {
			return nil, false
		}
		v, after, ok := cutTag(rest, "<arg_value>", "</arg_value>")
		if !ok {
			return nil, false
		}
		params = append(params, param{strings.TrimSpace(k), v})
		body = after
	}
	return []Call{{Name: name, params: params, textParams: true}}, true
}

// jsonArray reads a JSON array of call objects that follows start.
func jsonArray(start string, modes mode) block {
	return block{start: start, modes: modes, scan: func(s string, final bool) (int, status, outcome) {
		n, st := jsonValue(s[len(start):], final)
		n += len(start)
		if st != done {
			return n, st, outcome{}
		}
		calls, ok := callArray(s[len(start):n])
		if !ok {
			return n, failed, outcome{}
		}
		return n, done, outcome{calls: calls}
	}}
}

// sectionCalls reads the calls of a section (DeepSeek, Kimi): each from
// begin to end, read by parse; only space between them.
func sectionCalls(inside, begin, end string, parse func(string) (Call, bool)) ([]Call, bool) {
	var calls []Call
	for s := strings.TrimSpace(inside); s != ""; s = strings.TrimSpace(s) {
		body, rest, ok := cutTag(s, begin, end)
		if !ok {
			return nil, false
		}
		c, ok := parse(body)
		if !ok {
			return nil, false
		}
		calls = append(calls, c)
		s = rest
	}
	return calls, len(calls) > 0
}

// section is a block from start to end holding calls; a section without
// its end at final is read to the end of the text (models stop on it).
func section(start, end, begin, callEnd string, parse func(string) (Call, bool)) block {
	return block{start: start, modes: inContent, scan: func(s string, final bool) (int, status, outcome) {
		j := strings.Index(s[len(start):], end)
		n := len(start) + j + len(end)
		if j < 0 {
			if !final {
				return 0, needMore, outcome{}
			}
			j, n = len(s)-len(start), len(s)
		}
		calls, ok := sectionCalls(s[len(start):len(start)+j], begin, callEnd, parse)
		if !ok {
			return n, failed, outcome{}
		}
		return n, done, outcome{calls: calls}
	}}
}

// deepseekCall reads NAME<｜tool▁sep｜>{...} (V3.1) or
// function<｜tool▁sep｜>NAME\n```json\n{...}\n``` (R1).
func deepseekCall(body string) (Call, bool) {
	head, rest, ok := strings.Cut(body, "<｜tool▁sep｜>")
	if !ok {
		return Call{}, false
	}
	name := strings.TrimSpace(head)
	if name == "function" {
		if n, r, ok := strings.Cut(rest, "\n"); ok && !strings.HasPrefix(strings.TrimSpace(rest), "{") {
			name, rest = strings.TrimSpace(n), r
		}
	}
	args := strings.TrimSpace(rest)
	if strings.HasPrefix(args, "```") {
		args = strings.TrimPrefix(strings.TrimPrefix(args, "```json"), "```")
		args = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(args), "```"))
	}
	if !isName(name) || !isObject(args) {
		return Call{}, false
	}
	return Call{Name: name, Arguments: args}, true
}

// isObject reports whether s is exactly one JSON object.
func isObject(s string) bool {
	n, st := jsonEnd(s)
	return st == done && n == len(s) && strings.HasPrefix(s, "{")
}

// kimiCall reads functions.NAME:i<|tool_call_argument_begin|>{...}; the id is the model's.
func kimiCall(body string) (Call, bool) {
	id, args, ok := strings.Cut(body, "<|tool_call_argument_begin|>")
	id, args = strings.TrimSpace(id), strings.TrimSpace(args)
	if !ok || !isObject(args) {
		return Call{}, false
	}
	name := strings.TrimPrefix(id, "functions.")
	if i := strings.LastIndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	if !isName(name) {
		return Call{}, false
	}
	return Call{ID: id, Name: name, Arguments: args}, true
}

func init() {
	hermes := append(think("<think>", "</think>"),
		between("<tool_call>", "</tool_call>", inContent, hermesCall))
	register(Hermes, &format{blocks: hermes, reasoning: true, thinkStart: "<think>"})

	register(Qwen3Coder, &format{reasoning: true, thinkStart: "<think>", blocks: append(think("<think>", "</think>"),
		between("<tool_call>", "</tool_call>", inContent, qwen3CoderCall))})

	register(GLM45, &format{reasoning: true, thinkStart: "<think>", blocks: append(think("<think>", "</think>"),
		between("<tool_call>", "</tool_call>", inContent, glmCall))})

	register(Granite, &format{reasoning: true, thinkStart: "<think>", blocks: append(hermes[:len(hermes):len(hermes)],
		jsonArray("<|tool_call|>", inContent))})

	dsCalls := section("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", deepseekCall)
	for _, f := range []Format{DeepSeekR1, DeepSeekV31} {
		register(f, &format{reasoning: true, thinkStart: "<think>", blocks: append(think("<think>", "</think>"), dsCalls)})
	}

	register(KimiK2, &format{reasoning: true, thinkStart: "<think>", blocks: append(think("<think>", "</think>"),
		section("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>", "<|tool_call_end|>", kimiCall))})

	register(FireFunction2, &format{blocks: []block{jsonArray("functools", inContent)}})

	register(CommandR7B, &format{reasoning: true, thinkStart: "<|START_THINKING|>", blocks: append(
		think("<|START_THINKING|>", "<|END_THINKING|>"),
		switchTo("<|START_RESPONSE|>", inContent, inContent),
		switchTo("<|END_RESPONSE|>", inContent, inContent),
		between("<|START_ACTION|>", "<|END_ACTION|>", inContent, func(s string) ([]Call, bool) {
			return callArray(strings.TrimSpace(s))
		}))})

	register(Gemma4, &format{reasoning: true, thinkStart: "<|channel>thought", blocks: append(
		think("<|channel>thought", "<channel|>"),
		between("<|tool_call>", "<tool_call|>", inContent, gemmaCall))})

	register(LFM2, &format{reasoning: true, thinkStart: "<think>", blocks: append(think("<think>", "</think>"),
		between("<|tool_call_start|>", "<|tool_call_end|>", inContent, pythonCalls))})

	register(CommandRPlus, &format{blocks: []block{{start: "Action:", modes: inContent, scan: actionBlock}}})

	registerLlama()
	registerMistral()
	registerFunctionary()
	registerHarmony()
}

// actionBlock reads Command R+'s Action: ```json [...] ```.
func actionBlock(s string, final bool) (int, status, outcome) {
	const start, fence = "Action:", "```"
	i := len(s) - len(strings.TrimLeftFunc(s[len(start):], unicode.IsSpace))
	rest := s[i:]
	if !final && len(rest) < len(fence+"json") && strings.HasPrefix(fence+"json", rest) {
		return 0, needMore, outcome{}
	}
	fenced := strings.HasPrefix(rest, fence)
	if fenced {
		i += len(fence)
		if strings.HasPrefix(s[i:], "json") {
			i += len("json")
		}
	} else if !strings.HasPrefix(rest, "[") {
		return len(start), failed, outcome{}
	}
	n, st := jsonValue(s[i:], final)
	n += i
	if st != done {
		return n, st, outcome{}
	}
	calls, ok := callArray(strings.TrimSpace(s[i:n]))
	if !ok {
		return n, failed, outcome{}
	}
	if fenced {
		j := len(s) - len(strings.TrimLeftFunc(s[n:], unicode.IsSpace))
		switch after := s[j:]; {
		case strings.HasPrefix(after, fence):
			n = j + len(fence)
		case !final && len(after) < len(fence) && strings.HasPrefix(fence, after):
			return 0, needMore, outcome{}
		}
	}
	return n, done, outcome{calls: calls}
}
