package cuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Shared-library names, tried in this order.
var (
	driverLibs = []string{"libcuda.so.1", "libcuda.so"}
	nvrtcLibs  = []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}
	cublasLibs = []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"}
)

// LibDirsEnv names the environment variable holding directories
// (colon-separated) searched for the CUDA libraries before the dynamic
// loader's own search path.
const LibDirsEnv = "TROUPE_CUDA_LIBS"

// libDirs returns the directories of LibDirsEnv, empty entries dropped.
func libDirs() []string {
	var dirs []string
	for _, d := range strings.Split(os.Getenv(LibDirsEnv), ":") {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// libCandidates lists the paths to try for a library: every name under each
// of dirs in turn, then every bare name (for the loader's search path).
func libCandidates(names, dirs []string) []string {
	var paths []string
	for _, d := range dirs {
		for _, n := range names {
			paths = append(paths, filepath.Join(d, n))
		}
	}
	return append(paths, names...)
}

// openLib returns the handle of the first of libCandidates(names, dirs) that
// dlopen loads. When none does, the error lists every attempt's message.
func openLib(names, dirs []string, dlopen func(path string) (uintptr, error)) (uintptr, error) {
	var msgs []string
	for _, p := range libCandidates(names, dirs) {
		h, err := dlopen(p)
		if err == nil {
			return h, nil
		}
		msgs = append(msgs, err.Error())
	}
	return 0, errors.New(strings.Join(msgs, "; "))
}

// dlopen loads a library with every symbol resolved now and made global (so
// that libraries it loads later, like NVRTC's builtins, see them).
func dlopen(path string) (uintptr, error) {
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
}

// sym binds a C function to fptr: a pointer to a Go func variable (called
// through purego.RegisterFunc) or to a uintptr (the bare address, for
// purego.SyscallN). The first of names the library has is used.
type sym struct {
	fptr  any
	names []string
}

func fn(fptr any, names ...string) sym { return sym{fptr, names} }

// bind resolves every sym in handle h. A missing symbol is an error, not a
// panic: an old driver lacking one should read as "no usable driver".
func bind(h uintptr, syms []sym) error {
	for _, s := range syms {
		var addr uintptr
		for _, name := range s.names {
			if a, err := purego.Dlsym(h, name); err == nil {
				addr = a
				break
			}
		}
		if addr == 0 {
			return fmt.Errorf("symbol %s not found", strings.Join(s.names, " or "))
		}
		if p, ok := s.fptr.(*uintptr); ok {
			*p = addr
			continue
		}
		purego.RegisterFunc(s.fptr, addr)
	}
	return nil
}

// driverAPI is libcuda's functions. CUdevice is int32, every other handle
// (CUcontext, CUstream, …) and size_t is uintptr, CUdeviceptr is DevicePtr.
type driverAPI struct {
	cuInit                      func(flags uint32) cuResult
	cuDeviceGetCount            func(n *int32) cuResult
	cuDeviceGet                 func(dev *int32, ordinal int32) cuResult
	cuDeviceGetName             func(name []byte, n int32, dev int32) cuResult
	cuDeviceTotalMem            func(bytes *uintptr, dev int32) cuResult
	cuDeviceGetAttribute        func(v *int32, attr int32, dev int32) cuResult
	cuDevicePrimaryCtxRetain    func(ctx *uintptr, dev int32) cuResult
	cuDevicePrimaryCtxRelease   func(dev int32) cuResult
	cuCtxSetCurrent             uintptr // through purego.SyscallN: no allocation per call
	cuCtxSynchronize            func() cuResult
	cuMemGetInfo                func(free, total *uintptr) cuResult
	cuMemAlloc                  func(p *DevicePtr, n uintptr) cuResult
	cuMemFree                   func(p DevicePtr) cuResult
	cuMemsetD8Async             func(p DevicePtr, v uint8, n uintptr, s uintptr) cuResult
	cuMemcpyHtoD                func(dst DevicePtr, src unsafe.Pointer, n uintptr) cuResult
	cuMemcpyDtoH                func(dst unsafe.Pointer, src DevicePtr, n uintptr) cuResult
	cuMemcpyDtoD                func(dst, src DevicePtr, n uintptr) cuResult
	cuMemcpyHtoDAsync           func(dst DevicePtr, src unsafe.Pointer, n uintptr, s uintptr) cuResult
	cuMemcpyDtoHAsync           func(dst unsafe.Pointer, src DevicePtr, n uintptr, s uintptr) cuResult
	cuMemcpyDtoDAsync           func(dst, src DevicePtr, n uintptr, s uintptr) cuResult
	cuMemHostAlloc              func(p *unsafe.Pointer, n uintptr, flags uint32) cuResult
	cuMemFreeHost               func(p unsafe.Pointer) cuResult
	cuStreamCreate              func(s *uintptr, flags uint32) cuResult
	cuStreamSynchronize         func(s uintptr) cuResult
	cuStreamDestroy             func(s uintptr) cuResult
	cuStreamWaitEvent           func(s, e uintptr, flags uint32) cuResult
	cuEventCreate               func(e *uintptr, flags uint32) cuResult
	cuEventRecord               func(e, s uintptr) cuResult
	cuEventSynchronize          func(e uintptr) cuResult
	cuEventElapsedTime          func(ms *float32, start, end uintptr) cuResult
	cuEventDestroy              func(e uintptr) cuResult
	cuModuleLoadData            func(m *uintptr, image []byte) cuResult
	cuModuleGetFunction         func(f *uintptr, m uintptr, name string) cuResult
	cuModuleUnload              func(m uintptr) cuResult
	cuFuncSetAttribute          func(f uintptr, attr int32, v int32) cuResult
	cuLaunchKernel              uintptr // through purego.SyscallN: no allocation per launch
	cuStreamBeginCapture        func(s uintptr, mode int32) cuResult
	cuStreamEndCapture          func(s uintptr, g *uintptr) cuResult
	cuGraphInstantiateWithFlags func(e *uintptr, g uintptr, flags uint64) cuResult
	cuGraphLaunch               func(e, s uintptr) cuResult
	cuGraphDestroy              func(g uintptr) cuResult
	cuGraphExecDestroy          func(e uintptr) cuResult
	cuGetErrorName              func(r cuResult, s **byte) cuResult
	cuGetErrorString            func(r cuResult, s **byte) cuResult
}

func (a *driverAPI) symbols() []sym {
	return []sym{
		fn(&a.cuInit, "cuInit"),
		fn(&a.cuDeviceGetCount, "cuDeviceGetCount"),
		fn(&a.cuDeviceGet, "cuDeviceGet"),
		fn(&a.cuDeviceGetName, "cuDeviceGetName"),
		fn(&a.cuDeviceTotalMem, "cuDeviceTotalMem_v2"),
		fn(&a.cuDeviceGetAttribute, "cuDeviceGetAttribute"),
		fn(&a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
		fn(&a.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"),
		fn(&a.cuCtxSetCurrent, "cuCtxSetCurrent"),
		fn(&a.cuCtxSynchronize, "cuCtxSynchronize"),
		fn(&a.cuMemGetInfo, "cuMemGetInfo_v2"),
		fn(&a.cuMemAlloc, "cuMemAlloc_v2"),
		fn(&a.cuMemFree, "cuMemFree_v2"),
		fn(&a.cuMemsetD8Async, "cuMemsetD8Async"),
		fn(&a.cuMemcpyHtoD, "cuMemcpyHtoD_v2"),
		fn(&a.cuMemcpyDtoH, "cuMemcpyDtoH_v2"),
		fn(&a.cuMemcpyDtoD, "cuMemcpyDtoD_v2"),
		fn(&a.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
		fn(&a.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
		fn(&a.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
		fn(&a.cuMemHostAlloc, "cuMemHostAlloc"),
		fn(&a.cuMemFreeHost, "cuMemFreeHost"),
		fn(&a.cuStreamCreate, "cuStreamCreate"),
		fn(&a.cuStreamSynchronize, "cuStreamSynchronize"),
		fn(&a.cuStreamDestroy, "cuStreamDestroy_v2"),
		fn(&a.cuStreamWaitEvent, "cuStreamWaitEvent"),
		fn(&a.cuEventCreate, "cuEventCreate"),
		fn(&a.cuEventRecord, "cuEventRecord"),
		fn(&a.cuEventSynchronize, "cuEventSynchronize"),
		fn(&a.cuEventElapsedTime, "cuEventElapsedTime"),
		fn(&a.cuEventDestroy, "cuEventDestroy_v2"),
		fn(&a.cuModuleLoadData, "cuModuleLoadData"),
		fn(&a.cuModuleGetFunction, "cuModuleGetFunction"),
		fn(&a.cuModuleUnload, "cuModuleUnload"),
		fn(&a.cuFuncSetAttribute, "cuFuncSetAttribute"),
		fn(&a.cuLaunchKernel, "cuLaunchKernel"),
		fn(&a.cuStreamBeginCapture, "cuStreamBeginCapture_v2"),
		fn(&a.cuStreamEndCapture, "cuStreamEndCapture"),
		fn(&a.cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags"),
		fn(&a.cuGraphLaunch, "cuGraphLaunch"),
		fn(&a.cuGraphDestroy, "cuGraphDestroy"),
		fn(&a.cuGraphExecDestroy, "cuGraphExecDestroy"),
		fn(&a.cuGetErrorName, "cuGetErrorName"),
		fn(&a.cuGetErrorString, "cuGetErrorString"),
	}
}

// lazy is a library's functions, loaded on first use; the outcome, success
// or not, is kept for the life of the process.
type lazy[T any] struct {
	once sync.Once
	api  *T
	err  error
}

func (l *lazy[T]) get(open func() (*T, error)) (*T, error) {
	l.once.Do(func() { l.api, l.err = open() })
	return l.api, l.err
}

// bindLib loads the first of names that loads and binds the symbols of a
// new API table in it (see loadLib).
func bindLib[T any, P interface {
	*T
	symbols() []sym
}](names []string, sentinel error) (*T, error) {
	api := P(new(T))
	if err := loadLib(names, api.symbols(), sentinel); err != nil {
		return nil, err
	}
	return api, nil
}

// driver is libcuda, loaded and initialized (cuInit) once per process.
var driver lazy[driverAPI]

// loadDriver returns the driver's functions, loading libcuda and calling
// cuInit(0) on first use.
func loadDriver() (*driverAPI, error) {
	return driver.get(func() (*driverAPI, error) {
		api, err := bindLib[driverAPI](driverLibs, ErrNoDriver)
		if err != nil {
			return nil, err
		}
		if err := api.check("cuInit", api.cuInit(0)); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNoDevice, err)
		}
		return api, nil
	})
}

// loadLib opens the first of names that loads (see openLib) and binds syms
// in it. Its errors wrap sentinel with the loader's messages.
func loadLib(names []string, syms []sym, sentinel error) error {
	h, err := openLib(names, libDirs(), dlopen)
	if err != nil {
		return fmt.Errorf("%w: %v", sentinel, err)
	}
	if err := bind(h, syms); err != nil {
		return fmt.Errorf("%w: %v", sentinel, err)
	}
	return nil
}
