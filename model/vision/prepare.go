package vision

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	_ "image/gif" // registers GIF: Decode takes the first frame
	_ "image/jpeg"
	_ "image/png"
	"math"

	_ "golang.org/x/image/webp"
)

// rgb is a decoded image as llama.cpp's clip_image_u8: nx·ny·3 bytes, RGB
// interleaved per pixel, rows top to bottom.
type rgb struct {
	nx, ny int
	buf    []byte
}

// Prepare decodes one image file and preprocesses it for the projector:
// see the package comment. Errors wrap ErrFormat (not an image Prepare can
// decode) or ErrTooLarge (over p.Limits, found before decoding).
func (p *Projector) Prepare(data []byte) (*Prepared, error) {
	img, err := p.decode(data)
	if err != nil {
		return nil, err
	}
	out := &Prepared{Width: img.nx, Height: img.ny}
	switch p.typ {
	case "gemma3":
		// mtmd_image_preprocessor_fixed_size: one image_size square,
		// letterboxed (clip.cpp's default PAD_CEIL, black), bilinear.
		sz := p.hp.imageSize
		out.tiles = []pixels{normalize(resizePadded(img, sz, sz, resizeBilinear), p.hp.mean, p.hp.std)}
		out.gridX, out.gridY = 1, 1
		out.Chunks = []Chunk{{Text: "<start_of_image>"}, {Embeds: p.tokens()}, {Text: "<end_of_image>"}}
	case "idefics3":
		if err := p.prepareIdefics3(img, out); err != nil {
			return nil, err
		}
	case typeQwen2VL, typeQwen25VL, typeQwen3VL:
		p.prepareQwen(img, out)
	default:
		return nil, fmt.Errorf("vision: projector type %q cannot prepare images", p.typ)
	}
	out.Hash = hashTiles(out.tiles)
	return out, nil
}

// prepareIdefics3 is mtmd_image_preprocessor_idefics3 and mtmd.cpp's
// Idefics3 layout: the image resized (its longer side to
// clip.vision.preproc_image_size, both sides up to multiples of
// image_size; bicubic, letterboxed) and cut into image_size tiles, row by
// row, each after "<fake_token_around_image><row_R_col_C>", a newline
// between rows; then the whole image squeezed to one tile (bilinear),
// the overview, between "\n\n<fake_token_around_image><global-img>" and
// "<fake_token_around_image>".
func (p *Projector) prepareIdefics3(img *rgb, out *Prepared) error {
	sz := p.hp.imageSize
	rw, rh := refinedSize(img.nx, img.ny, sz, p.hp.longestEdge)
	if n := (rw / sz) * (rh / sz); n > p.Limits.MaxTiles {
		return fmt.Errorf("%w: %dx%d pixels make %d tiles of %d, the limit is %d", ErrTooLarge, img.nx, img.ny, n, sz, p.Limits.MaxTiles)
	}
	refined := resizePadded(img, rw, rh, resizeBicubic)
	gx, gy := rw/sz, rh/sz
	n := p.tokens()
	for ty := range gy {
		for tx := range gx {
			tile := &rgb{nx: sz, ny: sz, buf: make([]byte, 3*sz*sz)}
			for y := range sz {
				copy(tile.buf[3*y*sz:3*(y+1)*sz], refined.buf[3*((ty*sz+y)*rw+tx*sz):])
			}
			out.tiles = append(out.tiles, normalize(tile, p.hp.mean, p.hp.std))
			out.Chunks = append(out.Chunks, Chunk{Text: fmt.Sprintf("<fake_token_around_image><row_%d_col_%d>", ty+1, tx+1)}, Chunk{Embeds: n})
		}
		if ty != gy-1 {
			out.Chunks = append(out.Chunks, Chunk{Text: "\n"})
		}
	}
	overview := img
	if img.nx != sz || img.ny != sz {
		overview = resizeBilinear(img, sz, sz)
	}
	out.tiles = append(out.tiles, normalize(overview, p.hp.mean, p.hp.std))
	out.Chunks = append(out.Chunks,
		Chunk{Text: "\n\n<fake_token_around_image><global-img>"}, Chunk{Embeds: n}, Chunk{Text: "<fake_token_around_image>"})
	out.gridX, out.gridY = gx, gy
	return nil
}

// refinedSize is img_tool::calc_size_preserved_ratio with align image
// size, no pixel bounds and the given longest edge (0: none).
func refinedSize(w, h, align, longest int) (int, int) {
	f := float32(align)
	if longest > 0 {
		scale := min(float32(longest)/float32(w), float32(longest)/float32(h))
		ceil := func(x float32) int { return int(math.Ceil(float64(x/f))) * align }
		return ceil(float32(w) * scale), ceil(float32(h) * scale)
	}
	round := func(x float32) int { return int(math.Round(float64(x/f))) * align }
	return max(align, round(float32(w))), max(align, round(float32(h)))
}

