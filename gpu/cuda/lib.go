package cuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
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

// apiSymbols lists the C functions of the API table *api (driverAPI,
// nvrtcAPI, cublasAPI): each field binds the symbol of its name, or the
// first of those its sym tag lists (comma-separated: versioned entry
// points such as cuMemAlloc_v2).
func apiSymbols(api any) []sym {
	v := reflect.ValueOf(api).Elem()
	syms := make([]sym, v.NumField())
	for i := range syms {
		f := v.Type().Field(i)
		names := []string{f.Name}
		if tag, ok := f.Tag.Lookup("sym"); ok {
			names = strings.Split(tag, ",")
		}
		// The fields are unexported: reflect reaches them by address only.
		syms[i] = sym{reflect.NewAt(f.Type, unsafe.Pointer(v.Field(i).UnsafeAddr())).Interface(), names}
	}
	return syms
}

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

// driverAPI is libcuda's functions, each bound to the symbol of its name or
// its sym tag (apiSymbols). CUdevice is int32, every other handle
// (CUcontext, CUstream, …) and size_t is uintptr, CUdeviceptr is DevicePtr.
type driverAPI struct {
	cuInit                      func(flags uint32) cuResult
	cuDeviceGetCount            func(n *int32) cuResult
	cuDeviceGet                 func(dev *int32, ordinal int32) cuResult
	cuDeviceGetName             func(name []byte, n int32, dev int32) cuResult
	cuDeviceTotalMem            func(bytes *uintptr, dev int32) cuResult `sym:"cuDeviceTotalMem_v2"`
	cuDeviceGetAttribute        func(v *int32, attr int32, dev int32) cuResult
	cuDevicePrimaryCtxRetain    func(ctx *uintptr, dev int32) cuResult
	cuDevicePrimaryCtxRelease   func(dev int32) cuResult `sym:"cuDevicePrimaryCtxRelease_v2,cuDevicePrimaryCtxRelease"`
	cuCtxSetCurrent             uintptr                  // through purego.SyscallN: no allocation per call
	cuCtxSynchronize            func() cuResult
	cuMemGetInfo                func(free, total *uintptr) cuResult    `sym:"cuMemGetInfo_v2"`
	cuMemAlloc                  func(p *DevicePtr, n uintptr) cuResult `sym:"cuMemAlloc_v2"`
	cuMemFree                   func(p DevicePtr) cuResult             `sym:"cuMemFree_v2"`
	cuMemsetD8Async             func(p DevicePtr, v uint8, n uintptr, s uintptr) cuResult
	cuMemcpyHtoD                func(dst DevicePtr, src unsafe.Pointer, n uintptr) cuResult            `sym:"cuMemcpyHtoD_v2"`
	cuMemcpyDtoH                func(dst unsafe.Pointer, src DevicePtr, n uintptr) cuResult            `sym:"cuMemcpyDtoH_v2"`
	cuMemcpyDtoD                func(dst, src DevicePtr, n uintptr) cuResult                           `sym:"cuMemcpyDtoD_v2"`
	cuMemcpyHtoDAsync           func(dst DevicePtr, src unsafe.Pointer, n uintptr, s uintptr) cuResult `sym:"cuMemcpyHtoDAsync_v2"`
	cuMemcpyDtoHAsync           func(dst unsafe.Pointer, src DevicePtr, n uintptr, s uintptr) cuResult `sym:"cuMemcpyDtoHAsync_v2"`
	cuMemcpyDtoDAsync           func(dst, src DevicePtr, n uintptr, s uintptr) cuResult                `sym:"cuMemcpyDtoDAsync_v2"`
	cuMemHostAlloc              func(p *unsafe.Pointer, n uintptr, flags uint32) cuResult
	cuMemFreeHost               func(p unsafe.Pointer) cuResult
	cuStreamCreate              func(s *uintptr, flags uint32) cuResult
	cuStreamSynchronize         func(s uintptr) cuResult
	cuStreamDestroy             func(s uintptr) cuResult `sym:"cuStreamDestroy_v2"`
	cuStreamWaitEvent           func(s, e uintptr, flags uint32) cuResult
	cuEventCreate               func(e *uintptr, flags uint32) cuResult
	cuEventRecord               func(e, s uintptr) cuResult
	cuEventSynchronize          func(e uintptr) cuResult
	cuEventElapsedTime          func(ms *float32, start, end uintptr) cuResult
	cuEventDestroy              func(e uintptr) cuResult `sym:"cuEventDestroy_v2"`
	cuModuleLoadData            func(m *uintptr, image []byte) cuResult
	cuModuleGetFunction         func(f *uintptr, m uintptr, name string) cuResult
	cuModuleUnload              func(m uintptr) cuResult
	cuFuncSetAttribute          func(f uintptr, attr int32, v int32) cuResult
	cuLaunchKernel              uintptr                              // through purego.SyscallN: no allocation per launch
	cuStreamBeginCapture        func(s uintptr, mode int32) cuResult `sym:"cuStreamBeginCapture_v2"`
	cuStreamEndCapture          func(s uintptr, g *uintptr) cuResult
	cuGraphInstantiateWithFlags func(e *uintptr, g uintptr, flags uint64) cuResult
	cuGraphLaunch               func(e, s uintptr) cuResult
	cuGraphDestroy              func(g uintptr) cuResult
	cuGraphExecDestroy          func(e uintptr) cuResult
	cuGetErrorName              func(r cuResult, s **byte) cuResult
	cuGetErrorString            func(r cuResult, s **byte) cuResult
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
// new API table in it (apiSymbols, loadLib).
func bindLib[T any](names []string, sentinel error) (*T, error) {
	api := new(T)
	if err := loadLib(names, apiSymbols(api), sentinel); err != nil {
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
