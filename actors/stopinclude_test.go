package actors

import (
	"testing"
	"time"
)

// TestStopTextOptions checks include_stop_str_in_output (the stop string
// ends the text) and min_tokens' off switch (no stop string looked for, and
// nothing held back), on text streamed in pieces.
func TestStopTextOptions(t *testing.T) {
	tests := []struct {
		name    string
		st      stopText
		pieces  []string
		offFor  int // pieces added with off set
		want    string
		stopped bool
	}{
		{"excluded", stopText{stops: []string{"END"}}, []string{"ab", "cE", "NDx"}, 0, "abc", true},
		{"included", stopText{stops: []string{"END"}, include: true}, []string{"ab", "cE", "NDx"}, 0, "abcEND", true},
		{"longest at the same place", stopText{stops: []string{"E", "END"}, include: true}, []string{"abcEND"}, 0, "abcEND", true},
		{"off", stopText{stops: []string{"END"}}, []string{"aEND", "b", "cEND"}, 2, "aENDbc", true},
		{"off, never on", stopText{stops: []string{"END"}}, []string{"aEND", "bE"}, 2, "aENDbE", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.st
			var got string
			stopped := false
			for i, p := range tt.pieces {
				st.off = i < tt.offFor
				out, s := st.add(p, i == len(tt.pieces)-1)
				got += out
				if s {
					stopped = true
					break
				}
			}
			if got != tt.want || stopped != tt.stopped {
				t.Errorf("text %q stopped %v, want %q %v", got, stopped, tt.want, tt.stopped)
			}
		})
	}
}

// TestAndMask checks the min_tokens mask against a grammar's.
func TestAndMask(t *testing.T) {
	ban := []uint64{0b1011}
	switch {
	case andMask(nil, ban)[0] != 0b1011:
		t.Error("no grammar: want the ban mask")
	case andMask([]uint64{0b0110}, ban)[0] != 0b0010:
		t.Error("grammar and ban: want both")
	case andMask([]uint64{0b0100}, ban)[0] != 0b0100:
		t.Error("nothing in common: want the grammar's")
	case andMask([]uint64{0b0100}, nil)[0] != 0b0100:
		t.Error("no ban: want the grammar's")
	}
}

// TestPastDeadline checks t_max_predict_ms as llama-server applies it: past
// the deadline, a piece with a newline ends the choice; one without does
// not; no deadline never does. The clock is set, not waited on.
func TestPastDeadline(t *testing.T) {
	past := time.Now().Add(-time.Hour)
	s := &sequence{maxPredict: time.Second, genStart: past}
	switch {
	case !s.pastDeadline("a\nb"):
		t.Error("past the deadline with a newline: not ended")
	case s.pastDeadline("ab"):
		t.Error("past the deadline without a newline: ended")
	case (&sequence{maxPredict: time.Hour, genStart: time.Now()}).pastDeadline("\n"):
		t.Error("before the deadline: ended")
	case (&sequence{genStart: past}).pastDeadline("\n"):
		t.Error("no deadline: ended")
	}
}
