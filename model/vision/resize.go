package vision

import "math"

// The resizes of mtmd-image.cpp's img_tool, bit for bit: x86-64 builds
// of mtmd have no fused multiply-adds, so every product is rounded on its
// own (explicit conversions keep arm64 from fusing them).

// resizePadded is mtmd-image.cpp's img_tool::resize with PAD_CEIL: the
// image scaled to fit tw×th keeping its aspect ratio (by resize), centred
// on black.
func resizePadded(src *rgb, tw, th int, resize func(*rgb, int, int) *rgb) *rgb {
	if src.nx == tw && src.ny == th {
		return src
	}
	scale := min(float32(tw)/float32(src.nx), float32(th)/float32(src.ny))
	nw := min(int(math.Ceil(float64(float32(float32(src.nx)*scale)))), tw)
	nh := min(int(math.Ceil(float64(float32(float32(src.ny)*scale)))), th)
	resized := resize(src, nw, nh)
	dst := &rgb{nx: tw, ny: th, buf: make([]byte, 3*tw*th)}
	ox, oy := (tw-nw)/2, (th-nh)/2
	for y := range nh {
		copy(dst.buf[3*((y+oy)*tw+ox):], resized.buf[3*y*nw:3*(y+1)*nw])
	}
	return dst
}

// resizeBilinear is img_tool::resize_bilinear: corners aligned, each
// channel interpolated in float32 and truncated to a byte.
func resizeBilinear(src *rgb, tw, th int) *rgb {
	tw, th = max(tw, 1), max(th, 1)
	dst := &rgb{nx: tw, ny: th, buf: make([]byte, 3*tw*th)}
	var xr, yr float32
	if tw > 1 {
		xr = float32(src.nx-1) / float32(tw-1)
	}
	if th > 1 {
		yr = float32(src.ny-1) / float32(th-1)
	}
	lerp := func(s, e, t float32) float32 { return s + float32((e-s)*t) }
	for y := range th {
		py := float32(float32(y) * yr) // rounded: no fused multiply-add in py - y0
		y0 := min(int(py), src.ny-1)
		y1 := min(y0+1, src.ny-1)
		yf := py - float32(y0)
		for x := range tw {
			px := float32(float32(x) * xr)
			x0 := min(int(px), src.nx-1)
			x1 := min(x0+1, src.nx-1)
			xf := px - float32(x0)
			p00, p10 := src.buf[3*(y0*src.nx+x0):], src.buf[3*(y0*src.nx+x1):]
			p01, p11 := src.buf[3*(y1*src.nx+x0):], src.buf[3*(y1*src.nx+x1):]
			d := dst.buf[3*(y*tw+x):]
			for c := range 3 {
				top := lerp(float32(p00[c]), float32(p10[c]), xf)
				bottom := lerp(float32(p01[c]), float32(p11[c]), xf)
				d[c] = byte(lerp(top, bottom, yf))
			}
		}
	}
	return dst
}

// resizeBicubic is img_tool::resize_bicubic (ViT.cpp's): for each target
// pixel, four cubic interpolations along x of the rows around it, then one
// along y, rounded and clamped to a byte. Its coefficients are computed in
// float64 and stored in float32, the polynomials in float32, as the C++
// does (mtmd is built without fused multiply-adds).
func resizeBicubic(src *rgb, tw, th int) *rgb {
	nx, ny := src.nx, src.ny
	dst := &rgb{nx: tw, ny: th, buf: make([]byte, 3*tw*th)}
	tx, ty := float32(nx)/float32(tw), float32(ny)/float32(th)
	at := func(x, y, k int) float32 {
		x, y = min(max(x, 0), nx-1), min(max(y, 0), ny-1)
		return float32(src.buf[3*(y*nx+x)+k])
	}
	// coef is a1, a2, a3 of the cubic through d0 = p(−1)−p(0),
	// d2 = p(1)−p(0), d3 = p(2)−p(0); every product rounded on its own.
	coef := func(d0, d2, d3 float32) (float32, float32, float32) {
		a1 := float32(float64(-1.0/3*float64(d0)) + float64(d2) - float64(1.0/6*float64(d3)))
		a2 := float32(float64(1.0/2*float64(d0)) + float64(1.0/2*float64(d2)))
		a3 := float32(float64(-1.0/6*float64(d0)) - float64(1.0/2*float64(d2)) + float64(1.0/6*float64(d3)))
		return a1, a2, a3
	}
	cubic := func(a0, a1, a2, a3, t float32) float32 {
		return a0 + float32(a1*t) + float32(float32(a2*t)*t) + float32(float32(float32(a3*t)*t)*t)
	}
	var C [4]float32
	for i := range th {
		for j := range tw {
			x, y := int(float32(tx*float32(j))), int(float32(ty*float32(i)))
			dx := float32(tx*float32(j)) - float32(x)
			dy := float32(ty*float32(i)) - float32(y)
			d := dst.buf[3*(i*tw+j):]
			for k := range 3 {
				for jj := range 4 {
					yy := y - 1 + jj
					a0 := at(x, yy, k)
					a1, a2, a3 := coef(at(x-1, yy, k)-a0, at(x+1, yy, k)-a0, at(x+2, yy, k)-a0)
					C[jj] = cubic(a0, a1, a2, a3, dx)
				}
				a1, a2, a3 := coef(C[0]-C[1], C[2]-C[1], C[3]-C[1])
				cc := cubic(C[1], a1, a2, a3, dy)
				d[k] = byte(min(max(float32(math.Round(float64(cc))), 0), 255))
			}
		}
	}
	return dst
}
