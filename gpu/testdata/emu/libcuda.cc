// libcuda.cc: a fake libcuda.so.1 for troupe's CUDA test emulator (see
// emu.h), with libcuda_exec.cc (modules, launches, graphs) and libcuda.h.
// It exports every driver function gpu/cuda binds and runs the work on
// the host: "device" memory is host memory, so a CUdeviceptr is a
// host address; modules are the shared objects libnvrtc.cc builds; every
// operation runs synchronously when it is queued, so streams and events are
// trivial; stream capture records launches (with their parameter values)
// and copies into a graph that cuGraphLaunch replays.
//
// It checks what it can of the caller's use of the API, returning the
// driver's error codes: calls before cuInit or without a current context,
// unknown handles, copies and memsets outside an allocation, launch shapes,
// and thread-local capture mode's rules (no unsafe calls on the capturing
// thread). Device memory is filled with NaN bytes when allocated (the real
// driver does not zero it) and every allocation ends at a guard page, so a
// kernel that reads uninitialized memory shows NaNs and one that runs past
// the end of a buffer faults. It checks nothing about timing.
//
// This file: the device, its context, memory, streams, events and errors.
#include "libcuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static const struct {
	CUresult code;
	const char *name, *msg;
} kErrors[] = {
    {kSuccess, "CUDA_SUCCESS", "no error"},
    {kInvalidValue, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {kOutOfMemory, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {kNotInitialized, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {kNoDevice, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {kInvalidDevice, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {kInvalidImage, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {kInvalidContext, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {kInvalidHandle, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {kNotFound, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {kNotReady, "CUDA_ERROR_NOT_READY", "device not ready"},
    {kLaunchFailed, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {kNotSupported, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {kCaptureUnsupported, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing"},
    {kCaptureInvalidated, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "operation failed due to a previous error during capture"},
    {kCaptureUnmatched, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED", "capture was not initiated in this stream"},
    {kCaptureImplicit, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", "operation would make the legacy stream depend on a capturing blocking stream"},
    {kCaptureWrongThread, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", "attempted operation not permitted on a stream capturing from another thread"},
};

// ---- state ------------------------------------------------------------------
// One device (ordinal 0, CUdevice 0) with one primary context.

std::recursive_mutex mu;
char ctx_tag;
bool initialized;
int ctx_refs;
thread_local void* current_ctx;
thread_local int captures_here;
std::set<Stream*> streams;
std::set<Event*> events;
std::set<Module*> modules;
std::set<Function*> functions;
std::set<Graph*> graphs, execs;

struct Region {
	size_t size;   // as asked
	size_t mapped; // the mmap'd length, guard page included
};
static std::map<uintptr_t, Region> dev_mem; // device allocations by address
static std::set<void*> host_mem;            // cuMemHostAlloc's
static size_t dev_used;

// ---- helpers ----------------------------------------------------------------

void invalidate_captures_of_this_thread() {
	for (Stream* s : streams)
		if (s->capturing && pthread_equal(s->capture_thread, pthread_self())) s->invalidated = true;
}

// in_device reports whether [p, p+n) lies inside one device allocation.
static bool in_device(uintptr_t p, size_t n) {
	auto it = dev_mem.upper_bound(p);
	if (it == dev_mem.begin()) return false;
	--it;
	return p >= it->first && p + n >= p && p + n <= it->first + it->second.size;
}

bool stream_ok(void* h, Stream** s) {
	*s = nullptr;
	if ((uintptr_t)h <= 2) return true;
	if (!streams.count((Stream*)h)) return false;
	*s = (Stream*)h;
	return true;
}

bool default_stream_conflict() {
	for (Stream* s : streams)
		if (s->capturing && s->blocking) {
			s->invalidated = true;
			return true;
		}
	return false;
}

CUresult run_kernel(Function* f, const unsigned* grid, const unsigned* block, void* const* params) {
	if (f->launch(params, grid, block) != 0) {
		fprintf(stderr, "troupe cuda emulator: launch of %s failed (see above)\n", f->name.c_str());
		return kLaunchFailed;
	}
	return kSuccess;
}

CUresult run_node(const Node& n) {
	switch (n.kind) {
	case Node::kKernel: {
		std::vector<void*> ptrs(n.offsets.size());
		for (size_t i = 0; i < ptrs.size(); i++) ptrs[i] = (void*)&n.store[n.offsets[i]];
		return run_kernel(n.fn, n.grid, n.block, ptrs.data());
	}
	case Node::kMemset:
		memset((void*)n.dst, n.value, n.n);
		return kSuccess;
	case Node::kCopy:
		memmove((void*)n.dst, (const void*)n.src, n.n);
		return kSuccess;
	}
	return kInvalidValue;
}

// ---- initialization, device, context ---------------------------------------

API CUresult cuInit(unsigned flags) {
	LOCK;
	if (flags != 0) return kInvalidValue;
	if (emu_fail("cuInit")) return kNoDevice;
	initialized = true;
	return kSuccess;
}

API CUresult cuDeviceGetCount(int* n) {
	LOCK;
	CHECK_INIT();
	if (!n) return kInvalidValue;
	*n = 1;
	return kSuccess;
}

API CUresult cuDeviceGet(int* dev, int ordinal) {
	LOCK;
	CHECK_INIT();
	if (!dev) return kInvalidValue;
	if (ordinal != 0) return kInvalidDevice;
	*dev = 0;
	return kSuccess;
}

API CUresult cuDeviceGetName(char* name, int len, int dev) {
	LOCK;
	CHECK_INIT();
	if (dev != 0) return kInvalidDevice;
	if (!name || len <= 0) return kInvalidValue;
	snprintf(name, (size_t)len, "%s", "troupe CUDA emulator");
	return kSuccess;
}

static size_t host_total() { return (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE); }

API CUresult cuDeviceTotalMem_v2(size_t* bytes, int dev) {
	LOCK;
	CHECK_INIT();
	if (dev != 0) return kInvalidDevice;
	if (!bytes) return kInvalidValue;
	*bytes = host_total();
	return kSuccess;
}

// The attributes of an sm_80 part (A100), with as many SMs as host CPUs.
API CUresult cuDeviceGetAttribute(int* v, int attr, int dev) {
	LOCK;
	CHECK_INIT();
	if (dev != 0) return kInvalidDevice;
	if (!v) return kInvalidValue;
	switch (attr) {
	case 1: *v = 1024; break;                                 // MAX_THREADS_PER_BLOCK
	case 2: case 3: *v = 1024; break;                         // MAX_BLOCK_DIM_X, _Y
	case 4: *v = 64; break;                                   // MAX_BLOCK_DIM_Z
	case 5: *v = 0x7fffffff; break;                           // MAX_GRID_DIM_X
	case 6: case 7: *v = 65535; break;                        // MAX_GRID_DIM_Y, _Z
	case 8: *v = 48 << 10; break;                             // MAX_SHARED_MEMORY_PER_BLOCK
	case 10: *v = 32; break;                                  // WARP_SIZE
	case 16: *v = (int)sysconf(_SC_NPROCESSORS_ONLN); break;  // MULTIPROCESSOR_COUNT
	case 75: *v = 8; break;                                   // COMPUTE_CAPABILITY_MAJOR
	case 76: *v = 0; break;                                   // COMPUTE_CAPABILITY_MINOR
	case 97: *v = 163 << 10; break;                           // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
	default: return kInvalidValue;
	}
	return kSuccess;
}

API CUresult cuDevicePrimaryCtxRetain(void** ctx, int dev) {
	LOCK;
	CHECK_INIT();
	if (dev != 0) return kInvalidDevice;
	if (!ctx) return kInvalidValue;
	ctx_refs++;
	*ctx = &ctx_tag;
	return kSuccess;
}

API CUresult cuDevicePrimaryCtxRelease_v2(int dev) {
	LOCK;
	CHECK_INIT();
	if (dev != 0) return kInvalidDevice;
	if (ctx_refs == 0) return kInvalidContext;
	ctx_refs--;
	return kSuccess;
}

API CUresult cuCtxSetCurrent(void* ctx) {
	LOCK;
	CHECK_INIT();
	if (ctx && ctx != &ctx_tag) return kInvalidContext;
	current_ctx = ctx;
	return kSuccess;
}

API CUresult cuCtxSynchronize(void) {
	LOCK;
	CHECK_CTX();
	UNSAFE_IN_CAPTURE();
	return kSuccess;
}

// ---- memory -----------------------------------------------------------------

API CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total) {
	LOCK;
	CHECK_CTX();
	if (!free_bytes || !total) return kInvalidValue;
	size_t avail = (size_t)sysconf(_SC_AVPHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
	*total = host_total();
	*free_bytes = avail < *total - dev_used ? avail : *total - dev_used;
	return kSuccess;
}

// cuMemAlloc_v2 maps n bytes (rounded up to 256, the driver's alignment)
// ending right below a PROT_NONE page, filled with 0xff (a float NaN).
API CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t n) {
	LOCK;
	CHECK_CTX();
	UNSAFE_IN_CAPTURE();
	if (!p || n == 0) return kInvalidValue;
	if (emu_fail("cuMemAlloc")) return kOutOfMemory;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), r = (n + 255) & ~(size_t)255;
	size_t body = (r + page - 1) / page * page, len = body + page;
	char* m = (char*)mmap(0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) return kOutOfMemory;
	mprotect(m + body, page, PROT_NONE);
	char* base = m + body - r;
	memset(base, 0xff, r);
	dev_mem[(uintptr_t)base] = {n, len};
	dev_used += len;
	*p = (CUdeviceptr)base;
	return kSuccess;
}

API CUresult cuMemFree_v2(CUdeviceptr p) {
	LOCK;
	CHECK_CTX();
	UNSAFE_IN_CAPTURE();
	if (p == 0) return kSuccess;
	auto it = dev_mem.find((uintptr_t)p);
	if (it == dev_mem.end()) return kInvalidValue;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), r = (it->second.size + 255) & ~(size_t)255;
	size_t body = it->second.mapped - page;
	munmap((char*)p + r - body, it->second.mapped);
	dev_used -= it->second.mapped;
	dev_mem.erase(it);
	return kSuccess;
}

API CUresult cuMemHostAlloc(void** p, size_t n, unsigned flags) {
	LOCK;
	CHECK_CTX();
	UNSAFE_IN_CAPTURE();
	if (!p || n == 0 || flags > 0xf) return kInvalidValue;
	void* m = nullptr;
	if (posix_memalign(&m, 4096, n) != 0) return kOutOfMemory;
	memset(m, 0xff, n);
	host_mem.insert(m);
	*p = m;
	return kSuccess;
}

API CUresult cuMemFreeHost(void* p) {
	LOCK;
	CHECK_CTX();
	UNSAFE_IN_CAPTURE();
	if (!host_mem.erase(p)) return kInvalidValue;
	free(p);
	return kSuccess;
}

API CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, void* h) {
	LOCK;
	CHECK_CTX();
	Stream* s;
	if (!stream_ok(h, &s)) return kInvalidHandle;
	if (!in_device(p, n)) return kInvalidValue;
	Node node(Node::kMemset);
	node.dst = p, node.n = n, node.value = v;
	return queue(s, node, [&] { return run_node(node); });
}

// copy checks the device side(s) of a copy and queues it on h; sync is a
// synchronous call (the _v2 ones without a stream), unsafe in a capture.
static CUresult copy(uintptr_t dst, bool dst_dev, uintptr_t src, bool src_dev, size_t n, void* h, bool sync) {
	LOCK;
	CHECK_CTX();
	if (sync) UNSAFE_IN_CAPTURE();
	Stream* s;
	if (!stream_ok(h, &s)) return kInvalidHandle;
	if ((dst_dev && !in_device(dst, n)) || (src_dev && !in_device(src, n)) || (n > 0 && (!dst || !src)))
		return kInvalidValue;
	Node node(Node::kCopy);
	node.dst = dst, node.src = src, node.n = n;
	return queue(s, node, [&] { return run_node(node); });
}

API CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void* s, size_t n) {
	return copy(d, true, (uintptr_t)s, false, n, nullptr, true);
}
API CUresult cuMemcpyDtoH_v2(void* d, CUdeviceptr s, size_t n) {
	return copy((uintptr_t)d, false, s, true, n, nullptr, true);
}
API CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) {
	return copy(d, true, s, true, n, nullptr, true);
}
API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void* s, size_t n, void* st) {
	return copy(d, true, (uintptr_t)s, false, n, st, false);
}
API CUresult cuMemcpyDtoHAsync_v2(void* d, CUdeviceptr s, size_t n, void* st) {
	return copy((uintptr_t)d, false, s, true, n, st, false);
}
API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, void* st) {
	return copy(d, true, s, true, n, st, false);
}

// ---- streams and events -----------------------------------------------------

API CUresult cuStreamCreate(void** h, unsigned flags) {
	LOCK;
	CHECK_CTX();
	if (!h || flags > 1) return kInvalidValue;
	Stream* s = new Stream{flags == 0, false, false, pthread_t(), nullptr};
	streams.insert(s);
	*h = s;
	return kSuccess;
}

API CUresult cuStreamSynchronize(void* h) {
	LOCK;
	CHECK_CTX();
	Stream* s;
	if (!stream_ok(h, &s)) return kInvalidHandle;
	if (s && s->capturing) {
		s->invalidated = true;
		return kCaptureUnsupported;
	}
	UNSAFE_IN_CAPTURE();
	return kSuccess;
}

API CUresult cuStreamDestroy_v2(void* h) {
	LOCK;
	CHECK_CTX();
	Stream* s;
	if (!stream_ok(h, &s) || !s) return kInvalidHandle;
	if (s->capturing) return kCaptureUnsupported;
	streams.erase(s);
	delete s;
	return kSuccess;
}

API CUresult cuStreamWaitEvent(void* h, void* e, unsigned flags) {
	LOCK;
	CHECK_CTX();
	Stream* s;
	if (!stream_ok(h, &s) || !events.count((Event*)e)) return kInvalidHandle;
	if (flags != 0) return kInvalidValue;
	return kSuccess; // work already ran when it was queued
}

API CUresult cuEventCreate(void** e, unsigned flags) {
	LOCK;
	CHECK_CTX();
	if (!e || flags > 0xf) return kInvalidValue;
	Event* ev = new Event{false, {}};
	events.insert(ev);
	*e = ev;
	return kSuccess;
}

// cuEventRecord stamps the time now: the work queued before has run.
API CUresult cuEventRecord(void* e, void* h) {
	LOCK;
	CHECK_CTX();
	Stream* s;
	if (!stream_ok(h, &s) || !events.count((Event*)e)) return kInvalidHandle;
	if (s && s->capturing) return kNotSupported; // event nodes are not emulated
	Event* ev = (Event*)e;
	ev->recorded = true;
	clock_gettime(CLOCK_MONOTONIC, &ev->t);
	return kSuccess;
}

API CUresult cuEventSynchronize(void* e) {
	LOCK;
	CHECK_CTX();
	if (!events.count((Event*)e)) return kInvalidHandle;
	UNSAFE_IN_CAPTURE();
	return kSuccess;
}

API CUresult cuEventElapsedTime(float* ms, void* a, void* b) {
	LOCK;
	CHECK_CTX();
	Event *x = (Event*)a, *y = (Event*)b;
	if (!ms) return kInvalidValue;
	if (!events.count(x) || !events.count(y) || !x->recorded || !y->recorded) return kInvalidHandle;
	*ms = (float)((y->t.tv_sec - x->t.tv_sec) * 1e3 + (y->t.tv_nsec - x->t.tv_nsec) / 1e6);
	return kSuccess;
}

API CUresult cuEventDestroy_v2(void* e) {
	LOCK;
	CHECK_CTX();
	if (!events.erase((Event*)e)) return kInvalidHandle;
	delete (Event*)e;
	return kSuccess;
}

// ---- errors -----------------------------------------------------------------

API CUresult cuGetErrorName(CUresult r, const char** s) {
	if (!s) return kInvalidValue;
	for (const auto& e : kErrors)
		if (e.code == r) {
			*s = e.name;
			return kSuccess;
		}
	*s = nullptr;
	return kInvalidValue;
}

API CUresult cuGetErrorString(CUresult r, const char** s) {
	if (!s) return kInvalidValue;
	for (const auto& e : kErrors)
		if (e.code == r) {
			*s = e.msg;
			return kSuccess;
		}
	*s = nullptr;
	return kInvalidValue;
}
