package messages

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// every lists one filled value of every message type; TestEveryTypeListed
// keeps it complete.
var every = []any{
	&GenerateRequest{RequestID: "r1", Prompt: []int32{1, 2, 3}, N: 2, MaxTokens: 16,
		Sampling: SamplingParams{Temperature: 0.7, TopK: 40, TopP: 0.9, MinP: 0.05, RepetitionPenalty: 1.1,
			PresencePenalty: 0.5, FrequencyPenalty: -0.5, PenaltyLastN: 64, LogitBias: map[int32]float32{5: float32(math.Inf(-1)), 7: 2},
			Seed: 42, HasSeed: true, WantLogprob: true, Logprobs: 3, MinKeep: 2, TypicalP: 0.9, XTCProbability: 0.5,
			XTCThreshold: 0.1, DryMultiplier: 0.8, DryBase: 1.75, DryAllowedLength: 2, DryPenaltyLastN: -1,
			DryBreakers: []string{"\n"}, DryBreakerTokens: [][]int32{{13}, {5, 6}},
			Mirostat: 2, MirostatTau: 5, MirostatEta: 0.1, Infill: true},
		Stop: []string{"\n\n", "END"}, StopTokenIDs: []int32{2}, IgnoreEOS: true, Priority: -1,
		IncludeStopStr: true, MinTokens: 3, MaxPredictNanos: 5e8,
		Grammar: &Grammar{Kind: GrammarJSONSchema, Source: `{"type":"object"}`}, SpecialText: true,
		Speculative:     &SpeculativeParams{Off: true, NMax: 8, NMin: 2, PMin: 0.5},
		ReasoningBudget: &ReasoningBudget{Tokens: 128, Start: "<think>", End: "</think>", Message: "Enough."},
		LoRA:            []LoRARef{{ID: 1, Scale: -0.5}, {ID: 0, Scale: 2}},
		Images:          []ImageInput{{Pos: 1, Rows: 2, Hash: [32]byte{7, 31: 1}, Row: 3, Embeds: []float32{0.5, -1}, Positions: [][3]int32{{1, 1, 1}, {1, 1, 2}}}}},
	&OutputChunk{RequestID: "r1", Index: 1, Tokens: []Token{{ID: 9, Logprob: -0.25, Top: []TokenLogprob{{9, -0.25}, {3, float32(math.Inf(-1))}}}},
		Text: "héllo", FinishReason: FinishStop, Err: "e", Invalid: true, QueueNanos: 5, Preemptions: 2, StopString: "END", Done: true, Usage: &Usage{PromptTokens: 3, CompletionTokens: 4, CachedTokens: 16, Preemptions: 2, DraftTokens: 6, AcceptedDraftTokens: 3}},
	&SequenceOutput{SeqID: 7, Index: 1, Tokens: []Token{{ID: 1}}, Text: "a", FinishReason: FinishError, Err: "boom", Invalid: true, NumCachedTokens: 32, QueueNanos: 6, Preemptions: 1, StopString: "END", Drafted: 4, Accepted: 2},
	&Cancel{RequestID: "r1", SeqID: 7, Reason: "client gone"},
	&StepRequest{SeqID: 7, New: &NewSequence{Prompt: []int32{1, 2}, MaxTokens: 5, Priority: 3,
		Sampling: SamplingParams{Temperature: 1}, StopTokenIDs: []int32{0}, IgnoreEOS: true, Embed: &EmbedParams{Pooling: "mean", Whole: true}, LoRA: []LoRARef{{ID: 2, Scale: 1}},
		Images: []ImageInput{{Pos: 0, Rows: 1, Hash: [32]byte{1}, Embeds: []float32{2}, Bidirectional: true}}}, Mask: []uint64{5, 1 << 63}, Draft: []int32{8, 9}, DraftMasks: [][]uint64{{1}, nil},
		DraftQ: []DraftDist{{IDs: []int32{8, 3}, P: []float32{0.75, 0.25}}, {IDs: []int32{9}, P: []float32{1}}}},
	&StepResult{SeqID: 7, Token: Token{ID: 4, Logprob: -1}, NumCachedTokens: 16, QueueNanos: 7, Finish: FinishLength, Err: "x", Embedding: []float32{0.5, -1},
		Tokens: []Token{{ID: 4, Logprob: -1}, {ID: 6}}, Drafted: 3, Accepted: 1, NoDraft: true},
	&Preempted{SeqID: 7, Mode: ModeSwap},
	&Step{StepID: 3, Tokens: []int32{1, 2, 3}, Positions: []int32{0, 1, 5}, Seq: []int32{0, 0, 1},
		BlockTables: [][]int32{{4}, {0, 9}}, Logits: []bool{false, true, true},
		Samples: []SampleSpec{{SeqID: 1, Params: &SamplingParams{}, Draw: 0}, {SeqID: 2, Params: &SamplingParams{TopK: 1}, History: []int32{1, 2}, Draw: 5, Mask: []uint64{3}, Verify: true, Draft: 7,
			DraftQ: &DraftDist{IDs: []int32{7, 2}, P: []float32{0.5, 0.5}}}},
		Embeds: []EmbedSpec{{Seq: 1, SeqID: 2, Pooling: "cls"}},
		LoRA:   [][]LoRARef{{}, {{ID: 1, Scale: 0.5}}},
		Inputs: [][]float32{nil, {0.5, 1}, nil}, AttendTo: []int32{0, 2, 0},
		RopePositions: [][3]int32{{0, 0, 0}, {1, 1, 2}, {5, 5, 5}}},
	&StepDone{StepID: 3, Tokens: []Token{{ID: 1}, {ID: 2}}, Errs: []string{"", "banned"}, Err: "e", ForwardNanos: 12345,
		Embeddings: [][]float32{nil, {0.25, 2}}},
	&SwapOut{Blocks: []BlockCopy{{Src: 1, Dst: 3}, {Src: 2, Dst: 1}}},
	&SwapIn{Blocks: []BlockCopy{{Src: 0, Dst: 5}}},
	&Free{SeqIDs: []uint64{1, 2}},
	&DeviceRestarted{Device: 1, Reason: "panic"},
	&GetStats{},
	&CachedTokens{Tokens: []int32{1, 2, 3}},
	&KVCached{NumCachedTokens: 16, Err: "e"},
	&ExportKV{Tokens: []int32{1, 2}, From: 16, MaxBlocks: 4},
	&KVExported{Shape: KVShape{Type: "f16", Layers: 2, KVDim: 8, BlockSize: 16, RowBytes: 16}, From: 16, Blocks: 1, Data: []byte{1, 2}, Err: "e"},
	&ImportKV{Tokens: []int32{1, 2}, Shape: KVShape{Type: "q8_0", Layers: 1, KVDim: 32, BlockSize: 16, RowBytes: 34}, From: 32, Blocks: 2, Data: []byte{3}},
	&KVImported{NumCachedTokens: 32, Imported: 2, Err: "e"},
	&Stats{Running: 1, Waiting: 2, Swapped: 3, NumBlocks: 4, NumFreeBlocks: 5, KVCacheUsage: 0.5, PrefixQueries: 6,
		PrefixHits: 7, Preemptions: 8, SwapOuts: 9, SwapIns: 10, Steps: 11, StepTokens: 16, ForwardNanos: 17, Rejected: 12, DeviceRestarts: 13, HostBlocks: 14, FreeHostBlocks: 15,
		NumCachedBlocks: 18, WindowFreedBlocks: 19, SpecDrafts: 20, SpecDraftTokens: 21, SpecAcceptedTokens: 22, SpecAcceptedPerPos: []int64{3, 1}, Devices: []DeviceStats{{Running: 1, Waiting: 2, Swapped: 3, NumBlocks: 4, NumFreeBlocks: 2, NumCachedBlocks: 1,
			Preemptions: 5, Steps: 6, StepTokens: 7, StepSeqs: 8, Samples: 9, ForwardNanos: 10, Dead: true}}},
}

