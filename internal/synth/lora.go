package synth

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/model/gguf"
)

// LoRATargets are the weights a random adapter adapts by default: every
// projection of a dense block.
var LoRATargets = []string{"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"}

// LoRAOptions says what WriteLoRA writes.
type LoRAOptions struct {
	Base    *gguf.File // the model the adapter is for: its architecture and weight shapes
	Rank    int        // r: lora_a is [in, r], lora_b [r, out]
	Alpha   float32    // adapter.lora.alpha; 0: none (the scale applies as given)
	Targets []string   // weight kinds adapted in every block ("attn_q", ...); nil: LoRATargets
	Seed    uint64
	// Type is the tensors' type: compute.F32 (the zero value) or
	// compute.F16 (llama.cpp's convert_lora_to_gguf.py's default).
	Type compute.DType
}

// WriteLoRA writes a LoRA adapter of random F32 (or o.Type) weights for o.Base in
// llama.cpp's GGUF format (general.type adapter, adapter.type lora) to
// path, and returns the number of weights it adapts. A's values have
// variance 1/in and B's 1/(100·rank): B·A·x is about a tenth of x, a
// clear change that keeps the model working.
func WriteLoRA(path string, o LoRAOptions) (int, error) {
	arch, _ := o.Base.String("general.architecture")
	if o.Rank < 1 {
		return 0, fmt.Errorf("synth: lora rank %d: want at least 1", o.Rank)
	}
	typ := o.Type // compute.F32 is the zero value
	if typ != compute.F32 && typ != compute.F16 {
		return 0, fmt.Errorf("synth: lora type %s: want F32 or F16", typ)
	}
	targets := o.Targets
	if targets == nil {
		targets = LoRATargets
	}
	gw := gguf.NewWriter(3)
	gw.SetKV("general.architecture", arch)
	gw.SetKV("general.type", "adapter")
	gw.SetKV("general.name", "troupe synthetic lora")
	gw.SetKV("adapter.type", "lora")
	gw.SetKV("adapter.lora.alpha", o.Alpha)
	n := 0
	for _, ti := range o.Base.Tensors() {
		kind, ok := loraKind(ti.Name)
		if !ok || !slices.Contains(targets, kind) || len(ti.Shape) != 2 {
			continue
		}
		in, out := ti.Shape[0], ti.Shape[1]
		base := strings.TrimSuffix(ti.Name, ".weight") + ".weight"
		a := randomF32(o.Seed, base+".lora_a", in*o.Rank, 1/math.Sqrt(float64(in)))
		b := randomF32(o.Seed, base+".lora_b", o.Rank*out, 0.1/math.Sqrt(float64(o.Rank)))
		if typ == compute.F16 {
			a, b = toF16(a), toF16(b)
		}
		if err := gw.AddTensor(base+".lora_a", typ, []int{in, o.Rank}, a); err != nil {
			return 0, fmt.Errorf("synth: %w", err)
		}
		if err := gw.AddTensor(base+".lora_b", typ, []int{o.Rank, out}, b); err != nil {
			return 0, fmt.Errorf("synth: %w", err)
		}
		n++
	}
	if n == 0 {
		return 0, fmt.Errorf("synth: %s has no weights of kinds %s to adapt", o.Base.Path, strings.Join(targets, ", "))
	}
	return n, writeGGUF(path, gw)
}

// loraKind is the kind of a block's weight ("blk.3.attn_q.weight":
// attn_q).
func loraKind(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return "", false
	}
	_, rest, ok = strings.Cut(rest, ".")
	kind, ok2 := strings.CutSuffix(rest, ".weight")
	return kind, ok && ok2
}

// randomF32 is n normal values of standard deviation std as little-endian
// float32 bytes, seeded by seed and name.
func randomF32(seed uint64, name string, n int, std float64) []byte {
	h := fnv.New64a()
	h.Write([]byte(name))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	out := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(float32(rng.NormFloat64()*std)))
	}
	return out
}

// toF16 rounds little-endian float32 bytes to little-endian f16 bytes.
func toF16(f []byte) []byte {
	out := make([]byte, len(f)/2)
	for i := range len(f) / 4 {
		binary.LittleEndian.PutUint16(out[2*i:], compute.FP32ToFP16(math.Float32frombits(binary.LittleEndian.Uint32(f[4*i:]))))
	}
	return out
}
