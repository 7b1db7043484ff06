package cuda

import (
	"fmt"
	"math"
	"sync"
)

// DataType is a cudaDataType_t: the element type of a GemmEx operand.
type DataType int

const (
	F32  DataType = 0  // CUDA_R_32F
	F16  DataType = 2  // CUDA_R_16F
	BF16 DataType = 14 // CUDA_R_16BF
)

// cuBLAS enumerators used here.
const (
	cublasOpN         = 0  // CUBLAS_OP_N
	cublasOpT         = 1  // CUBLAS_OP_T
	cublasCompute32F  = 68 // CUBLAS_COMPUTE_32F
	cublasGemmDefault = -1 // CUBLAS_GEMM_DEFAULT
)

// cublasAPI is libcublas's functions (bound as driverAPI's);
// cublasHandle_t is uintptr.
type cublasAPI struct {
	cublasCreate    func(h *uintptr) cublasStatus   `sym:"cublasCreate_v2"`
	cublasDestroy   func(h uintptr) cublasStatus    `sym:"cublasDestroy_v2"`
	cublasSetStream func(h, s uintptr) cublasStatus `sym:"cublasSetStream_v2"`
	cublasGemmEx    func(h uintptr, transA, transB int32, m, n, k int32,
		alpha *float32, A DevicePtr, typeA, lda int32, B DevicePtr, typeB, ldb int32,
		beta *float32, C DevicePtr, typeC, ldc int32, compute, algo int32) cublasStatus
}

// cublas is libcublas, loaded once per process.
var cublas lazy[cublasAPI]

func loadCUBLAS() (*cublasAPI, error) {
	return cublas.get(func() (*cublasAPI, error) { return bindLib[cublasAPI](cublasLibs, ErrNoCUBLAS) })
}

// BLAS is a cuBLAS handle whose work is queued on one stream. Its methods
// may be called from several goroutines; they take turns.
type BLAS struct {
	d   *Device
	api *cublasAPI
	h   uintptr

	mu          sync.Mutex // guards the handle and the scalars
	alpha, beta float32    // GemmEx's scalars: cuBLAS reads them by host pointer
}

// NewBLAS creates a cuBLAS handle on d's primary context that queues its
// work on s (nil: the default stream).
func (d *Device) NewBLAS(s *Stream) (*BLAS, error) {
	api, err := loadCUBLAS()
	if err != nil {
		return nil, err
	}
	b := &BLAS{d: d, api: api}
	if err := b.call("cublasCreate_v2", func() cublasStatus { return api.cublasCreate(&b.h) }); err != nil {
		return nil, err
	}
	if err := b.call("cublasSetStream_v2", func() cublasStatus { return api.cublasSetStream(b.h, s.handle()) }); err != nil {
		b.Destroy()
		return nil, err
	}
	return b, nil
}

// call runs one cuBLAS call with the device's context current.
func (b *BLAS) call(name string, f func() cublasStatus) error {
	var st cublasStatus
	if err := b.d.onThread(func() { st = f() }); err != nil {
		return err
	}
	return cublasError(name, st)
}

func (b *BLAS) Destroy() error {
	return b.call("cublasDestroy_v2", func() cublasStatus { return b.api.cublasDestroy(b.h) })
}

// GemmEx computes C = alpha*op(A)*op(B) + beta*C, cuBLAS style: matrices are
// column-major, op(A) is m×k, op(B) k×n and C m×n; transA and transB
// transpose A and B; lda, ldb and ldc are the leading dimensions of the
// matrices as stored. It computes in float32 (CUBLAS_COMPUTE_32F) with the
// default algorithm, whatever the operands' types.
func (b *BLAS) GemmEx(transA, transB bool, m, n, k int, alpha float32, A DevicePtr, typeA DataType, lda int,
	B DevicePtr, typeB DataType, ldb int, beta float32, C DevicePtr, typeC DataType, ldc int) error {
	for _, v := range [...]int{m, n, k, lda, ldb, ldc} {
		if v < 0 || v > math.MaxInt32 {
			return fmt.Errorf("cuda: GemmEx: dimension %d out of range", v)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.alpha, b.beta = alpha, beta
	return b.call("cublasGemmEx", func() cublasStatus {
		return b.api.cublasGemmEx(b.h, op(transA), op(transB), int32(m), int32(n), int32(k),
			&b.alpha, A, int32(typeA), int32(lda), B, int32(typeB), int32(ldb),
			&b.beta, C, int32(typeC), int32(ldc), cublasCompute32F, cublasGemmDefault)
	})
}

func op(trans bool) int32 {
	if trans {
		return cublasOpT
	}
	return cublasOpN
}
