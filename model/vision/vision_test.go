package vision

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"math"
	"path/filepath"
	"testing"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/internal/imagetest"
	"github.com/troupe-llm/troupe/internal/synth"
)

// tinyGemma3 writes and opens synth's gemma3-tiny projector (64x64
// images, 8x8 patches pooled 2x2: 16 rows of 64).
func tinyGemma3(t testing.TB) *Projector { return tinyProjector(t, "gemma3-tiny") }

// tinyProjector writes and opens one of synth's tiny projectors.
func tinyProjector(t testing.TB, shape string) *Projector { return tinyProjectorSeed(t, shape, 7) }

func tinyProjectorSeed(t testing.TB, shape string, seed uint64) *Projector {
	t.Helper()
	s, _ := synth.LookupProjectorShape(shape)
	return shapeProjector(t, s, seed)
}

// shapeProjector writes and opens a projector of shape s.
func shapeProjector(t testing.TB, s synth.ProjectorShape, seed uint64) *Projector {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mmproj.gguf")
	if err := synth.WriteProjector(path, synth.ProjectorOptions{Shape: s, Seed: seed}); err != nil {
		t.Fatal(err)
	}
	p, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// testImage is a w×h image with a gradient and a diagonal, so that every
// resize and pad shows.
func testImage(w, h int) *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			m.SetNRGBA(x, y, color.NRGBA{uint8(x * 255 / max(w-1, 1)), uint8(y * 255 / max(h-1, 1)), uint8((x + 3*y) * 7), 255})
		}
	}
	return m
}

func TestOpenCheck(t *testing.T) {
	p := tinyGemma3(t)
	if p.Type() != "gemma3" || p.Dim() != 64 {
		t.Fatalf("Type %q Dim %d, want gemma3 64", p.Type(), p.Dim())
	}
	if err := p.Check(64); err != nil {
		t.Fatal(err)
	}
	err := p.Check(2560)
	if !errors.Is(err, ErrMismatch) {
		t.Fatalf("Check(2560) = %v, want ErrMismatch", err)
	}
	t.Log(err)
	if _, err := Open(filepath.Join(t.TempDir(), "missing.gguf")); err == nil {
		t.Fatal("Open of a missing file: no error")
	}
}

