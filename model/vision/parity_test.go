package vision

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"image"
	"image/color"
	"image/gif"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/internal/imagetest"
)

// parityImages are testdata/img's images, whose llama.cpp references
// scripts/vision-ref.sh writes: a letterboxed wide one (two Idefics3
// tiles), an upscaled tall one (two rows), one with alpha (stb_image drops
// it, unblended), a downscaled one and a GIF (a palette).
var parityImages = []string{"wide", "tall", "alpha", "big", "gif"}

// parityShapes are the synth projectors (seed 1) the references are of.
var parityShapes = []string{"gemma3-tiny", "idefics3-tiny", "qwen2vl-tiny", "qwen2.5vl-tiny", "qwen3vl-tiny"}

// embBound is the largest max |Δ| of an embedding row allowed, as a
// fraction of the row's standard deviation: the text models' kind of
// bound (testmodels' Bound). Measured 0.16% (gemma3-tiny 0.06-0.10%,
// idefics3-tiny 0.12-0.16%) against libmtmd b10573 (whose embeddings
// equal scripts/vision-ggml-dump.cpp's bit for bit) on an AVX2 x86-64: troupe's
// F32/F16 products sum in AVX-512 ggml's order, its softmax takes glibc's
// expf where ggml takes its SIMD one, and a last-bit difference then
// flips an f16 rounding now and then (GELU's table, the f16 activations
// of the F16 products). qwen2vl-tiny: 0.18-0.20% (its quick GELU's
// table is ggml's bit for bit). qwen2.5vl-tiny: 0.13-0.22% (its window layers
// also sum each window's products alone). qwen3vl-tiny: 0.19-0.23% over
// whole rows (the merger's values and the deepstack layers'). The pixels
// are bit-exact.
const embBound = 0.005

// TestWriteParityImages writes testdata/img when TROUPE_WRITE_TESTDATA is
// set (scripts/vision-ref.sh runs it); otherwise it checks they are there.
func TestWriteParityImages(t *testing.T) {
	imgs := map[string]image.Image{"wide": testImage(100, 50), "tall": testImage(20, 60)}
	a := image.NewNRGBA(image.Rect(0, 0, 37, 23))
	for y := range 23 {
		for x := range 37 {
			a.SetNRGBA(x, y, color.NRGBA{uint8(x * 7), uint8(y * 11), 200, uint8(x*y) | 1})
		}
	}
	imgs["alpha"] = a
	imgs["big"] = testImage(150, 90)
	for _, name := range parityImages {
		path := filepath.Join("testdata", "img", name+".png")
		if name == "gif" {
			path = filepath.Join("testdata", "img", name+".gif")
		}
		if os.Getenv("TROUPE_WRITE_TESTDATA") == "" {
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("%v (scripts/vision-ref.sh writes it)", err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		data := []byte(nil)
		if name == "gif" {
			var b bytes.Buffer
			if err := gif.Encode(&b, testImage(45, 45), nil); err != nil {
				t.Fatal(err)
			}
			data = b.Bytes()
		} else {
			data = imagetest.PNG(t, imgs[name])
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readF32 reads little-endian float32 values from path, gunzipped when it
// ends in .gz.
func readF32(t *testing.T, path string) []float32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (scripts/vision-ref.sh writes the references)", err)
	}
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if b, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// parityCase runs f for every shape and image, with the projector (synth,
// seed 1) and the prepared image.
func parityCase(t *testing.T, f func(t *testing.T, p *Projector, shape, name string, prep *Prepared)) {
	for _, shape := range parityShapes {
		p := tinyProjectorSeed(t, shape, 1)
		for _, name := range parityImages {
			t.Run(shape+"/"+name, func(t *testing.T) {
				file := name + ".png"
				if name == "gif" {
					file = name + ".gif"
				}
				f(t, p, shape, name, prepareFile(t, p, file))
			})
		}
	}
}

// TestParityPixels compares Prepare's pixels with llama.cpp's
// (mtmd-image.cpp's preprocessors after stb_image), bit for bit.
func TestParityPixels(t *testing.T) {
	parityCase(t, func(t *testing.T, p *Projector, shape, name string, prep *Prepared) {
		want := readF32(t, filepath.Join("testdata", shape, name+".pix.gz"))
		// llama.cpp's order: the overview first, then the tiles.
		tiles := prep.tiles
		if p.typ == "idefics3" {
			tiles = append([]pixels{tiles[len(tiles)-1]}, tiles[:len(tiles)-1]...)
		}
		var got []float32
		for _, tl := range tiles {
			got = append(got, tl.buf...)
		}
		if len(got) != len(want) {
			t.Fatalf("%d pixel values, llama.cpp %d", len(got), len(want))
		}
		diff := 0
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				if diff < 3 {
					t.Errorf("pixel value %d (tile pixel %d, channel %d): %v, llama.cpp %v", i, i/3, i%3, got[i], want[i])
				}
				diff++
			}
		}
		if diff > 0 {
			t.Fatalf("%d of %d pixel values differ", diff, len(got))
		}
	})
}

// TestParityEmbeddings compares Encode's rows with llama.cpp's (clip's
// encoder through libmtmd, scripts/vision-dump.cpp) within embBound.
func TestParityEmbeddings(t *testing.T) {
	if _, err := os.Stat(filepath.Join("testdata", parityShapes[0], parityImages[0]+".emb")); err != nil {
		t.Fatalf("no llama.cpp embedding references (scripts/vision-ref.sh writes them from a llama.cpp build with libmtmd): %v", err)
	}
	parityCase(t, func(t *testing.T, p *Projector, shape, name string, prep *Prepared) {
		got, err := p.Encode(compute.NewMatMuler(2), prep)
		if err != nil {
			t.Fatal(err)
		}
		want := readF32(t, filepath.Join("testdata", shape, name+".emb"))
		if p.typ == "idefics3" { // llama.cpp's order again: the overview's rows first
			n := p.tokens() * p.Dim()
			got = append(got[len(got)-n:], got[:len(got)-n]...)
		}
		if len(got) != len(want) {
			t.Fatalf("%d embedding values, llama.cpp %d", len(got), len(want))
		}
		worst, worstAbs := rowsOff(got, want, p.Dim())
		t.Logf("max |Δ| %.3g, max |Δ|/std %.4f%% (limit %.2f%%)", worstAbs, worst*100, embBound*100)
		if worst > embBound {
			t.Errorf("max |Δ|/std %.5f exceeds %.5f", worst, embBound)
		}
	})
}

// rowsOff is how far got is from want, rows of d values: the largest max
// |Δ| of a row as a fraction of the row's standard deviation (in want),
// and the largest |Δ|.
func rowsOff(got, want []float32, d int) (rel, abs float64) {
	for r := 0; r < len(want); r += d {
		var mean, sq, mx float64
		for _, v := range want[r : r+d] {
			mean += float64(v) / float64(d)
		}
		for i, v := range want[r : r+d] {
			sq += (float64(v) - mean) * (float64(v) - mean) / float64(d)
			mx = max(mx, math.Abs(float64(got[r+i])-float64(v)))
		}
		rel, abs = max(rel, mx/math.Sqrt(sq)), max(abs, mx)
	}
	return rel, abs
}
