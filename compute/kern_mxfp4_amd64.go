package compute

// The MXFP4 panel and in-place kernels of kern_mxfp4_amd64.s.

//go:generate sh -c "cd .. && python3 scripts/gen-kern-mxfp4.py > compute/kern_mxfp4_amd64.s"

//go:noescape
func mxfp4X1VNNI(w *byte, x *blockQ8_0, xs int, out *float32, os int, np, nb int)

//go:noescape
func mxfp4X4VNNI(w *byte, x *blockQ8_0, xs int, out *float32, os int, np, nb int)

//go:noescape
func mxfp4X8VNNI(w *byte, x *blockQ8_0, xs int, out *float32, os int, np, nb int)

//go:noescape
func mxfp4X1AVX2(w *byte, x *blockQ8_0, xs int, out *float32, os int, np, nb int)

//go:noescape
func mxfp4X4AVX2(w *byte, x *blockQ8_0, xs int, out *float32, os int, np, nb int)

// The in-place kernels: rows read as the file stores them, the panel
// kernels' arithmetic (np counts rows, output r at 4r), for tensors read in
// place from the mapping: MXFP4's entry of the in-place table is
// {AVX2: mxfp4InPlaceAVX2, AVX512VNNI: mxfp4InPlaceVNNI}.

//go:noescape
func mxfp4InPlaceX1VNNI(w *byte, x *blockQ8_0, xs int, out *float32, os int, np, nb int)

//go:noescape
func mxfp4InPlaceX4VNNI(w *byte, x *blockQ8_0, xs int, out *float32, os int, np, nb int)

//go:noescape
func mxfp4InPlaceX8VNNI(w *byte, x *blockQ8_0, xs int, out *float32, os int, np, nb int)

//go:noescape
func mxfp4InPlaceX1AVX2(w *byte, x *blockQ8_0, xs int, out *float32, os int, np, nb int)

//go:noescape
func mxfp4InPlaceX4AVX2(w *byte, x *blockQ8_0, xs int, out *float32, os int, np, nb int)

var (
	mxfp4InPlaceVNNI = &panelKernel[blockQ8_0]{x1: mxfp4InPlaceX1VNNI, x4: mxfp4InPlaceX4VNNI, x8: mxfp4InPlaceX8VNNI, corr: -128}
	mxfp4InPlaceAVX2 = &panelKernel[blockQ8_0]{x1: mxfp4InPlaceX1AVX2, x4: mxfp4InPlaceX4AVX2}
)

var (
	// The VNNI kernels read unsigned table values v + 128 (corr −128); the
	// AVX2 ones signed values and need no correction.
	mxfp4VNNI = &panelKernel[blockQ8_0]{pack: packMXFP4, panel: true,
		x1: mxfp4X1VNNI, x4: mxfp4X4VNNI, x8: mxfp4X8VNNI, corr: -128}
	mxfp4AVX2 = &panelKernel[blockQ8_0]{pack: packMXFP4, panel: true,
		x1: mxfp4X1AVX2, x4: mxfp4X4AVX2}
)
