package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/troupe-llm/troupe/compute"
)

const (
	embedName  = "model.embed_tokens.weight"
	lmHeadName = "lm_head.weight"
)

func openT(t testing.TB, dir string) *Model {
	t.Helper()
	m, err := Open(dir)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func f32At(b []byte, i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])) }

func TestOpenTinyStories(t *testing.T) {
	m := openT(t, tinyStoriesDir(t))

	names := m.Names()
	if len(names) != 20 || !slices.IsSorted(names) || slices.Contains(names, embedName) {
		t.Errorf("Names() = %d names (sorted %v), want the 20 stored ones, sorted, without the alias", len(names), slices.IsSorted(names))
	}
	if got, want := m.Aliases(), map[string]string{embedName: lmHeadName}; !equalMaps(got, want) {
		t.Errorf("Aliases() = %v, want %v", got, want)
	}

	// Golden values read from the file with Python's struct module.
	tests := []struct {
		name        string
		shape       []int
		first, last float32 // golden values; 0, 0: not checked
	}{
		{lmHeadName, []int{128, 2048}, -0.68359375, -0.421875},
		{embedName, []int{128, 2048}, -0.68359375, -0.421875},
		{"model.norm.weight", []int{128}, 0.640625, 0.8359375},
		{"model.layers.1.self_attn.k_proj.weight", []int{128, 64}, 0.279296875, -0.06787109375},
		{"model.layers.0.mlp.down_proj.weight", []int{384, 128}, 0, 0},
		{"model.layers.0.mlp.gate_proj.weight", []int{128, 384}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ten, err := m.Tensor(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if ten.Name != tt.name || ten.Type != compute.F32 || !slices.Equal(ten.Shape, tt.shape) {
				t.Errorf("got %s %v %v, want %s F32 %v", ten.Name, ten.Type, ten.Shape, tt.name, tt.shape)
			}
			if len(ten.Data) != ten.Rows()*ten.RowBytes() {
				t.Errorf("len(Data) = %d, want %d", len(ten.Data), ten.Rows()*ten.RowBytes())
			}
			if tt.first != 0 || tt.last != 0 {
				if f, l := f32At(ten.Data, 0), f32At(ten.Data, ten.Elems()-1); f != tt.first || l != tt.last {
					t.Errorf("first, last = %v, %v, want %v, %v", f, l, tt.first, tt.last)
				}
			}
		})
	}

	embed, _ := m.Tensor(embedName)
	head, _ := m.Tensor(lmHeadName)
	if &embed.Data[0] != &head.Data[0] {
		t.Error("the tied embedding does not share lm_head's mapped bytes")
	}
	if info, err := m.Info(embedName); err != nil || info.Name != lmHeadName || info.DType != "F32" ||
		!slices.Equal(info.Shape, []int64{2048, 128}) || info.File != "model.safetensors" || info.Size != 2048*128*4 {
		t.Errorf("Info(%s) = %+v, %v", embedName, info, err)
	}
	if _, err := m.Tensor("model.layers.9.mlp.up_proj.weight"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing tensor: err = %v, want ErrNotFound", err)
	}
	if !m.Has(embedName) || m.Has("nope") {
		t.Error("Has is wrong")
	}
}

func TestModelFiles(t *testing.T) {
	dir := tinyStoriesDir(t)
	m := openT(t, dir)
	if m.Dir() != dir {
		t.Errorf("Dir() = %q, want %q", m.Dir(), dir)
	}
	c := m.Config()
	if c == nil || c.HiddenSize != 128 || c.NumKeyValueHeads != 4 || c.HeadDim != 16 || !c.TieWordEmbeddings ||
		c.RopeScaling != nil || !slices.Equal(c.EOSTokenID, TokenIDs{2}) || c.RMSNormEps != 1e-6 {
		t.Errorf("Config() = %+v", c)
	}
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json", "generation_config.json"} {
		b, err := m.ReadFile(name)
		if err != nil || !bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
			t.Errorf("ReadFile(%s) = %d bytes, %v", name, len(b), err)
		}
	}
	if _, err := m.ReadFile("chat_template.jinja"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v, want fs.ErrNotExist", err)
	}
	if _, err := m.ReadFile("../MANIFEST.md"); err == nil {
		t.Error("ReadFile outside the directory succeeded")
	}
}

