package cuda

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// TestAvailability holds on every machine: without a usable GPU, Available
// and Open fail with the sentinels (and do not panic); with one, Open works.
func TestAvailability(t *testing.T) {
	if err := Available(); err != nil {
		if !errors.Is(err, ErrNoDriver) && !errors.Is(err, ErrNoDevice) {
			t.Fatalf("Available() = %v, want an error wrapping ErrNoDriver or ErrNoDevice", err)
		}
		d, oerr := Open(0)
		if oerr == nil {
			d.Close()
			t.Fatalf("Open(0) succeeded although Available() = %v", err)
		}
		if !errors.Is(oerr, ErrNoDriver) && !errors.Is(oerr, ErrNoDevice) {
			t.Fatalf("Open(0) = %v, want an error wrapping ErrNoDriver or ErrNoDevice", oerr)
		}
		if _, cerr := DeviceCount(); cerr == nil {
			t.Errorf("DeviceCount() succeeded although Available() = %v", err)
		}
		t.Logf("no CUDA here: %v", err)
		return
	}
	d, err := Open(0)
	if err != nil {
		t.Fatalf("Available() = nil but Open(0) = %v", err)
	}
	defer d.Close()
	major, minor := d.ComputeCapability()
	t.Logf("device 0: %s, %d MiB, sm_%d%d, %d SMs", d.Name(), d.TotalMem()>>20, major, minor, d.MultiProcessors())
	if d.Name() == "" || d.TotalMem() <= 0 || major <= 0 || d.MultiProcessors() <= 0 {
		t.Errorf("device 0: name %q, %d bytes, sm_%d%d, %d SMs: want all set", d.Name(), d.TotalMem(), major, minor, d.MultiProcessors())
	}
	n, err := DeviceCount()
	if err != nil || n < 1 {
		t.Errorf("DeviceCount() = %d, %v", n, err)
	}
	if _, err := Open(n); !errors.Is(err, ErrNoDevice) {
		t.Errorf("Open(%d) = %v, want ErrNoDevice", n, err)
	}
}

// TestLibrariesMissingAreSentinels: NVRTC and cuBLAS either load or fail with
// their sentinels.
func TestLibrariesMissingAreSentinels(t *testing.T) {
	if _, _, err := NVRTCVersion(); err != nil && !errors.Is(err, ErrNoNVRTC) {
		t.Errorf("NVRTCVersion() = %v, want nil or ErrNoNVRTC", err)
	}
	if _, err := loadCUBLAS(); err != nil && !errors.Is(err, ErrNoCUBLAS) {
		t.Errorf("loading cuBLAS: %v, want nil or ErrNoCUBLAS", err)
	}
}

func TestPackArgs(t *testing.T) {
	tests := []struct {
		arg  any
		want uint64 // the slot's 8 bytes, little-endian
	}{
		{DevicePtr(0x7f0012345600), 0x7f0012345600},
		{uintptr(0xdeadbeef), 0xdeadbeef},
		{int32(-2), 0x00000000fffffffe},
		{uint32(0xffffffff), 0x00000000ffffffff},
		{int64(-2), 0xfffffffffffffffe},
		{uint64(1) << 63, 1 << 63},
		{float32(1.5), uint64(math.Float32bits(1.5))},
		{float64(-0.25), math.Float64bits(-0.25)},
	}
	a := new(argArena)
	a.init()
	for i := range a.vals {
		a.vals[i] = 0xaaaaaaaaaaaaaaaa // a 4-byte argument must clear its slot's high bytes
	}
	args := make([]any, len(tests))
	for i, tt := range tests {
		args[i] = tt.arg
	}
	if err := a.pack(args); err != nil {
		t.Fatal(err)
	}
	for i, tt := range tests {
		if a.vals[i] != tt.want {
			t.Errorf("arg %d (%T %v): slot %#016x, want %#016x", i, tt.arg, tt.arg, a.vals[i], tt.want)
		}
		if a.ptrs[i] != uintptr(unsafe.Pointer(&a.vals[i])) {
			t.Errorf("arg %d: kernelParams[%d] does not point at its slot", i, i)
		}
	}
	// The kernel reads a 4-byte parameter from the first 4 bytes of its slot.
	if got := *(*float32)(unsafe.Pointer(&a.vals[6])); got != 1.5 {
		t.Errorf("float32 read back from its slot: %v, want 1.5", got)
	}
	if got := *(*int32)(unsafe.Pointer(&a.vals[2])); got != -2 {
		t.Errorf("int32 read back from its slot: %v, want -2", got)
	}
	if allocs := testing.AllocsPerRun(100, func() { a.pack(args) }); allocs != 0 {
		t.Errorf("pack allocates %v times per call, want 0", allocs)
	}
}