// decode checks the declared size, then decodes data to RGB bytes as
// stb_image does for llama.cpp (alpha dropped, not composited; 16-bit
// samples take their high byte).
func (p *Projector) decode(data []byte) (*rgb, error) {
	lim := p.Limits
	if lim.MaxBytes > 0 && len(data) > lim.MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(data), lim.MaxBytes)
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	w, h := cfg.Width, cfg.Height
	switch {
	case w < 1 || h < 1:
		return nil, fmt.Errorf("%w: %s of %dx%d pixels", ErrFormat, format, w, h)
	case w > lim.MaxSide || h > lim.MaxSide:
		return nil, fmt.Errorf("%w: %s of %dx%d pixels, the limit is %d a side", ErrTooLarge, format, w, h, lim.MaxSide)
	case w*h > lim.MaxPixels:
		return nil, fmt.Errorf("%w: %s of %dx%d pixels, the limit is %d pixels", ErrTooLarge, format, w, h, lim.MaxPixels)
	}
	m, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrFormat, format, err)
	}
	b := m.Bounds()
	screen := image.Rect(0, 0, w, h)
	if b != screen && format == "gif" && b.In(screen) {
		// A GIF's first frame may cover part of its logical screen: draw
		// it on a black screen of the declared size.
		c := image.NewNRGBA(screen)
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				c.Set(x, y, m.At(x, y))
			}
		}
		m, b = c, screen
	}
	if b.Dx() != w || b.Dy() != h {
		return nil, fmt.Errorf("%w: %s declares %dx%d pixels and holds %dx%d", ErrFormat, format, w, h, b.Dx(), b.Dy())
	}
	return toRGB(m), nil
}

// toRGB copies m's pixels into RGB bytes, with fast paths for the types
// the decoders return most.
func toRGB(m image.Image) *rgb {
	b := m.Bounds()
	w, h := b.Dx(), b.Dy()
	out := &rgb{nx: w, ny: h, buf: make([]byte, 3*w*h)}
	i := 0
	switch m := m.(type) {
	case *image.NRGBA:
		for y := range h {
			row := m.Pix[y*m.Stride : y*m.Stride+4*w]
			for x := 0; x < len(row); x += 4 {
				out.buf[i], out.buf[i+1], out.buf[i+2] = row[x], row[x+1], row[x+2]
				i += 3
			}
		}
	case *image.YCbCr:
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				yi, ci := m.YOffset(x, y), m.COffset(x, y)
				out.buf[i], out.buf[i+1], out.buf[i+2] = color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
				i += 3
			}
		}
	case *image.Gray:
		for y := range h {
			for _, v := range m.Pix[y*m.Stride : y*m.Stride+w] {
				out.buf[i], out.buf[i+1], out.buf[i+2] = v, v, v
				i += 3
			}
		}
	default:
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				r, g, bl := straightRGB(m.At(x, y))
				out.buf[i], out.buf[i+1], out.buf[i+2] = r, g, bl
				i += 3
			}
		}
	}
	return out
}

// straightRGB is a color's non-premultiplied red, green and blue bytes.
func straightRGB(c color.Color) (byte, byte, byte) {
	switch c := c.(type) {
	case color.NRGBA:
		return c.R, c.G, c.B
	case color.RGBA:
		if c.A == 0xff {
			return c.R, c.G, c.B
		}
	case color.Gray:
		return c.Y, c.Y, c.Y
	case color.NRGBA64:
		return byte(c.R >> 8), byte(c.G >> 8), byte(c.B >> 8)
	case color.Gray16:
		return byte(c.Y >> 8), byte(c.Y >> 8), byte(c.Y >> 8)
	}
	n := color.NRGBAModel.Convert(c).(color.NRGBA)
	return n.R, n.G, n.B
}

// normalize is clip_image_f32::from_u8 then normalize: v/255, minus the
// mean, over the standard deviation, each in float32.
func normalize(img *rgb, mean, std [3]float32) pixels {
	out := pixels{nx: img.nx, ny: img.ny, buf: make([]float32, len(img.buf))}
	for i, v := range img.buf {
		c := i % 3
		out.buf[i] = (float32(v)/255 - mean[c]) / std[c]
	}
	return out
}

// hashTiles is sha256 over each tile's size and float32 values.
func hashTiles(tiles []pixels) [32]byte {
	h := sha256.New()
	var b [8]byte
	for _, t := range tiles {
		binary.LittleEndian.PutUint32(b[:4], uint32(t.nx))
		binary.LittleEndian.PutUint32(b[4:], uint32(t.ny))
		h.Write(b[:])
		buf := make([]byte, 4*len(t.buf))
		for i, v := range t.buf {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
		}
		h.Write(buf)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}
