package compute

// The IQ4_NL panel kernels and IQ4_XS row kernels of kern_iq4_amd64.s.

//go:generate sh -c "cd .. && python3 scripts/gen-kern-iq4.py > compute/kern_iq4_amd64.s"

//go:noescape
func iq4_nlX1VNNI(w *byte, x *blockQ8_0, xs int, out *float32, os int, np, nb int)

//go:noescape
func iq4_nlX4VNNI(w *byte, x *blockQ8_0, xs int, out *float32, os int, np, nb int)

//go:noescape
func iq4_nlX8VNNI(w *byte, x *blockQ8_0, xs int, out *float32, os int, np, nb int)

//go:noescape
func iq4_nlX1AVX2(w *byte, x *blockQ8_0, xs int, out *float32, os int, np, nb int)

//go:noescape
func iq4_nlX4AVX2(w *byte, x *blockQ8_0, xs int, out *float32, os int, np, nb int)

//go:noescape
func iq4_xsRowsX1VNNI(w *byte, x *blockQ8_K, xs int, out *float32, os int, np, nb int)

//go:noescape
func iq4_xsRowsX4VNNI(w *byte, x *blockQ8_K, xs int, out *float32, os int, np, nb int)

//go:noescape
func iq4_xsRowsX8VNNI(w *byte, x *blockQ8_K, xs int, out *float32, os int, np, nb int)

//go:noescape
func iq4_xsRowsX1AVX2(w *byte, x *blockQ8_K, xs int, out *float32, os int, np, nb int)

//go:noescape
func iq4_xsRowsX4AVX2(w *byte, x *blockQ8_K, xs int, out *float32, os int, np, nb int)

var (
	// IQ4_NL shares Q4_0's block layout, so its panels are Q4_0's. The VNNI
	// kernels read unsigned table values v + 128 (corr −128); the AVX2 ones
	// signed values and need no correction.
	iq4_nlVNNI = &panelKernel[blockQ8_0]{pack: packQ4_0, panel: true,
		x1: iq4_nlX1VNNI, x4: iq4_nlX4VNNI, x8: iq4_nlX8VNNI, corr: -128}
	iq4_nlAVX2 = &panelKernel[blockQ8_0]{pack: packQ4_0, panel: true,
		x1: iq4_nlX1AVX2, x4: iq4_nlX4AVX2}
	// IQ4_XS rows are read as stored.
	iq4_xsVNNI = &panelKernel[blockQ8_K]{x1: iq4_xsRowsX1VNNI, x4: iq4_xsRowsX4VNNI, x8: iq4_xsRowsX8VNNI}
	iq4_xsAVX2 = &panelKernel[blockQ8_K]{x1: iq4_xsRowsX1AVX2, x4: iq4_xsRowsX4AVX2}
)