func TestPrepareGemma3(t *testing.T) {
	p := tinyGemma3(t)
	t.Run("same size", func(t *testing.T) {
		m := testImage(64, 64)
		prep, err := p.Prepare(imagetest.PNG(t, m))
		if err != nil {
			t.Fatal(err)
		}
		if prep.Rows() != 16 || len(prep.Chunks) != 3 || prep.Chunks[0].Text != "<start_of_image>" || prep.Chunks[2].Text != "<end_of_image>" {
			t.Fatalf("chunks %+v", prep.Chunks)
		}
		tile := prep.tiles[0]
		for i, v := range m.Pix {
			if i%4 == 3 {
				continue
			}
			want := (float32(v)/255 - 0.5) / 0.5
			if got := tile.buf[i/4*3+i%4]; got != want {
				t.Fatalf("value %d: %v, want %v", i, got, want)
			}
		}
	})
	t.Run("letterbox", func(t *testing.T) {
		prep, err := p.Prepare(imagetest.PNG(t, testImage(40, 20)))
		if err != nil {
			t.Fatal(err)
		}
		if prep.Width != 40 || prep.Height != 20 {
			t.Fatalf("size %dx%d", prep.Width, prep.Height)
		}
		tile := prep.tiles[0]
		// 40x20 scales by 1.6 to 64x32, centred: rows 0-15 and 48-63 black.
		for _, y := range []int{0, 15, 48, 63} {
			if v := tile.buf[3*(y*64+10)]; v != -1 {
				t.Fatalf("row %d: %v, want the black pad (-1)", y, v)
			}
		}
		// The corners of the image land on the corners of the box.
		if v := tile.buf[3*(16*64+0)]; v != -1 {
			t.Fatalf("top left red %v, want -1 (0)", v)
		}
		if v := tile.buf[3*(16*64+63)]; v != 1 {
			t.Fatalf("top right red %v, want 1 (255)", v)
		}
	})
	t.Run("hash", func(t *testing.T) {
		a, _ := p.Prepare(imagetest.PNG(t, testImage(30, 50)))
		b, _ := p.Prepare(imagetest.PNG(t, testImage(30, 50)))
		c, _ := p.Prepare(imagetest.PNG(t, testImage(31, 50)))
		if a.Hash != b.Hash || a.Hash == c.Hash {
			t.Fatal("hash: the same image must give the same hash, another image another")
		}
	})
	t.Run("formats", func(t *testing.T) {
		m := testImage(33, 17)
		var j, g bytes.Buffer
		if err := jpeg.Encode(&j, m, nil); err != nil {
			t.Fatal(err)
		}
		if err := gif.Encode(&g, m, nil); err != nil {
			t.Fatal(err)
		}
		// A GIF whose first frame covers part of the screen.
		frame := image.NewPaletted(image.Rect(2, 3, 6, 7), color.Palette{color.Black, color.White})
		var part bytes.Buffer
		if err := gif.EncodeAll(&part, &gif.GIF{Image: []*image.Paletted{frame}, Delay: []int{0},
			Config: image.Config{Width: 10, Height: 12, ColorModel: frame.Palette}}); err != nil {
			t.Fatal(err)
		}
		if prep, err := p.Prepare(part.Bytes()); err != nil || prep.Width != 10 || prep.Height != 12 {
			t.Fatalf("partial GIF frame: %v", err)
		}
		gray := image.NewGray16(image.Rect(0, 0, 5, 5))
		for _, data := range [][]byte{j.Bytes(), g.Bytes(), imagetest.PNG(t, gray)} {
			if _, err := p.Prepare(data); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// pngHeader is a PNG signature and IHDR chunk declaring w×h 8-bit RGB,
// with no image data.
func pngHeader(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 17)
	copy(ihdr, "IHDR")
	binary.BigEndian.PutUint32(ihdr[4:], w)
	binary.BigEndian.PutUint32(ihdr[8:], h)
	ihdr[12], ihdr[13] = 8, 2
	binary.Write(&b, binary.BigEndian, uint32(13))
	b.Write(ihdr)
	binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(ihdr))
	return b.Bytes()
}

func TestPrepareBadInput(t *testing.T) {
	p := tinyGemma3(t)
	good := imagetest.PNG(t, testImage(20, 20))
	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrFormat},
		{"text", []byte("this is not an image"), ErrFormat},
		{"truncated png", good[:len(good)/2], ErrFormat},
		{"header only", pngHeader(20, 20), ErrFormat},
		{"bmp", append([]byte("BM"), make([]byte, 60)...), ErrFormat},
		{"30000x30000", pngHeader(30000, 30000), ErrTooLarge},
		{"9000x10", pngHeader(9000, 10), ErrTooLarge},
		{"zero width", pngHeader(0, 10), ErrFormat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.Prepare(tc.data)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
	q := *p
	q.Limits.MaxBytes = 100
	if _, err := q.Prepare(good); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over MaxBytes: %v", err)
	}
}

func FuzzPrepare(f *testing.F) {
	p := tinyGemma3(f)
	f.Add(imagetest.PNG(f, testImage(9, 7)))
	f.Add(pngHeader(30000, 30000))
	f.Add([]byte("GIF89a"))
	f.Fuzz(func(t *testing.T, data []byte) {
		prep, err := p.Prepare(data)
		if err != nil {
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error %v is neither ErrFormat nor ErrTooLarge", err)
			}
			return
		}
		if prep.Rows() != 16 || len(prep.tiles[0].buf) != 64*64*3 {
			t.Fatalf("rows %d", prep.Rows())
		}
	})
}

