package compute

// The group kernels of attn512_amd64.s, by head count G and 64-value
// chunks C (see scripts/gen-attn.py), declared in kernels_amd64.go.

type (
	dotGroupFunc func(q *float32, k *uint16, kstride, n int, out *float32, ostride int)
	vkqGroupFunc func(out *float32, v *uint16, vstride, n int, ms, vs *float32, sstride int)

	dotGroupQ8Func func(q *blockQ8_0, k *byte, kstride, n int, out *float32, ostride int)
	vkqGroupQ8Func func(out *float32, v *byte, vstride, n int, ms, vs *float32, sstride int)
)

// groupKernels returns the kernels for g heads of head_dim hd, or nils.
func groupKernels(g, hd int) (dotGroupFunc, vkqGroupFunc) {
	if hostISA < AVX512VNNI {
		return nil, nil
	}
	switch {
	case hd == 64 && g == 2:
		return dotRowsG2C1, vkqRowsG2C1
	case hd == 64 && g == 3:
		return dotRowsG3C1, vkqRowsG3C1
	case hd == 64 && g == 4:
		return dotRowsG4C1, vkqRowsG4C1
	case hd == 128 && g == 2:
		return dotRowsG2C2, vkqRowsG2C2
	}
	return nil, nil
}

// groupKernelsQ8 returns the Q8_0 kernels for g heads of head_dim hd, or
// nils.
func groupKernelsQ8(g, hd int) (dotGroupQ8Func, vkqGroupQ8Func) {
	if hostISA < AVX512VNNI {
		return nil, nil
	}
	switch {
	case hd == 64 && g == 2:
		return dotRowsQ8G2C1, vkqRowsQ8G2C1
	case hd == 64 && g == 3:
		return dotRowsQ8G3C1, vkqRowsQ8G3C1
	case hd == 64 && g == 4:
		return dotRowsQ8G4C1, vkqRowsQ8G4C1
	case hd == 128 && g == 2:
		return dotRowsQ8G2C2, vkqRowsQ8G2C2
	}
	return nil, nil
}

// maxGroup is the most heads one group kernel takes for head_dim hd.
func maxGroup(hd int) int {
	switch {
	case hostISA < AVX512VNNI:
		return 1
	case hd == 64:
		return 4
	case hd == 128:
		return 2
	}
	return 1
}
