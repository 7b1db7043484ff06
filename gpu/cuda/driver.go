package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// CUdevice_attribute values read by Open.
const (
	attrMultiprocessorCount = 16
	attrComputeCapMajor     = 75
	attrComputeCapMinor     = 76
)

// available caches Available's answer: drivers and devices do not come and
// go while a process runs.
var available struct {
	once sync.Once
	err  error
}

// Available reports whether this machine can run CUDA: nil when libcuda
// loads, initializes and reports at least one device, else an error wrapping
// ErrNoDriver or ErrNoDevice. The first call does the work; later calls
// return its answer.
func Available() error {
	available.once.Do(func() {
		n, err := DeviceCount()
		if err == nil && n == 0 {
			err = ErrNoDevice
		}
		available.err = err
	})
	return available.err
}

// DeviceCount returns the number of CUDA devices the driver sees.
func DeviceCount() (int, error) {
	api, err := loadDriver()
	if err != nil {
		return 0, err
	}
	var n int32
	if err := api.check("cuDeviceGetCount", api.cuDeviceGetCount(&n)); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrNoDevice, err)
	}
	return int(n), nil
}

// Device is one GPU with its primary context retained. Its methods may be
// called from any goroutine (see the package documentation).
type Device struct {
	api      *driverAPI
	ordinal  int
	dev      int32      // CUdevice
	ctx      uintptr    // the primary CUcontext, retained until Close
	ctxArg   [1]uintptr // {ctx}: cuCtxSetCurrent's arguments, for purego.SyscallN
	name     string
	totalMem int64
	ccMajor  int
	ccMinor  int
	sms      int

	launchMu sync.Mutex // guards arena, sysargs and closed
	arena    *argArena  // in pinned host memory (cuMemHostAlloc); nil after Close
	sysargs  [11]uintptr
	closed   bool
}

// Open loads the driver, initializes it and retains the primary context of
// device ordinal, the context the CUDA runtime (and so cuBLAS) uses too.
func Open(ordinal int) (*Device, error) {
	n, err := DeviceCount()
	if err != nil {
		return nil, err
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("%w: ordinal %d, the driver sees %d device(s)", ErrNoDevice, ordinal, n)
	}
	api, _ := loadDriver()
	d := &Device{api: api, ordinal: ordinal}
	if err := d.query(); err != nil {
		return nil, err
	}
	if err := api.check("cuDevicePrimaryCtxRetain", api.cuDevicePrimaryCtxRetain(&d.ctx, d.dev)); err != nil {
		return nil, err
	}
	d.ctxArg[0] = d.ctx
	if err := d.allocArena(); err != nil {
		api.cuDevicePrimaryCtxRelease(d.dev)
		return nil, err
	}
	return d, nil
}

// query fills in the device's handle and fixed properties.
func (d *Device) query() error {
	api := d.api
	if err := api.check("cuDeviceGet", api.cuDeviceGet(&d.dev, int32(d.ordinal))); err != nil {
		return err
	}
	name := make([]byte, 256)
	if err := api.check("cuDeviceGetName", api.cuDeviceGetName(name, int32(len(name)), d.dev)); err != nil {
		return err
	}
	d.name = cString(&name[0])
	var total uintptr
	if err := api.check("cuDeviceTotalMem_v2", api.cuDeviceTotalMem(&total, d.dev)); err != nil {
		return err
	}
	d.totalMem = int64(total)
	for _, a := range []struct {
		attr int32
		dst  *int
	}{{attrComputeCapMajor, &d.ccMajor}, {attrComputeCapMinor, &d.ccMinor}, {attrMultiprocessorCount, &d.sms}} {
		var v int32
		if err := api.check("cuDeviceGetAttribute", api.cuDeviceGetAttribute(&v, a.attr, d.dev)); err != nil {
			return err
		}
		*a.dst = int(v)
	}
	return nil
}

// call runs one driver call with d's primary context current. The driver
// keeps the current context per OS thread and a goroutine may change thread
// between two calls, so the thread is locked and the context set each time.
func (d *Device) call(name string, f func() cuResult) error {
	var r cuResult
	if err := d.onThread(func() { r = f() }); err != nil {
		return err
	}
	return d.api.check(name, r)
}

// onThread runs f on a locked OS thread with d's primary context current;
// it is call for libraries other than the driver (cuBLAS).
func (d *Device) onThread(f func()) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r, _, _ := purego.SyscallN(d.api.cuCtxSetCurrent, d.ctxArg[:]...)
	if r := cuResult(int32(uint32(r))); r != cudaSuccess {
		return d.api.check("cuCtxSetCurrent", r)
	}
	f()
	return nil
}

func (d *Device) Name() string                          { return d.name }
func (d *Device) Ordinal() int                          { return d.ordinal }
func (d *Device) TotalMem() int64                       { return d.totalMem }
func (d *Device) ComputeCapability() (major, minor int) { return d.ccMajor, d.ccMinor }
func (d *Device) MultiProcessors() int                  { return d.sms }

// MemInfo returns the device memory free and in total, in bytes.
func (d *Device) MemInfo() (free, total int64, err error) {
	var f, t uintptr
	err = d.call("cuMemGetInfo_v2", func() cuResult { return d.api.cuMemGetInfo(&f, &t) })
	return int64(f), int64(t), err
}

