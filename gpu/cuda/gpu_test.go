package cuda

import (
	"errors"
	"strings"
	"testing"
	"unsafe"
)

// GPU-only tests: they run on a device or on the emulator, and end where
// there is neither (hooks_test.go). Shared helpers for
// kernel_test.go and blas_test.go are here too.

// openDevice opens device 0 for the test (a GPU's or the emulator's), or
// ends it where there is neither (see hooks_test.go).
func openDevice(tb testing.TB) *Device {
	tb.Helper()
	gpuHooks.require(tb)
	d, err := Open(0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := d.Close(); err != nil {
			tb.Error(err)
		}
	})
	return d
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// alloc allocates device memory freed when the test ends.
func alloc(tb testing.TB, d *Device, bytes int) DevicePtr {
	tb.Helper()
	p, err := d.Alloc(bytes)
	must(tb, err)
	tb.Cleanup(func() { d.Free(p) })
	return p
}

func newStream(tb testing.TB, d *Device) *Stream {
	tb.Helper()
	s, err := d.NewStream()
	must(tb, err)
	tb.Cleanup(func() { s.Destroy() })
	return s
}

func TestCopyRoundTrip(t *testing.T) {
	d := openDevice(t)
	s := newStream(t, d)
	const n = 1 << 20
	src := make([]float32, n)
	for i := range src {
		src[i] = float32(i) * 0.5
	}
	a, b := alloc(t, d, 4*n), alloc(t, d, 4*n)
	must(t, d.CopyHtoD(a, unsafe.Pointer(&src[0]), 4*n, s))
	must(t, d.CopyDtoD(b, a, 4*n, s))

	// Into pinned memory, on the stream, then synchronously into Go memory.
	pinned, err := d.HostAlloc(4 * n)
	must(t, err)
	defer d.HostFree(pinned)
	must(t, d.CopyDtoH(pinned, b, 4*n, s))
	must(t, s.Sync())
	dst := make([]float32, n)
	must(t, d.CopyDtoH(unsafe.Pointer(&dst[0]), b, 4*n, nil))
	for i, got := range unsafe.Slice((*float32)(pinned), n) {
		if got != src[i] || dst[i] != src[i] {
			t.Fatalf("element %d: pinned %v, Go %v, want %v", i, got, dst[i], src[i])
		}
	}

	free, total, err := d.MemInfo()
	must(t, err)
	if free <= 0 || free > total || total > d.TotalMem() {
		t.Errorf("MemInfo = %d free of %d, device has %d", free, total, d.TotalMem())
	}
	if _, err := d.Alloc(0); err == nil {
		t.Error("Alloc(0) succeeded")
	}
}

func TestMemset(t *testing.T) {
	d := openDevice(t)
	s := newStream(t, d)
	const n = 4099
	p := alloc(t, d, n)
	must(t, d.Memset(p, 0xab, n, s))
	must(t, d.Memset(p, 0x00, 3, s))
	must(t, s.Sync())
	got := make([]byte, n)
	must(t, d.CopyDtoH(unsafe.Pointer(&got[0]), p, n, nil))
	for i, v := range got {
		if want := byte(0xab); (i < 3 && v != 0) || (i >= 3 && v != want) {
			t.Fatalf("byte %d = %#x", i, v)
		}
	}
}

func TestEvents(t *testing.T) {
	d := openDevice(t)
	s1, s2 := newStream(t, d), newStream(t, d)
	start, err := d.NewEvent()
	must(t, err)
	defer start.Destroy()
	end, err := d.NewEvent()
	must(t, err)
	defer end.Destroy()
	const n = 256 << 20
	p := alloc(t, d, n)
	must(t, start.Record(s1))
	must(t, d.Memset(p, 1, n, s1))
	must(t, end.Record(s1))
	must(t, end.Wait(s2)) // s2's memset runs after s1's
	must(t, d.Memset(p, 2, 1, s2))
	must(t, s2.Sync())
	must(t, end.Sync())
	ms, err := ElapsedMillis(start, end)
	must(t, err)
	t.Logf("memset of %d MiB: %.3f ms", n>>20, ms)
	if ms <= 0 || ms > 10000 {
		t.Errorf("ElapsedMillis = %v ms", ms)
	}
	var b [2]byte
	must(t, d.CopyDtoH(unsafe.Pointer(&b[0]), p, 2, nil))
	if b != [2]byte{2, 1} {
		t.Errorf("first bytes %v, want [2 1]: the second stream did not wait", b)
	}
}

func TestErrorPaths(t *testing.T) {
	d := openDevice(t)
	var e *Error
	_, err := d.LoadModule([]byte("this is not a module"))
	if !errors.As(err, &e) || e.Func != "cuModuleLoadData" {
		t.Errorf("LoadModule(garbage) = %v, want an *Error from cuModuleLoadData", err)
	}
	m := kernels(t, d)
	if _, err := m.Function("no_such_kernel"); !errors.As(err, &e) || e.Name != "CUDA_ERROR_NOT_FOUND" {
		t.Errorf("Function(no_such_kernel) = %v, want CUDA_ERROR_NOT_FOUND", err)
	}
	_, err = d.Compile("extern \"C\" __global__ void f() { int x = ; }", "bad.cu")
	if !errors.As(err, &e) || !strings.Contains(err.Error(), "bad.cu(1)") || !strings.Contains(err.Error(), "error") {
		t.Errorf("Compile of a syntax error = %v, want an *Error carrying the NVRTC log", err)
	}
}