func TestMsgpackRoundTrip(t *testing.T) {
	for _, m := range every {
		name := reflect.TypeOf(m).Elem().Name()
		t.Run(name, func(t *testing.T) {
			b, err := msgpack.Marshal(m)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			got := reflect.New(reflect.TypeOf(m).Elem()).Interface()
			if err := msgpack.Unmarshal(b, got); err != nil {
				t.Fatalf("unmarshal: %v", err)
			}
			if !reflect.DeepEqual(got, m) {
				t.Fatalf("round trip changed the message:\n got %+v\nwant %+v", got, m)
			}
		})
	}
}

// TestEveryTypeListed fails when a struct type of this package is neither a
// round-trip case nor reached from one, or when a field of a case is left at
// its zero value (so its encoding is not exercised).
func TestEveryTypeListed(t *testing.T) {
	reached := map[string]bool{}
	set := map[string]bool{} // "Type.Field" seen non-zero
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Slice:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Struct:
			reached[v.Type().Name()] = true
			for i := range v.NumField() {
				if !v.Field(i).IsZero() {
					set[v.Type().Name()+"."+v.Type().Field(i).Name] = true
				}
				walk(v.Field(i))
			}
		}
	}
	for _, m := range every {
		walk(reflect.ValueOf(m))
	}
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	declared := 0
	for _, f := range pkgs["messages"].Files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range g.Specs {
				if ts, ok := spec.(*ast.TypeSpec); ok && ts.Name.IsExported() {
					declared++
					if !reached[ts.Name.Name] {
						t.Errorf("message type %s has no round-trip case", ts.Name.Name)
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					for _, f := range st.Fields.List {
						if f.Tag != nil && strings.Contains(f.Tag.Value, `msgpack:"-"`) {
							continue // in process only (ImageInput.Image): not sent
						}
						for _, n := range f.Names {
							if !set[ts.Name.Name+"."+n.Name] {
								t.Errorf("%s.%s is zero in every round-trip case", ts.Name.Name, n.Name)
							}
						}
					}
				}
			}
		}
	}
	if declared < 10 {
		t.Fatalf("found only %d declared types", declared)
	}
}

// TestLoRAEmptyIsNotNil: a request's "lora": [] (the base model) survives
// msgpack as an empty list, apart from no field (every adapter).
func TestLoRAEmptyIsNotNil(t *testing.T) {
	for _, in := range []*GenerateRequest{{LoRA: []LoRARef{}}, {}} {
		b, err := msgpack.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		var out GenerateRequest
		if err := msgpack.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		if (out.LoRA == nil) != (in.LoRA == nil) || len(out.LoRA) != 0 {
			t.Errorf("LoRA %#v came back as %#v", in.LoRA, out.LoRA)
		}
	}
}
