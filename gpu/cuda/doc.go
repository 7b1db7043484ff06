// Package cuda binds the NVIDIA driver API (libcuda.so.1), NVRTC and cuBLAS
// at run time, through purego: it builds with CGO_ENABLED=0 and without the
// CUDA toolkit, and on a machine without a GPU it only reports that there is
// none (Available, Open and friends return errors wrapping ErrNoDriver or
// ErrNoDevice; nothing panics).
//
// It is the thin layer a GPU backend is written on: device memory, streams,
// events, CUDA graphs, kernels compiled from CUDA C with NVRTC and launched
// with cuLaunchKernel, and cuBLAS GEMMs. It imports nothing of troupe's.
//
// # Libraries
//
// libcuda, libnvrtc and libcublas are each loaded once, on first use, trying
// the newest soname first (see driverLibs, nvrtcLibs, cublasLibs) under every
// directory of $TROUPE_CUDA_LIBS (colon-separated) and then the dynamic
// loader's own search path. A library that fails to load fails the same way
// for the rest of the process.
//
// # Concurrency
//
// A Device may be used from several goroutines at once. It works in the
// device's primary context, the one the CUDA runtime and cuBLAS use; since
// the driver keeps the current context per OS thread, every call locks the
// goroutine to its thread, makes the context current and unlocks afterwards.
//
// Work is ordered by streams: what is queued on one Stream runs in order,
// work on different streams may overlap, and a nil *Stream means the default
// (legacy) stream. Streams from NewStream do not synchronize with the default
// stream. Asynchronous copies read and write host memory after the call has
// returned: that memory must stay valid until the stream has run them, and
// only pinned memory from HostAlloc makes them truly asynchronous.
//
// Launch is safe for concurrent use: the kernel parameters are packed into
// one arena per Device, in pinned host memory, under a mutex, so concurrent
// launches take turns (the driver copies the parameters before
// cuLaunchKernel returns). A BLAS takes turns the same way.
//
// Stream capture (BeginCapture … EndCapture) must begin and end on the same
// goroutine, which stays locked to its OS thread in between; work may be
// queued on the capturing stream from other goroutines meanwhile.
//
// Handles (Stream, Event, Module, Function, Graph, GraphExec, BLAS) belong to
// the Device that made them and must not be used after their Destroy, Unload
// or the Device's Close.
package cuda
