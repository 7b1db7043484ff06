//go:build !amd64

package compute

// q4_KRowsVNNI is amd64's (kernels_amd64_test.go); nil here.
var q4_KRowsVNNI *panelKernel[blockQ8_K]