// Close frees the launch arena and releases the primary context. The Device
// and everything made from it must not be used afterwards; a second Close
// does nothing.
func (d *Device) Close() error {
	d.launchMu.Lock()
	defer d.launchMu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	err := d.call("cuMemFreeHost", func() cuResult { return d.api.cuMemFreeHost(unsafe.Pointer(d.arena)) })
	d.arena = nil
	rel := d.api.check("cuDevicePrimaryCtxRelease_v2", d.api.cuDevicePrimaryCtxRelease(d.dev))
	return errors.Join(err, rel)
}

// Synchronize waits until all work queued on the device is done.
func (d *Device) Synchronize() error {
	return d.call("cuCtxSynchronize", d.api.cuCtxSynchronize)
}

// DevicePtr is an address in device memory (CUdeviceptr).
type DevicePtr uintptr

// size checks a byte count handed to fn.
func size(fn string, bytes int) (uintptr, error) {
	if bytes < 0 {
		return 0, fmt.Errorf("cuda: %s: negative size %d", fn, bytes)
	}
	return uintptr(bytes), nil
}

// Alloc allocates bytes (> 0) of device memory.
func (d *Device) Alloc(bytes int) (DevicePtr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("cuda: Alloc: size %d, want > 0", bytes)
	}
	var p DevicePtr
	err := d.call("cuMemAlloc_v2", func() cuResult { return d.api.cuMemAlloc(&p, uintptr(bytes)) })
	return p, err
}

// Free frees memory from Alloc; Free(0) does nothing.
func (d *Device) Free(p DevicePtr) error {
	if p == 0 {
		return nil
	}
	return d.call("cuMemFree_v2", func() cuResult { return d.api.cuMemFree(p) })
}

// Memset sets bytes bytes at p to value, in order on s (nil: the default stream).
func (d *Device) Memset(p DevicePtr, value byte, bytes int, s *Stream) error {
	n, err := size("Memset", bytes)
	if err != nil {
		return err
	}
	return d.call("cuMemsetD8Async", func() cuResult { return d.api.cuMemsetD8Async(p, value, n, s.handle()) })
}

// CopyHtoD copies bytes bytes from host memory src to dst. With s nil it
// returns when the copy is done; with a stream it is queued on s, and src
// must stay valid and unchanged until the stream has run it (pinned memory
// from HostAlloc makes the copy truly asynchronous).
func (d *Device) CopyHtoD(dst DevicePtr, src unsafe.Pointer, bytes int, s *Stream) error {
	return memcpy(d, "CopyHtoD", dst, src, bytes, s, d.api.cuMemcpyHtoD, d.api.cuMemcpyHtoDAsync)
}

// CopyDtoH copies bytes bytes from src to host memory dst; as CopyHtoD, dst
// must stay valid until a queued copy has run, and its contents are defined
// only after s.Sync (or an event) says so.
func (d *Device) CopyDtoH(dst unsafe.Pointer, src DevicePtr, bytes int, s *Stream) error {
	return memcpy(d, "CopyDtoH", dst, src, bytes, s, d.api.cuMemcpyDtoH, d.api.cuMemcpyDtoHAsync)
}

// CopyDtoD copies bytes bytes from src to dst on the device, queued on s
// (nil: cuMemcpyDtoD_v2 on the default stream).
func (d *Device) CopyDtoD(dst, src DevicePtr, bytes int, s *Stream) error {
	return memcpy(d, "CopyDtoD", dst, src, bytes, s, d.api.cuMemcpyDtoD, d.api.cuMemcpyDtoDAsync)
}

// memcpy runs op (CopyHtoD, CopyDtoH or CopyDtoD) of bytes bytes: with s
// nil its driver call cuMemcpy…_v2 (direct), else cuMemcpy…Async_v2
// (queued) on s.
func memcpy[D, S any](d *Device, op string, dst D, src S, bytes int, s *Stream,
	direct func(D, S, uintptr) cuResult, queued func(D, S, uintptr, uintptr) cuResult) error {
	n, err := size(op, bytes)
	if err != nil {
		return err
	}
	name := "cuMemcpy" + strings.TrimPrefix(op, "Copy")
	if s == nil {
		return d.call(name+"_v2", func() cuResult { return direct(dst, src, n) })
	}
	return d.call(name+"Async_v2", func() cuResult { return queued(dst, src, n, s.h) })
}

// HostAlloc allocates bytes (> 0) of page-locked host memory, outside the Go
// heap: the device reads and writes it directly, so copies to and from it
// are asynchronous. Free it with HostFree.
func (d *Device) HostAlloc(bytes int) (unsafe.Pointer, error) {
	if bytes <= 0 {
		return nil, fmt.Errorf("cuda: HostAlloc: size %d, want > 0", bytes)
	}
	var p unsafe.Pointer
	err := d.call("cuMemHostAlloc", func() cuResult { return d.api.cuMemHostAlloc(&p, uintptr(bytes), 0) })
	return p, err
}

// HostFree frees memory from HostAlloc.
func (d *Device) HostFree(p unsafe.Pointer) error {
	return d.call("cuMemFreeHost", func() cuResult { return d.api.cuMemFreeHost(p) })
}
