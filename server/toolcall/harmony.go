package toolcall

import (
	"strings"
	"unicode"
)

// gpt-oss's harmony format. The prompt ends with "<|start|>assistant"; the
// model writes messages, each a header and a body:
//
//	<|channel|>analysis<|message|>REASONING<|end|>
//	<|start|>assistant<|channel|>commentary<|message|>PREAMBLE<|end|>
//	<|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{ARGS}<|call|>
//	<|start|>assistant<|channel|>final<|message|>ANSWER<|return|>
//
// <|return|> and <|call|> end the generation (they are not in the output's
// text); <|end|> ends a message. As llama.cpp's and vLLM's gpt-oss parsers
// read it: the analysis channel is reasoning; final and commentary without
// a recipient (a preamble) are content; a message to functions.NAME is a
// call, its recipient in the channel's header or in the role's
// ("<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>",
// or " to=functions.NAME<|channel|>..." at the output's start, right after
// the prompt's role); a message to another recipient (the built-in
// browser.* and python tools, which a server does not run) is dropped, as
// is a call when calls are not read (NoCalls). A stray
// "<|channel|>commentary" before a header's real channel is skipped. A
// header without its <|message|>, or a call whose arguments are not one
// JSON object, is content.

// harmonyEnds end a message body.
var harmonyEnds = []string{"<|end|>", "<|call|>", "<|return|>", "<|start|>"}

// maxHarmonyHeader bounds a header's length: text that opens one and
// runs longer without its <|message|> is not a header.
const maxHarmonyHeader = 512

// harmonyMessage is a message that begins with start: its header, and for
// a call its body too.
func harmonyMessage(start string) block {
	return block{start: start, modes: inAny, scan: func(s string, final bool) (int, status, outcome) {
		m := strings.Index(s, "<|message|>")
		header := s // only the header can break (not a call's body after it)
		if m >= 0 {
			header = s[:m]
		}
		if headerBreak(header[len(start):]) >= 0 {
			return len(start), failed, outcome{} // a message's end or a line before the header's end
		}
		if m < 0 || m > maxHarmonyHeader {
			if m < 0 && !final && len(s) <= maxHarmonyHeader {
				return 0, needMore, outcome{}
			}
			return len(start), failed, outcome{}
		}
		h := readHarmonyHeader(start, s[:m])
		body := m + len("<|message|>")
		switch {
		case !h.ok:
			return len(start), failed, outcome{}
		case h.recipient == "" && h.channel == "analysis":
			return body, done, outcome{setMode: inReasoning}
		case h.recipient == "":
			return body, done, outcome{setMode: inContent}
		case !strings.HasPrefix(h.recipient, "functions."):
			n, st := harmonyBodyEnd(s, body, final)
			if st == needMore {
				return 0, needMore, outcome{}
			}
			return n, done, outcome{setMode: inContent} // a built-in tool's message: dropped
		}
		name := strings.TrimPrefix(h.recipient, "functions.")
		n, st := harmonyArgs(s, body, final)
		switch {
		case st == needMore:
			return 0, needMore, outcome{}
		case st == failed || !isName(name):
			n, st = harmonyBodyEnd(s, body, final)
			if st == needMore {
				return 0, needMore, outcome{}
			}
			return n, failed, outcome{}
		}
		args := strings.TrimSpace(s[body:n])
		for _, e := range harmonyEnds[:3] { // the end marker, if written, is the call's
			if rest := strings.TrimLeftFunc(s[n:], unicode.IsSpace); strings.HasPrefix(rest, e) {
				n = len(s) - len(rest) + len(e)
				break
			}
		}
		return n, done, outcome{calls: []Call{{Name: name, Arguments: args}}, setMode: inContent}
	}}
}

// harmonyHeader is a message's header, read.
type harmonyHeader struct {
	recipient string // "": the message is the assistant's own text, not a call
	channel   string
	ok        bool // the header has the shape harmony writes
}

// readHarmonyHeader reads a header, from its start up to its <|message|>:
// "<|start|>ROLE[ to=R]<|channel|>...", " to=R<|channel|>..." or
// "<|channel|>[commentary[ to=assistant]<|channel|>]CHANNEL[ to=R][ [<|constrain|>]TYPE]".
func readHarmonyHeader(start, h string) harmonyHeader {
	var hd harmonyHeader
	parts := strings.Split(h[len(start):], "<|channel|>")
	channels := parts
	switch start {
	case "<|start|>":
		if role := strings.Fields(parts[0]); len(role) == 0 || role[0] != "assistant" {
			return hd // another role's message: not the model's to write
		}
		channels = parts[1:]
	case " to=":
		parts[0] = "to=" + parts[0]
		channels = parts[1:]
	}
	for _, p := range parts {
		p = strings.ReplaceAll(p, "<|constrain|>", " ")
		if strings.Contains(p, "<|") {
			return hd // another marker inside the header
		}
		if r := field(p, "to="); r != "" {
			hd.recipient = r
		}
	}
	if len(channels) > 0 {
		last := strings.Fields(strings.ReplaceAll(channels[len(channels)-1], "<|constrain|>", " "))
		if len(last) == 0 || strings.HasPrefix(last[0], "to=") {
			return hd
		}
		hd.channel = last[0]
	}
	if hd.recipient == "assistant" { // a stray " to=assistant": the text is the assistant's
		hd.recipient = ""
	}
	hd.ok = true
	return hd
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

// harmonyArgs reads a call's body, from s[body:]: one JSON object. It
// returns where the object ends.
func harmonyArgs(s string, body int, final bool) (int, status) {
	rest := s[body:]
	if t := strings.TrimLeftFunc(rest, unicode.IsSpace); t != "" && t[0] != '{' {
		return body, failed
	}
	n, st := jsonValue(rest, final)
	if st != done {
		return body + n, st
	}
	after := strings.TrimLeftFunc(rest[n:], unicode.IsSpace)
	switch {
	case after == "" && !final:
		return 0, needMore // the end marker may follow
	case after == "":
	case startsWithAny(after, harmonyEnds):
	case !final && prefixOfAny(after, harmonyEnds):
		return 0, needMore
	default:
		return body + n, failed // text after the arguments
	}
	return body + n, done
}

// harmonyBodyEnd returns the length of the message whose body starts at
// s[body:], with its end marker; <|start|> begins the next message and is
// not counted. At the output's end without a marker the body runs to it.
func harmonyBodyEnd(s string, body int, final bool) (int, status) {
	end, mark := len(s), ""
	for _, e := range harmonyEnds {
		if i := strings.Index(s[body:], e); i >= 0 && body+i < end {
			end, mark = body+i, e
		}
	}
	switch {
	case mark == "" && !final:
		return 0, needMore
	case mark == "<|start|>":
		return end, done
	}
	return end + len(mark), done
}

// headerBreak returns where h (a header's text after its start) holds
// what no header does: a line break or a message's end marker; -1 if
// nothing.
func headerBreak(h string) int {
	at := strings.IndexByte(h, '\n')
	for _, e := range harmonyEnds {
		if i := strings.Index(h, e); i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	return at
}

func startsWithAny(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// prefixOfAny reports whether s is the beginning of one of ws.
func prefixOfAny(s string, ws []string) bool {
	for _, w := range ws {
		if len(s) < len(w) && strings.HasPrefix(w, s) {
			return true
		}
	}
	return false
}
