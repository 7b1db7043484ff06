package actors

import (
	"testing"

	"github.com/troupe-llm/troupe/messages"
)

// TestRopePosition: mtmd's M-RoPE layout of a prompt with two images (a
// 3×2 grid of rows at 2, a 1×4 one at 10): rows at their first position
// plus their offsets, text after each image shifted back by rows − extent;
// a step of a plain sequence then an M-RoPE one gets RopePositions from
// the M-RoPE one on, the plain rows filled in.
func TestRopePosition(t *testing.T) {
	grid := func(w, h int) [][3]int32 {
		var o [][3]int32
		for y := range h {
			for x := range w {
				o = append(o, [3]int32{0, int32(y), int32(x)})
			}
		}
		return o
	}
	n := &messages.NewSequence{Images: []messages.ImageInput{
		{Pos: 2, Rows: 6, Positions: grid(3, 2)},  // extent 3: shift 3 after it
		{Pos: 10, Rows: 4, Positions: grid(1, 4)}, // extent 4: no further shift
	}}
	for _, tc := range []struct {
		pos  int
		want [3]int32
	}{
		{0, [3]int32{0, 0, 0}}, {1, [3]int32{1, 1, 1}},
		{2, [3]int32{2, 2, 2}}, {4, [3]int32{2, 2, 4}}, {7, [3]int32{2, 3, 4}},
		{8, [3]int32{5, 5, 5}}, {9, [3]int32{6, 6, 6}},
		{10, [3]int32{7, 7, 7}}, {13, [3]int32{7, 10, 7}},
		{14, [3]int32{11, 11, 11}}, {20, [3]int32{17, 17, 17}},
	} {
		if got, mrope := ropePosition(n, tc.pos); got != tc.want || !mrope {
			t.Errorf("position %d: %v (%v), want %v", tc.pos, got, mrope, tc.want)
		}
	}
	if got, mrope := ropePosition(&messages.NewSequence{}, 5); mrope || got != [3]int32{5, 5, 5} {
		t.Errorf("no images: %v, %v", got, mrope)
	}

	step := &messages.Step{}
	plain := &messages.NewSequence{}
	for _, s := range []struct {
		n   *messages.NewSequence
		pos int
	}{{plain, 4}, {plain, 5}, {n, 8}, {plain, 6}} {
		addRopePosition(step, s.n, s.pos)
		step.Positions = append(step.Positions, int32(s.pos))
	}
	want := [][3]int32{{4, 4, 4}, {5, 5, 5}, {5, 5, 5}, {6, 6, 6}}
	if len(step.RopePositions) != len(want) {
		t.Fatalf("rope positions %v, want %v", step.RopePositions, want)
	}
	for i := range want {
		if step.RopePositions[i] != want[i] {
			t.Fatalf("rope positions %v, want %v", step.RopePositions, want)
		}
	}
	plainStep := &messages.Step{}
	addRopePosition(plainStep, plain, 3)
	if plainStep.RopePositions != nil {
		t.Error("a plain sequence's step has rope positions")
	}
}
