package datadriven

import (
	"fmt"
	"strconv"
	"strings"
)

// Tokens reads a word key=PARTS as a token list: PARTS are comma-separated,
// each a token or START+N (the N tokens START, START+1, ...); empty, no
// tokens.
func Tokens(word, key string) ([]int32, error) {
	v, ok := strings.CutPrefix(word, key+"=")
	if !ok {
		return nil, fmt.Errorf("%q, want %s=…", word, key)
	}
	var p []int32
	for part := range strings.SplitSeq(v, ",") {
		if part == "" {
			continue
		}
		start, count, ranged := strings.Cut(part, "+")
		a, err := strconv.Atoi(start)
		if err != nil {
			return nil, fmt.Errorf("%s part %q: %w", key, part, err)
		}
		n := 1
		if ranged {
			if n, err = strconv.Atoi(count); err != nil || n < 0 {
				return nil, fmt.Errorf("%s part %q: a count of tokens wanted", key, part)
			}
		}
		for i := range n {
			p = append(p, int32(a+i))
		}
	}
	return p, nil
}
