// Package imagetest makes the PNG images that tests send to the vision
// projectors (through the runtime, the server and the CLI).
package imagetest

import (
	"bytes"
	"image"
	"image/png"
	"testing"
)

// PNG is img encoded as PNG.
func PNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Ramp is a w×h RGBA image whose pixel bytes count up by step: byte i of
// its Pix is i*step (mod 256).
func Ramp(w, h, step int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = byte(i * step)
	}
	return img
}
