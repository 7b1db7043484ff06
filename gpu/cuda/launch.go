package cuda

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Module is loaded device code (CUmodule).
type Module struct {
	d *Device
	h uintptr
}

// LoadModule loads a CUBIN, a fatbin or PTX text. PTX without a trailing NUL
// is copied with one added, as the driver reads it as a C string.
func (d *Device) LoadModule(image []byte) (*Module, error) {
	if len(image) == 0 {
		return nil, errors.New("cuda: LoadModule: empty image")
	}
	if !isBinaryImage(image) && image[len(image)-1] != 0 {
		image = append(image[:len(image):len(image)], 0)
	}
	m := &Module{d: d}
	if err := d.call("cuModuleLoadData", func() cuResult { return d.api.cuModuleLoadData(&m.h, image) }); err != nil {
		return nil, err
	}
	return m, nil
}

// isBinaryImage reports whether image is an ELF CUBIN or a fatbin, as
// opposed to PTX text.
func isBinaryImage(image []byte) bool {
	return bytes.HasPrefix(image, []byte("\x7fELF")) || bytes.HasPrefix(image, []byte{0x50, 0xed, 0x55, 0xba})
}

// Function returns the kernel called name (its extern "C" name, or the
// mangled one).
func (m *Module) Function(name string) (*Function, error) {
	f := &Function{d: m.d, name: name}
	err := m.d.call("cuModuleGetFunction", func() cuResult { return m.d.api.cuModuleGetFunction(&f.h, m.h, name) })
	if err != nil {
		return nil, fmt.Errorf("%w (kernel %q)", err, name)
	}
	return f, nil
}

// Unload unloads the module; its Functions become invalid.
func (m *Module) Unload() error {
	return m.d.call("cuModuleUnload", func() cuResult { return m.d.api.cuModuleUnload(m.h) })
}

// Function is a kernel of a loaded Module (CUfunction).
type Function struct {
	d    *Device
	h    uintptr
	name string
}

// Name returns the kernel's name as given to Module.Function.
func (f *Function) Name() string { return f.name }

const funcAttrMaxDynamicSharedSize = 8 // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES

// SetMaxDynamicSharedMem lets launches of f ask for up to bytes of dynamic
// shared memory; above 48 KiB the driver requires this opt-in.
func (f *Function) SetMaxDynamicSharedMem(bytes int) error {
	return f.d.call("cuFuncSetAttribute", func() cuResult {
		return f.d.api.cuFuncSetAttribute(f.h, funcAttrMaxDynamicSharedSize, int32(bytes))
	})
}

// maxKernelArgs bounds the parameters of one launch.
const maxKernelArgs = 64

// argArena holds one launch's kernel parameters: vals[i] is parameter i's
// value (the low bytes for 4-byte types), ptrs[i] its address, and &ptrs[0]
// is cuLaunchKernel's kernelParams. The Device's arena lives in pinned host
// memory from cuMemHostAlloc, outside the Go heap, so handing its addresses
// to the driver breaks no cgo pointer rule; the driver copies the values
// during cuLaunchKernel, so it is free again when the call returns.
type argArena struct {
	vals [maxKernelArgs]uint64
	ptrs [maxKernelArgs]uintptr
}

// allocArena allocates the Device's arena and points ptrs at vals.
func (d *Device) allocArena() error {
	p, err := d.HostAlloc(int(unsafe.Sizeof(argArena{})))
	if err != nil {
		return err
	}
	d.arena = (*argArena)(p)
	d.arena.init()
	return nil
}

func (a *argArena) init() {
	for i := range a.vals {
		a.ptrs[i] = uintptr(unsafe.Pointer(&a.vals[i]))
	}
}

// pack writes args into a's slots, in order. Each must be a DevicePtr,
// int32, uint32, int64, uint64, float32, float64 or uintptr: a Go int has no
// fixed C counterpart and is refused, as is any other type.
func (a *argArena) pack(args []any) error {
	if len(args) > maxKernelArgs {
		return fmt.Errorf("%d kernel arguments, at most %d", len(args), maxKernelArgs)
	}
	for i, arg := range args {
		v := &a.vals[i]
		switch x := arg.(type) {
		case DevicePtr:
			*v = uint64(x)
		case uintptr:
			*v = uint64(x)
		case int64:
			*v = uint64(x)
		case uint64:
			*v = x
		case float64:
			*v = math.Float64bits(x)
		case int32:
			*v = 0
			*(*int32)(unsafe.Pointer(v)) = x
		case uint32:
			*v = 0
			*(*uint32)(unsafe.Pointer(v)) = x
		case float32:
			*v = 0
			*(*float32)(unsafe.Pointer(v)) = x
		default:
			return fmt.Errorf("kernel argument %d has type %T; want DevicePtr, int32, uint32, int64, uint64, float32, float64 or uintptr", i, arg)
		}
	}
	return nil
}

// Launch queues f on s (nil: the default stream) over grid blocks of block
// threads with sharedMem bytes of dynamic shared memory. args are the
// kernel's parameters in order (see argArena.pack for the types allowed).
// Launches from several goroutines are serialized on the Device's one
// argument arena. Launch itself allocates nothing; boxing the arguments into
// ...any may, which a caller avoids by reusing one []any (args...).
func (d *Device) Launch(f *Function, grid, block [3]uint32, sharedMem int, s *Stream, args ...any) error {
	d.launchMu.Lock()
	defer d.launchMu.Unlock()
	if d.closed {
		return errors.New("cuda: Launch: device is closed")
	}
	if sharedMem < 0 {
		return fmt.Errorf("cuda: launch %s: negative shared memory %d", f.name, sharedMem)
	}
	if err := d.arena.pack(args); err != nil {
		return fmt.Errorf("cuda: launch %s: %w", f.name, err)
	}
	d.sysargs = [11]uintptr{
		f.h,
		uintptr(grid[0]), uintptr(grid[1]), uintptr(grid[2]),
		uintptr(block[0]), uintptr(block[1]), uintptr(block[2]),
		uintptr(uint32(sharedMem)), s.handle(),
		uintptr(unsafe.Pointer(&d.arena.ptrs[0])), 0, // kernelParams, extra
	}
	err := d.call("cuLaunchKernel", func() cuResult {
		r, _, _ := purego.SyscallN(d.api.cuLaunchKernel, d.sysargs[:]...)
		return cuResult(int32(uint32(r)))
	})
	if err != nil {
		return fmt.Errorf("%w (kernel %q)", err, f.name)
	}
	return nil
}
