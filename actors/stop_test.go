package actors

import (
	"slices"
	"strings"
	"testing"
)

// FuzzStopStrings streams a text in pieces (cut where cuts says) through
// stopText with up to three stop strings. The text sent must be the text
// before the first stop string found (all of it when none occurs), no prefix
// of what was sent may contain a stop string, and what is held back stays
// shorter than the longest stop string.
func FuzzStopStrings(f *testing.F) {
	f.Add("Hello world. The end.", []byte{3, 5, 1}, "end", "", "")
	f.Add("abcabcabd", []byte{1, 1, 1, 1}, "abd", "cab", "")
	f.Add("xxab", []byte{2, 1}, "ab", "b", "xab")
	f.Add("ééé<|im_end|>more", []byte{2, 7}, "<|im_end|>", "\n\n", "")
	f.Add("aaaa", []byte{1}, "aaaaa", "", "")
	f.Add("no stop here", []byte{}, "zz", "", "")
	f.Fuzz(func(t *testing.T, text string, cuts []byte, s1, s2, s3 string) {
		var stops []string
		longest := 0
		for _, s := range []string{s1, s2, s3} {
			if s != "" { // the runtime rejects empty stop strings (Runtime.Check)
				stops = append(stops, s)
				longest = max(longest, len(s))
			}
		}
		ps := pieces(text, cuts)
		want, wantStop := reference(ps, stops)

		st := stopText{stops: stops}
		var sent strings.Builder
		stopped := false
		for i, piece := range ps {
			var out string
			out, stopped = st.add(piece, i == len(ps)-1)
			sent.WriteString(out)
			for _, s := range stops {
				if strings.Contains(sent.String(), s) {
					t.Fatalf("sent %q, which holds stop string %q", sent.String(), s)
				}
			}
			if len(st.held) > 0 && len(st.held) >= longest {
				t.Fatalf("holding %d bytes back; the longest stop string has %d", len(st.held), longest)
			}
			if stopped {
				break
			}
		}
		if stopped && (!slices.Contains(stops, st.matched) || !strings.HasPrefix(strings.Join(ps, ""), sent.String()+st.matched)) {
			t.Fatalf("stopped on %q after %q: not the stop string found there", st.matched, sent.String())
		}
		if sent.String() != want || stopped != wantStop {
			t.Fatalf("sent %q (stopped %v), want %q (stopped %v)", sent.String(), stopped, want, wantStop)
		}
	})
}

// pieces cuts text into pieces of the lengths cuts gives (as far as the
// text goes), then the rest as one piece; there is always at least one.
func pieces(text string, cuts []byte) []string {
	var ps []string
	for _, c := range cuts {
		n := min(int(c), len(text))
		ps = append(ps, text[:n])
		text = text[n:]
	}
	return append(ps, text)
}

// reference is the text FuzzStopStrings expects to be sent, by brute force:
// the text so far is searched whenever a piece has come, and at the first
// search that finds stop strings it is cut where the earliest of them
// starts. (Where pieces end matters, as where tokens end does in vLLM and
// llama.cpp: a stop string completed first wins over one starting earlier
// but completed later.)
func reference(ps []string, stops []string) (string, bool) {
	text := ""
	for _, p := range ps {
		text += p
		at := -1
		for _, s := range stops {
			if j := strings.Index(text, s); j >= 0 && (at < 0 || j < at) {
				at = j
			}
		}
		if at >= 0 {
			return text[:at], true
		}
	}
	return text, false
}
