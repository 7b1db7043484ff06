package cluster

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/model"
)

// stagesModel opens stories260K as the stage st.
func stagesModel(t *testing.T, st model.Stage) *model.Model {
	t.Helper()
	m, err := model.OpenWith(testmodels.Path(t, "stories260K.gguf"), model.LoadOptions{Stage: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestStageStepBad feeds a stage actor's forward malformed steps, as a
// member could receive them from the network: each is an error that says
// what is wrong, never a panic or a write outside the cache; and an
// envelope of a step declaring more elements than it has bytes is refused
// before anything is allocated.
func TestStageStepBad(t *testing.T) {
	m := stagesModel(t, model.Stage{Lo: 3, Hi: 5}) // the last of two stages
	cache, err := m.NewStageCache(0, 4, 16)
	if err != nil {
		t.Fatal(err)
	}
	a := &stageActor{m: m, state: model.NewState(&m.Config, 1), cache: cache, index: 1}
	dim := m.Config.Dim
	good := func() *stageStep {
		return &stageStep{Tokens: []int32{1, 2}, Positions: []int32{0, 1}, Seq: []int32{0, 0}, Tables: [][]int32{{0}},
			Logits: []bool{false, true}, Hidden: f32Bytes(make([]float32, 2*dim))}
	}
	if _, err := a.forward(good()); err != nil {
		t.Fatalf("a good step: %v", err)
	}
	if len(a.logits) != m.Config.VocabSize {
		t.Fatalf("%d logits, want one row of %d", len(a.logits), m.Config.VocabSize)
	}
	for _, tc := range []struct {
		name, want string
		edit       func(s *stageStep)
	}{
		{"short hidden", "hidden rows of", func(s *stageStep) { s.Hidden = s.Hidden[:len(s.Hidden)-4] }},
		{"long hidden", "hidden rows of", func(s *stageStep) { s.Hidden = append(s.Hidden, 0, 0, 0, 0) }},
		{"token outside the vocabulary", "outside the vocabulary", func(s *stageStep) { s.Tokens[1] = 1 << 30 }},
		{"block outside the cache", "outside the cache", func(s *stageStep) { s.Tables[0][0] = 99 }},
		{"position past the table", "not covered", func(s *stageStep) { s.Positions[1] = 40 }},
		{"sequence index", "sequence", func(s *stageStep) { s.Seq[1] = 3 }},
		{"logit flags", "logit flags", func(s *stageStep) { s.Logits = s.Logits[:1] }},
		{"routed on past the last stage", "routed", func(s *stageStep) { s.Route = []pid{{Address: "x", ID: "y"}} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := good()
			tc.edit(s)
			_, err := a.forward(s)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want an error with %q", err, tc.want)
			}
		})
	}
	// A step whose hidden bytes declare 2^31 of them in 20 bytes.
	b := wrap(&envelope{Step: good()}).GetValue()
	i := strings.Index(string(b), "\xa1h\xc5") // "h": bin 16 of the hidden rows
	if i < 0 {
		t.Fatal("no hidden rows in the encoding")
	}
	bad := append(append([]byte{}, b[:i+2]...), 0xc6, 0x7f, 0xff, 0xff, 0xff)
	if _, err := unwrap(wrapperspb.Bytes(bad)); err == nil {
		t.Error("a step declaring 2 GiB of hidden rows decoded")
	}
}