func TestPackArgsRefuses(t *testing.T) {
	for _, arg := range []any{int(1), uint(1), int16(1), float64ptr(), "s", []byte{1}, nil, struct{}{}} {
		err := new(argArena).pack([]any{DevicePtr(1), arg})
		if err == nil || !strings.Contains(err.Error(), "argument 1") {
			t.Errorf("pack(%T) = %v, want an error naming argument 1", arg, err)
		}
	}
	if err := new(argArena).pack(make([]any, maxKernelArgs+1)); err == nil {
		t.Errorf("pack of %d arguments succeeded", maxKernelArgs+1)
	}
}

func float64ptr() *float64 { return new(float64) }

func TestLibCandidates(t *testing.T) {
	got := libCandidates([]string{"libcuda.so.1", "libcuda.so"}, []string{"/opt/a", "/opt/b/"})
	want := []string{"/opt/a/libcuda.so.1", "/opt/a/libcuda.so", "/opt/b/libcuda.so.1", "/opt/b/libcuda.so", "libcuda.so.1", "libcuda.so"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("libCandidates = %q, want %q", got, want)
	}
}

func TestLibDirs(t *testing.T) {
	t.Setenv(LibDirsEnv, ":/usr/local/cuda/lib64::/opt/x:")
	if got, want := libDirs(), []string{"/usr/local/cuda/lib64", "/opt/x"}; !reflect.DeepEqual(got, want) {
		t.Errorf("libDirs() = %q, want %q", got, want)
	}
	t.Setenv(LibDirsEnv, "")
	if got := libDirs(); len(got) != 0 {
		t.Errorf("libDirs() with %s empty = %q, want none", LibDirsEnv, got)
	}
}

func TestOpenLibOrder(t *testing.T) {
	names := []string{"libnvrtc.so.13", "libnvrtc.so.12"}
	tests := []struct {
		loads     string // the one path that loads; "" for none
		wantTried []string
	}{
		{"/d/libnvrtc.so.13", []string{"/d/libnvrtc.so.13"}},
		{"libnvrtc.so.13", []string{"/d/libnvrtc.so.13", "/d/libnvrtc.so.12", "libnvrtc.so.13"}},
		{"libnvrtc.so.12", []string{"/d/libnvrtc.so.13", "/d/libnvrtc.so.12", "libnvrtc.so.13", "libnvrtc.so.12"}},
		{"", []string{"/d/libnvrtc.so.13", "/d/libnvrtc.so.12", "libnvrtc.so.13", "libnvrtc.so.12"}},
	}
	for _, tt := range tests {
		var tried []string
		h, err := openLib(names, []string{"/d"}, func(p string) (uintptr, error) {
			tried = append(tried, p)
			if p == tt.loads {
				return 42, nil
			}
			return 0, errors.New(p + ": cannot open shared object file")
		})
		if !reflect.DeepEqual(tried, tt.wantTried) {
			t.Errorf("loads %q: tried %q, want %q", tt.loads, tried, tt.wantTried)
		}
		switch {
		case tt.loads != "" && (err != nil || h != 42):
			t.Errorf("loads %q: openLib = %d, %v", tt.loads, h, err)
		case tt.loads == "" && err == nil:
			t.Errorf("nothing loads: openLib = %d, nil", h)
		case tt.loads == "" && strings.Count(err.Error(), "cannot open") != len(tt.wantTried):
			t.Errorf("nothing loads: error %q does not list every attempt", err)
		}
	}
}

