package cuda

import (
	"math"
	"testing"
	"unsafe"
)

// GPU-only: kernels compiled with NVRTC, launches and graphs.

const kernelsSrc = `
extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void add1(int n, float* y) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] += 1.0f;
}
extern "C" __global__ void mul2(int n, float* y) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] *= 2.0f;
}
extern "C" __global__ void echo(int a, unsigned b, long long c, unsigned long long d,
		float e, double f, unsigned long long g, unsigned long long* out) {
	out[0] = (unsigned long long)(long long)a; out[1] = b; out[2] = (unsigned long long)c; out[3] = d;
	out[4] = __float_as_uint(e); out[5] = (unsigned long long)__double_as_longlong(f); out[6] = g;
}
extern "C" __global__ void empty() {}
`

// kernels compiles kernelsSrc with NVRTC and loads it.
func kernels(tb testing.TB, d *Device) *Module {
	tb.Helper()
	if _, _, err := NVRTCVersion(); err != nil {
		gpuHooks.unavailable(tb, err)
	}
	cubin, err := d.Compile(kernelsSrc, "kernels.cu", "-std=c++17")
	must(tb, err)
	m, err := d.LoadModule(cubin)
	must(tb, err)
	tb.Cleanup(func() { m.Unload() })
	return m
}

func function(tb testing.TB, m *Module, name string) *Function {
	tb.Helper()
	f, err := m.Function(name)
	must(tb, err)
	return f
}

// upload copies xs into new device memory.
func upload(tb testing.TB, d *Device, xs []float32) DevicePtr {
	tb.Helper()
	p := alloc(tb, d, 4*len(xs))
	must(tb, d.CopyHtoD(p, unsafe.Pointer(&xs[0]), 4*len(xs), nil))
	return p
}

func download(tb testing.TB, d *Device, p DevicePtr, n int) []float32 {
	tb.Helper()
	xs := make([]float32, n)
	must(tb, d.CopyDtoH(unsafe.Pointer(&xs[0]), p, 4*n, nil))
	return xs
}

func blocks(n int) [3]uint32 { return [3]uint32{uint32((n + 255) / 256), 1, 1} }

var threads = [3]uint32{256, 1, 1}

func TestSaxpy(t *testing.T) {
	d := openDevice(t)
	m := kernels(t, d)
	s := newStream(t, d)
	const n = 10007
	x, y := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = float32(i), 1
	}
	dx, dy := upload(t, d, x), upload(t, d, y)
	must(t, d.Launch(function(t, m, "saxpy"), blocks(n), threads, 0, s, int32(n), float32(2), dx, dy))
	must(t, s.Sync())
	for i, got := range download(t, d, dy, n) {
		if want := 2*x[i] + 1; got != want {
			t.Fatalf("y[%d] = %v, want %v", i, got, want)
		}
	}
}

// TestConcurrentLaunch launches from several goroutines at once, each on its
// own stream and buffer.
func TestConcurrentLaunch(t *testing.T) {
	d := openDevice(t)
	m := kernels(t, d)
	add1 := function(t, m, "add1")
	const workers, rounds, n = 8, 50, 4096
	ys := make([]DevicePtr, workers)
	streams := make([]*Stream, workers)
	for w := range workers {
		ys[w] = upload(t, d, make([]float32, n))
		streams[w] = newStream(t, d)
	}
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			var err error
			for range rounds {
				if err = d.Launch(add1, blocks(n), threads, 0, streams[w], int32(n), ys[w]); err != nil {
					break
				}
			}
			if err == nil {
				err = streams[w].Sync()
			}
			errs <- err
		}()
	}
	for range workers {
		must(t, <-errs)
	}
	for w := range workers {
		if got := download(t, d, ys[w], n); got[0] != rounds || got[n-1] != rounds {
			t.Errorf("worker %d: y[0] = %v, y[n-1] = %v, want %d", w, got[0], got[n-1], rounds)
		}
	}
}

// TestLaunchArgTypes passes every supported argument type to a kernel that
// writes them back.
func TestLaunchArgTypes(t *testing.T) {
	d := openDevice(t)
	m := kernels(t, d)
	out := alloc(t, d, 8*7)
	must(t, d.Launch(function(t, m, "echo"), [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, nil,
		int32(-7), uint32(0xfffffffe), int64(-1<<40), uint64(1<<63|5), float32(-1.25), float64(3.5e100), uintptr(0xdeadbeef), out))
	must(t, d.Synchronize())
	var got [7]uint64
	must(t, d.CopyDtoH(unsafe.Pointer(&got[0]), out, 8*7, nil))
	want := [7]uint64{uint64(1<<64 - 7), 0xfffffffe, uint64(1<<64 - 1<<40), 1<<63 | 5,
		uint64(math.Float32bits(-1.25)), math.Float64bits(3.5e100), 0xdeadbeef}
	if got != want {
		t.Errorf("kernel saw %#x, want %#x", got, want)
	}
	if err := d.Launch(function(t, m, "echo"), [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, nil, 1); err == nil {
		t.Error("Launch with a Go int argument succeeded")
	}
}

// TestGraph captures two launches into a graph and replays it twice.
func TestGraph(t *testing.T) {
	d := openDevice(t)
	m := kernels(t, d)
	s := newStream(t, d)
	const n = 1000
	y := make([]float32, n)
	for i := range y {
		y[i] = float32(i)
	}
	dy := upload(t, d, y)
	add1, mul2 := function(t, m, "add1"), function(t, m, "mul2")
	must(t, s.BeginCapture())
	must(t, d.Launch(add1, blocks(n), threads, 0, s, int32(n), dy))
	must(t, d.Launch(mul2, blocks(n), threads, 0, s, int32(n), dy))
	g, err := s.EndCapture()
	must(t, err)
	defer g.Destroy()
	exec, err := g.Instantiate()
	must(t, err)
	defer exec.Destroy()
	if got := download(t, d, dy, n); got[3] != 3 {
		t.Fatalf("capture ran the kernels: y[3] = %v, want 3", got[3])
	}
	must(t, exec.Launch(s))
	must(t, exec.Launch(s))
	must(t, s.Sync())
	for i, got := range download(t, d, dy, n) {
		if want := ((y[i]+1)*2 + 1) * 2; got != want {
			t.Fatalf("y[%d] = %v, want %v", i, got, want)
		}
	}
}

// BenchmarkLaunch measures queuing one empty kernel (the host side of a
// launch; the stream is drained at the end).
func BenchmarkLaunch(b *testing.B) {
	d := openDevice(b)
	m := kernels(b, d)
	s := newStream(b, d)
	empty, saxpy := function(b, m, "empty"), function(b, m, "saxpy")
	x := alloc(b, d, 4*256)
	one := [3]uint32{1, 1, 1}
	b.Run("noargs", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := d.Launch(empty, one, one, 0, s); err != nil {
				b.Fatal(err)
			}
		}
		must(b, s.Sync())
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/launch")
	})
	b.Run("4args", func(b *testing.B) {
		args := []any{int32(256), float32(1), x, x} // boxed once: Launch itself allocates nothing
		b.ReportAllocs()
		for b.Loop() {
			if err := d.Launch(saxpy, one, threads, 0, s, args...); err != nil {
				b.Fatal(err)
			}
		}
		must(b, s.Sync())
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/launch")
	})
}
