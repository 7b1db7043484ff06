package compute

// The arm64 kernel tables (asmQ8_0, asmQ8_1, asmQ8_K) are generated into
// kernels_arm64.go.

// q4_KRowsVNNI is amd64's; nil here.
var q4_KRowsVNNI *panelKernel[blockQ8_K]
