package cuda

import (
	"fmt"
	"runtime"
	"strings"
)

// nvrtcAPI is libnvrtc's functions (bound as driverAPI's); nvrtcProgram is
// uintptr.
type nvrtcAPI struct {
	nvrtcVersion           func(major, minor *int32) nvrtcResult
	nvrtcGetErrorString    func(r nvrtcResult) string
	nvrtcCreateProgram     func(prog *uintptr, src, name string, numHeaders int32, headers, includeNames uintptr) nvrtcResult
	nvrtcCompileProgram    func(prog uintptr, numOptions int32, options []*byte) nvrtcResult
	nvrtcGetProgramLogSize func(prog uintptr, n *uintptr) nvrtcResult
	nvrtcGetProgramLog     func(prog uintptr, log []byte) nvrtcResult
	nvrtcGetCUBINSize      func(prog uintptr, n *uintptr) nvrtcResult
	nvrtcGetCUBIN          func(prog uintptr, cubin []byte) nvrtcResult
	nvrtcDestroyProgram    func(prog *uintptr) nvrtcResult
}

// nvrtc is libnvrtc, loaded once per process.
var nvrtc lazy[nvrtcAPI]

func loadNVRTC() (*nvrtcAPI, error) {
	return nvrtc.get(func() (*nvrtcAPI, error) { return bindLib[nvrtcAPI](nvrtcLibs, ErrNoNVRTC) })
}

// check turns an NVRTC result into nil or an *Error for the call fn.
func (a *nvrtcAPI) check(fn string, r nvrtcResult) error {
	if r == 0 {
		return nil
	}
	return &Error{Func: fn, Code: int(r), Name: a.nvrtcGetErrorString(r)}
}

// NVRTCVersion returns the version of the NVRTC library found.
func NVRTCVersion() (major, minor int, err error) {
	api, err := loadNVRTC()
	if err != nil {
		return 0, 0, err
	}
	var ma, mi int32
	if err := api.check("nvrtcVersion", api.nvrtcVersion(&ma, &mi)); err != nil {
		return 0, 0, err
	}
	return int(ma), int(mi), nil
}

// Compile compiles the CUDA C++ source src with NVRTC into a CUBIN for d's
// architecture (-arch=sm_XY from its compute capability, unless opts name an
// architecture themselves), for LoadModule. name is the source's file name in
// messages. Kernels to be found by name should be declared extern "C". When
// compilation fails the error carries NVRTC's log.
func (d *Device) Compile(src, name string, opts ...string) ([]byte, error) {
	api, err := loadNVRTC()
	if err != nil {
		return nil, err
	}
	if !hasArch(opts) {
		opts = append([]string{fmt.Sprintf("-arch=sm_%d%d", d.ccMajor, d.ccMinor)}, opts...)
	}
	return api.compile(src, name, opts)
}

// hasArch reports whether opts choose an architecture.
func hasArch(opts []string) bool {
	for _, o := range opts {
		if strings.HasPrefix(o, "-arch") || strings.HasPrefix(o, "--gpu-architecture") {
			return true
		}
	}
	return false
}

func (a *nvrtcAPI) compile(src, name string, opts []string) ([]byte, error) {
	var prog uintptr
	if err := a.check("nvrtcCreateProgram", a.nvrtcCreateProgram(&prog, src, name, 0, 0, 0)); err != nil {
		return nil, fmt.Errorf("%w (compiling %s)", err, name)
	}
	defer a.nvrtcDestroyProgram(&prog)

	// options is a const char* const*: an array of pointers into Go memory,
	// legal to hand to C only with the strings pinned.
	var pin runtime.Pinner
	defer pin.Unpin()
	cOpts := make([]*byte, len(opts))
	for i, o := range opts {
		b := append([]byte(o), 0)
		pin.Pin(&b[0])
		cOpts[i] = &b[0]
	}
	if err := a.check("nvrtcCompileProgram", a.nvrtcCompileProgram(prog, int32(len(cOpts)), cOpts)); err != nil {
		return nil, fmt.Errorf("%w: %s:\n%s", err, name, a.log(prog))
	}

	var n uintptr
	if err := a.check("nvrtcGetCUBINSize", a.nvrtcGetCUBINSize(prog, &n)); err != nil {
		return nil, fmt.Errorf("%w (compiling %s)", err, name)
	}
	if n == 0 {
		return nil, fmt.Errorf("cuda: compiling %s: NVRTC produced no CUBIN (a virtual -arch=compute_XY gives PTX only)", name)
	}
	cubin := make([]byte, n)
	if err := a.check("nvrtcGetCUBIN", a.nvrtcGetCUBIN(prog, cubin)); err != nil {
		return nil, fmt.Errorf("%w (compiling %s)", err, name)
	}
	return cubin, nil
}

// log returns the program's compilation log, without its trailing NUL.
func (a *nvrtcAPI) log(prog uintptr) string {
	var n uintptr
	if a.nvrtcGetProgramLogSize(prog, &n) != 0 || n == 0 {
		return ""
	}
	buf := make([]byte, n)
	if a.nvrtcGetProgramLog(prog, buf) != 0 {
		return ""
	}
	return strings.TrimRight(string(buf), "\x00\n ")
}
