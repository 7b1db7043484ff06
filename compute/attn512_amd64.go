package compute

// The group kernels of attn512_amd64.s, by head count G and 64-value
// chunks C (see scripts/gen-attn.py), declared in kernels_amd64.go.

// groupTable and groupTableQ8 are the kernels by heads and head_dim.
var groupTable = []groupKernel[dotGroupFunc, vkqGroupFunc]{
	{2, 64, dotRowsG2C1, vkqRowsG2C1},
	{3, 64, dotRowsG3C1, vkqRowsG3C1},
	{4, 64, dotRowsG4C1, vkqRowsG4C1},
	{2, 128, dotRowsG2C2, vkqRowsG2C2},
}

var groupTableQ8 = []groupKernel[dotGroupQ8Func, vkqGroupQ8Func]{
	{2, 64, dotRowsQ8G2C1, vkqRowsQ8G2C1},
	{3, 64, dotRowsQ8G3C1, vkqRowsQ8G3C1},
	{4, 64, dotRowsQ8G4C1, vkqRowsQ8G4C1},
	{2, 128, dotRowsQ8G2C2, vkqRowsQ8G2C2},
}

// groupKernels returns the kernels for g heads of head_dim hd, or nils.
func groupKernels(g, hd int) (dotGroupFunc, vkqGroupFunc) {
	if hostISA < AVX512VNNI {
		return nil, nil
	}
	return findGroup(groupTable, g, hd)
}

// groupKernelsQ8 returns the Q8_0 kernels for g heads of head_dim hd, or
// nils.
func groupKernelsQ8(g, hd int) (dotGroupQ8Func, vkqGroupQ8Func) {
	if hostISA < AVX512VNNI {
		return nil, nil
	}
	return findGroup(groupTableQ8, g, hd)
}

// maxGroup is the most heads one group kernel takes for head_dim hd.
func maxGroup(hd int) int {
	if hostISA < AVX512VNNI {
		return 1
	}
	return largestGroup(groupTable, hd)
}
