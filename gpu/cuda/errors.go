package cuda

import (
	"errors"
	"fmt"
	"unsafe"
)

// Sentinels for a machine that cannot run CUDA at all; compare with errors.Is.
var (
	ErrNoDriver = errors.New("cuda: no NVIDIA driver (libcuda.so.1 could not be loaded)")
	ErrNoDevice = errors.New("cuda: no CUDA device")
	ErrNoNVRTC  = errors.New("cuda: NVRTC (libnvrtc) could not be loaded")
	ErrNoCUBLAS = errors.New("cuda: cuBLAS (libcublas) could not be loaded")
)

// Error is a failed driver, NVRTC or cuBLAS call.
type Error struct {
	Func string // the C function, e.g. "cuMemAlloc_v2"
	Code int    // its CUresult, nvrtcResult or cublasStatus_t
	Name string // the library's name for Code, e.g. "CUDA_ERROR_OUT_OF_MEMORY"
	Msg  string // the library's description of Code, when it has one
}

func (e *Error) Error() string {
	s := fmt.Sprintf("cuda: %s: %s (%d)", e.Func, e.Name, e.Code)
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

// cuResult is the driver's CUresult.
type cuResult int32

// Driver codes this package looks at.
const (
	cudaSuccess       cuResult = 0
	cudaErrorNoDevice cuResult = 100
)

// check turns a driver result into nil or an *Error for the call fn.
func (api *driverAPI) check(fn string, r cuResult) error {
	if r == cudaSuccess {
		return nil
	}
	e := &Error{Func: fn, Code: int(r), Name: "CUDA_ERROR_UNKNOWN_CODE"}
	var s *byte
	if api.cuGetErrorName(r, &s) == cudaSuccess && s != nil {
		e.Name = cString(s)
	}
	s = nil
	if api.cuGetErrorString(r, &s) == cudaSuccess && s != nil {
		e.Msg = cString(s)
	}
	return e
}

// nvrtcResult is NVRTC's nvrtcResult.
type nvrtcResult int32

// cublasStatus is cuBLAS's cublasStatus_t.
type cublasStatus int32

// cublasStatusNames are cublasStatus_t's enumerators (cublas_api.h).
var cublasStatusNames = map[cublasStatus]string{
	0:  "CUBLAS_STATUS_SUCCESS",
	1:  "CUBLAS_STATUS_NOT_INITIALIZED",
	3:  "CUBLAS_STATUS_ALLOC_FAILED",
	7:  "CUBLAS_STATUS_INVALID_VALUE",
	8:  "CUBLAS_STATUS_ARCH_MISMATCH",
	11: "CUBLAS_STATUS_MAPPING_ERROR",
	13: "CUBLAS_STATUS_EXECUTION_FAILED",
	14: "CUBLAS_STATUS_INTERNAL_ERROR",
	15: "CUBLAS_STATUS_NOT_SUPPORTED",
	16: "CUBLAS_STATUS_LICENSE_ERROR",
}

// cublasError turns a cuBLAS status into nil or an *Error for the call fn.
func cublasError(fn string, st cublasStatus) error {
	if st == 0 {
		return nil
	}
	name, ok := cublasStatusNames[st]
	if !ok {
		name = "CUBLAS_STATUS_UNKNOWN"
	}
	return &Error{Func: fn, Code: int(st), Name: name}
}

// cString copies the NUL-terminated C string at p (C memory) into a Go string.
func cString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}
