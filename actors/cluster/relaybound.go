package cluster

import (
	"fmt"
	"sync"

	"github.com/troupe-llm/troupe/messages"
)

// The origin node does not trust what a member relays more than the
// request allows: a choice may get at most max_tokens tokens (the context
// when unset), and no more text than those tokens can stand for. A member
// that sends more (a bug, or a hostile node on the unauthenticated
// cluster port) has the choice ended with an error there; the client never
// gets the excess.

// maxTextPerTokenFallback bounds a token's text when the vocabulary gives
// no bound of its own (Runtime.MaxTokenBytes is 0).
const maxTextPerTokenFallback = 1024

// relayLimits are one request's bounds on a choice's relayed output.
type relayLimits struct {
	tokens        int // per choice
	textPerToken  int // bytes of text per token
	completionMax int // usage's completion tokens, all choices
}

// tokenBytes is the runtime's MaxTokenBytes, read once (it walks the
// vocabulary).
func (n *Node) tokenBytes() int {
	n.tokenBytesOnce.Do(func() {
		if n.tokenBytesCached = n.rt.MaxTokenBytes(); n.tokenBytesCached <= 0 {
			n.tokenBytesCached = maxTextPerTokenFallback
		}
	})
	return n.tokenBytesCached
}

// limitsFor is req's relay bounds on n.
func (n *Node) limitsFor(req *messages.GenerateRequest) relayLimits {
	tokens := req.MaxTokens
	if tokens <= 0 {
		tokens = n.rt.MaxModelLen()
	}
	return relayLimits{tokens: tokens, textPerToken: n.tokenBytes(), completionMax: tokens * max(req.N, 1)}
}

// overBound says why a choice's output so far is more than l allows, ""
// when it is not.
func (l relayLimits) overBound(p *progress) string {
	switch {
	case p.tokens > l.tokens:
		return fmt.Sprintf("%d tokens for a choice of at most %d (max_tokens)", p.tokens, l.tokens)
	case p.text > (p.tokens+1)*l.textPerToken:
		return fmt.Sprintf("%d bytes of text for %d tokens", p.text, p.tokens)
	}
	return ""
}

// boundUsage clamps a relayed Done chunk's usage to what the request
// allows.
func (l relayLimits) boundUsage(ch *messages.OutputChunk) {
	if ch.Usage != nil && ch.Usage.CompletionTokens > l.completionMax {
		u := *ch.Usage
		u.CompletionTokens = l.completionMax
		ch.Usage = &u
	}
}

// relayOnce holds Node's cached token bound (embedded in Node).
type relayOnce struct {
	tokenBytesOnce   sync.Once
	tokenBytesCached int
}