func TestEncodeGemma3(t *testing.T) {
	p := tinyGemma3(t)
	prep, err := p.Prepare(imagetest.PNG(t, testImage(50, 37)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Encode(compute.NewMatMuler(1), prep)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != prep.Rows()*p.Dim() {
		t.Fatalf("%d values, want %d", len(got), prep.Rows()*p.Dim())
	}
	// The same bits whatever the workers.
	again, err := p.Encode(compute.NewMatMuler(3), prep)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(again[i]) {
			t.Fatalf("value %d: %v with 1 worker, %v with 3", i, got[i], again[i])
		}
	}
	// Against a plain float64 reference of the same graph: catches layout
	// mistakes (the kernels' rounding differs from it by far less).
	checkReference(t, p, prep, got)
}

// checkReference compares Encode's output with the float64 reference of
// each tile, in Chunks' order (the tiles' order).
func checkReference(t *testing.T, p *Projector, prep *Prepared, got []float32) {
	t.Helper()
	var want []float64
	for i := range prep.tiles {
		want = append(want, reference(t, p, &prep.tiles[i])...)
	}
	if len(want) != len(got) {
		t.Fatalf("%d values, the reference %d", len(got), len(want))
	}
	var maxDiff, maxAbs float64
	for i := range got {
		maxDiff = max(maxDiff, math.Abs(float64(got[i])-want[i]))
		maxAbs = max(maxAbs, math.Abs(want[i]))
	}
	t.Logf("max |troupe - float64 reference| %.3g (values up to %.3g)", maxDiff, maxAbs)
	if maxDiff > 0.02*maxAbs || maxAbs == 0 {
		t.Fatalf("max difference %.3g against the reference (values up to %.3g)", maxDiff, maxAbs)
	}
}

func TestIdefics3(t *testing.T) {
	p := tinyProjector(t, "idefics3-tiny") // 32x32 tiles of 8x8 patches, shuffled 2x2: 16 rows; longest edge 64
	if p.Type() != "idefics3" {
		t.Fatalf("type %q", p.Type())
	}
	prep, err := p.Prepare(imagetest.PNG(t, testImage(100, 50)))
	if err != nil {
		t.Fatal(err)
	}
	// 100x50 → 64x32: one row of two tiles, then the overview.
	var texts []string
	for _, c := range prep.Chunks {
		if c.Embeds == 0 {
			texts = append(texts, c.Text)
		} else if c.Embeds != 16 {
			t.Fatalf("a run of %d rows, want 16", c.Embeds)
		}
	}
	want := []string{"<fake_token_around_image><row_1_col_1>", "<fake_token_around_image><row_1_col_2>",
		"\n\n<fake_token_around_image><global-img>", "<fake_token_around_image>"}
	if len(texts) != len(want) || prep.Rows() != 48 || len(prep.tiles) != 3 {
		t.Fatalf("texts %q, rows %d, tiles %d", texts, prep.Rows(), len(prep.tiles))
	}
	for i := range want {
		if texts[i] != want[i] {
			t.Fatalf("text %d %q, want %q", i, texts[i], want[i])
		}
	}
	// A tall image: two rows of one tile, a newline between them.
	tall, err := p.Prepare(imagetest.PNG(t, testImage(20, 60)))
	if err != nil {
		t.Fatal(err)
	}
	if tall.gridX != 1 || tall.gridY != 2 || tall.Chunks[2].Text != "\n" {
		t.Fatalf("grid %dx%d, chunks %+v", tall.gridX, tall.gridY, tall.Chunks)
	}
	got, err := p.Encode(compute.NewMatMuler(2), prep)
	if err != nil {
		t.Fatal(err)
	}
	checkReference(t, p, prep, got)

	q := *p
	q.Limits.MaxTiles = 1
	if _, err := q.Prepare(imagetest.PNG(t, testImage(100, 50))); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("two tiles over MaxTiles 1: %v, want ErrTooLarge", err)
	}
}
