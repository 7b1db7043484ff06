package actors

import (
	"testing"

	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/model/sample"
)

// flatBackend is a Backend whose every logits row is 0, 0.1, ..., 0.7: no
// token reaches probability 0.2.
type flatBackend struct{ Backend }

func (flatBackend) VocabSize() int { return 8 }

func (flatBackend) Forward(b *model.Batch, logits []float32) error {
	for i := range logits {
		logits[i] = float32(i%8) / 10
	}
	return nil
}

// TestDeviceInfill: a sequence whose SamplingParams ask for infill gets the
// runtime's infill vocabulary in its sampler. Here no token is an
// end-of-generation token, none begins another and none is likely enough,
// so the infill sampler leaves the end-of-text token (0, the least likely)
// alone, at every draw; without infill the draws vary.
func TestDeviceInfill(t *testing.T) {
	built := 0
	v := sample.NewInfillVocab(8, func(int32) []byte { return nil }, func(int32) bool { return false }, 0)
	d := newDevice(0, flatBackend{}, func() *sample.InfillVocab { built++; return v }, nil)().(*device)
	draws := func(infill bool) []int32 {
		var ids []int32
		for draw := range uint64(20) {
			p := &messages.SamplingParams{Temperature: 1, Seed: 3, HasSeed: true, Infill: infill}
			step := &messages.Step{Tokens: []int32{1}, Positions: []int32{0}, Seq: []int32{0}, Logits: []bool{true},
				BlockTables: [][]int32{{0}}, Samples: []messages.SampleSpec{{SeqID: map[bool]uint64{false: 1, true: 2}[infill], Params: p, Draw: draw}}}
			if err := d.forward(step); err != nil {
				t.Fatal(err)
			}
			toks, errs := d.sample(step)
			if errs != nil {
				t.Fatal(errs)
			}
			ids = append(ids, toks[0].ID)
		}
		return ids
	}
	for _, id := range draws(true) {
		if id != 0 {
			t.Fatalf("infill drew %d, want the end-of-text token 0 every time", id)
		}
	}
	if built == 0 {
		t.Error("the device never asked for the infill vocabulary")
	}
	others := 0
	for _, id := range draws(false) {
		if id != 0 {
			others++
		}
	}
	if others == 0 {
		t.Error("without infill every draw was token 0: the test cannot tell")
	}
}
