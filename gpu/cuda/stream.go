package cuda

import (
	"errors"
	"runtime"
)

// Flags and modes from cuda.h.
const (
	streamNonBlocking      = 0x1 // CU_STREAM_NON_BLOCKING
	captureModeThreadLocal = 1   // CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
)

// Stream is a queue of device work (CUstream): what is queued on one stream
// runs in order; different streams may overlap. A nil *Stream stands for the
// default stream wherever a method takes one.
type Stream struct {
	d         *Device
	h         uintptr
	capturing bool // between BeginCapture and EndCapture: the OS thread is locked
}

// handle returns the CUstream, 0 (the default stream) for nil.
func (s *Stream) handle() uintptr {
	if s == nil {
		return 0
	}
	return s.h
}

// NewStream creates a stream that does not synchronize with the default stream.
func (d *Device) NewStream() (*Stream, error) {
	s := &Stream{d: d}
	err := d.call("cuStreamCreate", func() cuResult { return d.api.cuStreamCreate(&s.h, streamNonBlocking) })
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Sync waits until everything queued on s is done.
func (s *Stream) Sync() error {
	return s.d.call("cuStreamSynchronize", func() cuResult { return s.d.api.cuStreamSynchronize(s.h) })
}

// Destroy destroys s once its queued work is done.
func (s *Stream) Destroy() error {
	return s.d.call("cuStreamDestroy_v2", func() cuResult { return s.d.api.cuStreamDestroy(s.h) })
}

// BeginCapture starts recording the work queued on s into a graph instead of
// running it (thread-local capture mode). The calling goroutine stays on its
// OS thread until EndCapture, which it must call itself: in this mode the
// driver refuses "unsafe" calls (cuMemAlloc and the like) on the capturing
// thread, and locking it keeps other goroutines off it.
func (s *Stream) BeginCapture() error {
	if s.capturing {
		return errors.New("cuda: BeginCapture: the stream is already capturing")
	}
	runtime.LockOSThread()
	err := s.d.call("cuStreamBeginCapture_v2", func() cuResult {
		return s.d.api.cuStreamBeginCapture(s.h, captureModeThreadLocal)
	})
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	s.capturing = true
	return nil
}

// EndCapture ends the capture BeginCapture started and returns the graph of
// the work queued since.
func (s *Stream) EndCapture() (*Graph, error) {
	if !s.capturing {
		return nil, errors.New("cuda: EndCapture: the stream is not capturing")
	}
	g := &Graph{d: s.d}
	err := s.d.call("cuStreamEndCapture", func() cuResult { return s.d.api.cuStreamEndCapture(s.h, &g.h) })
	s.capturing = false
	runtime.UnlockOSThread()
	if err != nil {
		return nil, err
	}
	return g, nil
}

// Graph is a captured sequence of device work (CUgraph).
type Graph struct {
	d *Device
	h uintptr
}

// Instantiate makes an executable graph of g; g may be destroyed afterwards.
func (g *Graph) Instantiate() (*GraphExec, error) {
	e := &GraphExec{d: g.d}
	err := g.d.call("cuGraphInstantiateWithFlags", func() cuResult {
		return g.d.api.cuGraphInstantiateWithFlags(&e.h, g.h, 0)
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

func (g *Graph) Destroy() error {
	return g.d.call("cuGraphDestroy", func() cuResult { return g.d.api.cuGraphDestroy(g.h) })
}

// GraphExec is an instantiated graph (CUgraphExec): its whole sequence is
// queued by one Launch. It replays the captured kernels with the arguments
// they had at capture time, so it reads and writes the same device buffers.
type GraphExec struct {
	d *Device
	h uintptr
}

// Launch queues the graph's work on s (nil: the default stream). A graph
// exec runs at most once at a time: a second Launch waits for the first.
func (g *GraphExec) Launch(s *Stream) error {
	return g.d.call("cuGraphLaunch", func() cuResult { return g.d.api.cuGraphLaunch(g.h, s.handle()) })
}

func (g *GraphExec) Destroy() error {
	return g.d.call("cuGraphExecDestroy", func() cuResult { return g.d.api.cuGraphExecDestroy(g.h) })
}

// Event marks a point in a stream's work (CUevent), with timing enabled.
type Event struct {
	d *Device
	h uintptr
}

// NewEvent creates an event with default flags, so ElapsedMillis works on it.
func (d *Device) NewEvent() (*Event, error) {
	e := &Event{d: d}
	if err := d.call("cuEventCreate", func() cuResult { return d.api.cuEventCreate(&e.h, 0) }); err != nil {
		return nil, err
	}
	return e, nil
}

// Record marks the point after the work queued on s so far (nil: the default stream).
func (e *Event) Record(s *Stream) error {
	return e.d.call("cuEventRecord", func() cuResult { return e.d.api.cuEventRecord(e.h, s.handle()) })
}

// Sync waits until the work before the recorded point is done.
func (e *Event) Sync() error {
	return e.d.call("cuEventSynchronize", func() cuResult { return e.d.api.cuEventSynchronize(e.h) })
}

// Wait makes work queued on s after this call wait for the event, without
// blocking the host.
func (e *Event) Wait(s *Stream) error {
	return e.d.call("cuStreamWaitEvent", func() cuResult { return e.d.api.cuStreamWaitEvent(s.handle(), e.h, 0) })
}

// ElapsedMillis returns the device time between two recorded, completed
// events of the same device, in milliseconds (about 0.5 µs resolution).
func ElapsedMillis(start, end *Event) (float32, error) {
	var ms float32
	err := start.d.call("cuEventElapsedTime", func() cuResult {
		return start.d.api.cuEventElapsedTime(&ms, start.h, end.h)
	})
	return ms, err
}

func (e *Event) Destroy() error {
	return e.d.call("cuEventDestroy_v2", func() cuResult { return e.d.api.cuEventDestroy(e.h) })
}