// TestAPISymbols checks the symbols apiSymbols reads from the driver's
// table: a field's name, or its tag's names in order, and the field bound.
func TestAPISymbols(t *testing.T) {
	var api driverAPI
	syms := apiSymbols(&api)
	if len(syms) != reflect.TypeOf(api).NumField() {
		t.Fatalf("%d symbols for %d fields", len(syms), reflect.TypeOf(api).NumField())
	}
	got := map[string]sym{}
	for _, s := range syms {
		got[s.names[0]] = s
	}
	for first, want := range map[string][]string{
		"cuInit":                       {"cuInit"},
		"cuMemAlloc_v2":                {"cuMemAlloc_v2"},
		"cuDevicePrimaryCtxRelease_v2": {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"},
		"cuLaunchKernel":               {"cuLaunchKernel"},
	} {
		if !slices.Equal(got[first].names, want) {
			t.Errorf("symbol %s: names %q, want %q", first, got[first].names, want)
		}
	}
	if p, ok := got["cuLaunchKernel"].fptr.(*uintptr); !ok || p != &api.cuLaunchKernel {
		t.Errorf("cuLaunchKernel binds %T %p, want &api.cuLaunchKernel", got["cuLaunchKernel"].fptr, got["cuLaunchKernel"].fptr)
	}
	if p, ok := got["cuInit"].fptr.(*func(uint32) cuResult); !ok || p != &api.cuInit {
		t.Errorf("cuInit binds %T, want &api.cuInit", got["cuInit"].fptr)
	}
	var names []string
	for _, s := range append(apiSymbols(&cublasAPI{}), apiSymbols(&nvrtcAPI{})[:2]...) {
		names = append(names, s.names...)
	}
	if want := []string{"cublasCreate_v2", "cublasDestroy_v2", "cublasSetStream_v2", "cublasGemmEx",
		"nvrtcVersion", "nvrtcGetErrorString"}; !slices.Equal(names, want) {
		t.Errorf("cuBLAS and NVRTC symbols %q, want %q", names, want)
	}
}

// TestBind binds real libc symbols through purego by apiSymbols: the first
// of a field's names found wins, and a missing symbol is an error rather
// than purego's panic.
func TestBind(t *testing.T) {
	h, err := dlopen("libc.so.6")
	if err != nil {
		t.Skipf("no libc.so.6: %v", err)
	}
	var libc struct {
		strlen func(s string) uintptr `sym:"no_such_symbol_xyz,strlen"`
		abs    uintptr
	}
	if err := bind(h, apiSymbols(&libc)); err != nil {
		t.Fatal(err)
	}
	if n := libc.strlen("hello"); n != 5 {
		t.Errorf("strlen(hello) = %d", n)
	}
	if libc.abs == 0 {
		t.Error("abs bound to address 0")
	}
	var missing struct {
		f func() `sym:"no_such_symbol_xyz,nor_this_one"`
	}
	err = bind(h, apiSymbols(&missing))
	if err == nil || !strings.Contains(err.Error(), "no_such_symbol_xyz or nor_this_one") {
		t.Errorf("bind of a missing symbol = %v, want an error naming it", err)
	}
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&Error{Func: "cuMemAlloc_v2", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Msg: "out of memory"},
			"cuda: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"},
		{&Error{Func: "nvrtcCompileProgram", Code: 6, Name: "NVRTC_ERROR_COMPILATION"},
			"cuda: nvrtcCompileProgram: NVRTC_ERROR_COMPILATION (6)"},
		{cublasError("cublasGemmEx", 7), "cuda: cublasGemmEx: CUBLAS_STATUS_INVALID_VALUE (7)"},
		{cublasError("cublasGemmEx", 99), "cuda: cublasGemmEx: CUBLAS_STATUS_UNKNOWN (99)"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
		var e *Error
		if !errors.As(tt.err, &e) {
			t.Errorf("%v is not an *Error", tt.err)
		}
	}
	if err := cublasError("cublasGemmEx", 0); err != nil {
		t.Errorf("status 0: %v, want nil", err)
	}
}

func TestCString(t *testing.T) {
	b := []byte("CUDA_ERROR_INVALID_VALUE\x00junk")
	if got := cString(&b[0]); got != "CUDA_ERROR_INVALID_VALUE" {
		t.Errorf("cString = %q", got)
	}
	if got := cString(nil); got != "" {
		t.Errorf("cString(nil) = %q", got)
	}
}

func TestImageKind(t *testing.T) {
	tests := []struct {
		image  string
		binary bool
	}{
		{"\x7fELF\x02\x01", true},
		{"\x50\xed\x55\xba\x01\x00", true},
		{".version 8.0\n.target sm_90\n", false},
	}
	for _, tt := range tests {
		if got := isBinaryImage([]byte(tt.image)); got != tt.binary {
			t.Errorf("isBinaryImage(%q) = %v, want %v", tt.image, got, tt.binary)
		}
	}
}

func TestHasArch(t *testing.T) {
	tests := []struct {
		opts []string
		want bool
	}{
		{nil, false},
		{[]string{"-O3", "--use_fast_math"}, false},
		{[]string{"-arch=sm_90a"}, true},
		{[]string{"--gpu-architecture=compute_80"}, true},
	}
	for _, tt := range tests {
		if got := hasArch(tt.opts); got != tt.want {
			t.Errorf("hasArch(%q) = %v, want %v", tt.opts, got, tt.want)
		}
	}
}