func TestClose(t *testing.T) {
	m, err := Open(tinyStoriesDir(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Tensor(lmHeadName); !errors.Is(err, ErrClosed) {
		t.Errorf("Tensor after Close: err = %v, want ErrClosed", err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestOpenShardedReal splits the real file into two shards with an index and
// checks that every tensor matches the single-file model byte for byte. The
// alias lives in the shard that does not hold lm_head.
func TestOpenShardedReal(t *testing.T) {
	src := tinyStoriesDir(t)
	whole := openT(t, src)
	b, err := os.ReadFile(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	rh := decodeFile(t, b)
	slices.SortFunc(rh.tensors, func(a, b testTensor) int { return strings.Compare(a.name, b.name) })
	var shard1, shard2 []testTensor
	weightMap := map[string]string{}
	for i, tt := range rh.tensors {
		file := "model-00001-of-00002.safetensors"
		if i%2 == 1 && tt.name != lmHeadName {
			file = "model-00002-of-00002.safetensors"
			shard2 = append(shard2, tt)
		} else {
			shard1 = append(shard1, tt)
		}
		weightMap[tt.name] = file
	}
	dir := writeDir(t, map[string][]byte{
		"model-00001-of-00002.safetensors": encodeFile(t, shard1, map[string]string{"format": "pt"}),
		"model-00002-of-00002.safetensors": encodeFile(t, shard2, rh.meta),
		"model.safetensors.index.json":     indexJSON(t, weightMap),
	})
	m := openT(t, dir)
	if !slices.Equal(m.Names(), whole.Names()) {
		t.Fatalf("Names() = %v, want %v", m.Names(), whole.Names())
	}
	for _, name := range append(whole.Names(), embedName) {
		t.Run(name, func(t *testing.T) {
			got, err := m.Tensor(name)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := whole.Tensor(name)
			if !slices.Equal(got.Shape, want.Shape) || got.Type != want.Type || !bytes.Equal(got.Data, want.Data) {
				t.Errorf("sharded tensor differs: %v %v vs %v %v", got.Type, got.Shape, want.Type, want.Shape)
			}
			info, _ := m.Info(name)
			if wm := weightMap[info.Name]; info.File != wm {
				t.Errorf("Info.File = %s, want %s", info.File, wm)
			}
		})
	}
}

// TestSyntheticDTypes checks dtype conversion, shape order and values on
// tensors with known bits, split over two shards.
func TestSyntheticDTypes(t *testing.T) {
	f16 := testTensor{"f16", "F16", []int64{2, 3}, u16s(0x3C00, 0xC000, 0x3800, 0x0000, 0x7C00, 0x0001)} // 1, -2, 0.5, 0, +inf, 2^-24
	bf16 := testTensor{"bf16", "BF16", []int64{3, 1, 2}, u16s(0x3F80, 0xC000, 0x4049, 0x0000, 0xFF80, 0x3E80)}
	odd := testTensor{"odd.f16", "F16", []int64{3}, u16s(1, 2, 3)} // leaves the next tensor 2-byte aligned
	f32 := testTensor{"f32", "F32", []int64{2}, u32s(math.Float32bits(1.5), math.Float32bits(-3))}
	scalar := testTensor{"scalar", "F32", []int64{}, u32s(math.Float32bits(7))}
	empty := testTensor{"empty", "BF16", []int64{0, 4}, nil}
	i8 := testTensor{"i8", "I8", []int64{4}, []byte{1, 2, 3, 0xff}}
	f64 := testTensor{"f64", "F64", []int64{1}, make([]byte, 8)}
	dir := writeDir(t, map[string][]byte{
		"model-00001-of-00002.safetensors": encodeFile(t, []testTensor{f16, i8}, nil),
		"model-00002-of-00002.safetensors": encodeFile(t, []testTensor{bf16, odd, f32, scalar, empty, f64}, nil),
		"model.safetensors.index.json": indexJSON(t, map[string]string{
			"f16": "model-00001-of-00002.safetensors", "i8": "model-00001-of-00002.safetensors",
			"bf16": "model-00002-of-00002.safetensors", "odd.f16": "model-00002-of-00002.safetensors",
			"f32": "model-00002-of-00002.safetensors", "scalar": "model-00002-of-00002.safetensors",
			"empty": "model-00002-of-00002.safetensors", "f64": "model-00002-of-00002.safetensors",
		}),
	})
	m := openT(t, dir)

	tests := []struct {
		name  string
		typ   compute.DType
		shape []int
		data  []byte
	}{
		{"f16", compute.F16, []int{3, 2}, f16.data},
		{"bf16", compute.BF16, []int{2, 1, 3}, bf16.data},
		{"odd.f16", compute.F16, []int{3}, odd.data},
		{"f32", compute.F32, []int{2}, f32.data},
		{"scalar", compute.F32, []int{1}, scalar.data},
		{"empty", compute.BF16, []int{4, 0}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ten, err := m.Tensor(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if ten.Type != tt.typ || !slices.Equal(ten.Shape, tt.shape) || !bytes.Equal(ten.Data, tt.data) {
				t.Errorf("got %v %v % x, want %v %v % x", ten.Type, ten.Shape, ten.Data, tt.typ, tt.shape, tt.data)
			}
			if len(ten.Data) > 0 && uintptr(unsafe.Pointer(&ten.Data[0]))%uintptr(tt.typ.TypeSize()) != 0 {
				t.Errorf("Data is not %d-byte aligned", tt.typ.TypeSize())
			}
		})
	}
	// The values behind the bits: BF16 is the top half of a float32.
	b, _ := m.Tensor("bf16")
	if v := math.Float32frombits(uint32(binary.LittleEndian.Uint16(b.Data[4:])) << 16); v != 3.140625 {
		t.Errorf("bf16[2] = %v, want 3.140625", v)
	}
	for _, name := range []string{"i8", "f64"} {
		_, err := m.Tensor(name)
		if !errors.Is(err, ErrUnsupportedDType) || !strings.Contains(err.Error(), strings.ToUpper(name)) {
			t.Errorf("Tensor(%s): err = %v, want ErrUnsupportedDType naming the dtype", name, err)
		}
		if info, err := m.Info(name); err != nil || info.DType != strings.ToUpper(name) {
			t.Errorf("Info(%s) = %+v, %v", name, info, err)
		}
	}
}

// TestConcurrentReads reads every tensor from several goroutines; run with
// -race to check the concurrency contract.
func TestConcurrentReads(t *testing.T) {
	m := openT(t, tinyStoriesDir(t))
	names := append(m.Names(), embedName)
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			var err error
			for _, name := range names {
				var ten *compute.Tensor
				if ten, err = m.Tensor(name); err != nil {
					break
				}
				_ = f32At(ten.Data, ten.Elems()-1)
				_ = m.Has(name)
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
