package compute

import (
	"math"
	"testing"
)

// TestLogf checks Logf against glibc 2.36's logf on x86-64 (values printed
// by a C program), among them floats whose glibc result is not the
// correctly rounded logarithm, which float32(math.Log) would give.
func TestLogf(t *testing.T) {
	for _, c := range [][2]uint32{
		{0x008178ac, 0xc2aea675}, // 1.18901e-38 (not the correctly rounded value)
		{0x3f7ffffe, 0xb4000000}, // 1 − 2⁻²³ (not the correctly rounded value)
		{0x4100b1bc, 0x40056e33}, // 8.04339 (not the correctly rounded value)
		{0x4100b275, 0x40056e8f}, // 8.04357 (not the correctly rounded value)
		{0x4100e356, 0x400586d9}, // 8.0555 (not the correctly rounded value)
		{0x42000000, 0x405dce9e}, // 32: gpt-oss's YaRN factor
		{0x48127c00, 0x413eb1ba}, // 150000: gpt-oss's rope base
		{0x41a2f983, 0x4040e7e3}, // 20.3718: 4096/(32·2π)
		{0x4422f983, 0x40cf5b40}, // 651.899: 4096/(2π)
		{0x3f800000, 0x00000000}, // 1
		{0x3f800001, 0x33ffffff}, // 1 + 2⁻²³
		{0x00000001, 0xc2ce8ed0}, // the smallest subnormal
		{0x3e99999a, 0xbf9a1bc8}, // 0.3
	} {
		x := math.Float32frombits(c[0])
		if got := math.Float32bits(Logf(x)); got != c[1] {
			t.Errorf("Logf(%g = %#08x) = %#08x, glibc %#08x", x, c[0], got, c[1])
		}
	}
	for _, x := range []float32{0, -1, float32(math.Inf(1)), float32(math.NaN())} {
		got, want := Logf(x), math.Log(float64(x))
		if !(float64(got) == want || math.IsNaN(want) && math.IsNaN(float64(got))) {
			t.Errorf("Logf(%g) = %g, want %g", x, got, want)
		}
	}
}
