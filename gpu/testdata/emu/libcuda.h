// libcuda.h: what the two files of the fake libcuda.so.1 (libcuda.cc,
// libcuda_exec.cc) share: error codes, handles, state (see libcuda.cc).
#ifndef TROUPE_EMU_LIBCUDA_H
#define TROUPE_EMU_LIBCUDA_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "emu_fail.h"

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
#define API extern "C" __attribute__((visibility("default")))

enum {
	kSuccess = 0,
	kInvalidValue = 1,
	kOutOfMemory = 2,
	kNotInitialized = 3,
	kNoDevice = 100,
	kInvalidDevice = 101,
	kInvalidImage = 200,
	kInvalidContext = 201,
	kInvalidHandle = 400,
	kNotFound = 500,
	kNotReady = 600,
	kLaunchFailed = 719,
	kNotSupported = 801,
	kCaptureUnsupported = 900,
	kCaptureInvalidated = 901,
	kCaptureUnmatched = 903,
	kCaptureImplicit = 906,
	kCaptureWrongThread = 908,
};

// ---- handles ---------------------------------------------------------------
// A handle (CUstream, CUevent, ...) is a pointer to one of these, checked
// against the set of live ones before use.
struct Function;
struct Node { // one captured operation
	enum Kind { kKernel, kMemset, kCopy } kind;
	Function* fn = nullptr;
	unsigned grid[3] = {}, block[3] = {};
	std::vector<uint64_t> store;  // parameter values, 8-byte aligned
	std::vector<size_t> offsets;  // of each parameter in store (words)
	uintptr_t dst = 0, src = 0;   // memset / copy
	size_t n = 0;
	unsigned char value = 0;
	explicit Node(Kind k) : kind(k) {}
};
struct Graph {
	std::vector<Node> nodes;
};
struct Stream {
	bool blocking;
	bool capturing, invalidated;
	pthread_t capture_thread;
	Graph* graph;
};
struct Event {
	bool recorded;
	struct timespec t;
};
struct Module {
	void* so;
};
struct Function {
	Module* mod;
	std::string name;
	int (*launch)(void* const*, const unsigned*, const unsigned*);
	int nparams;
	std::vector<size_t> sizes;
	int max_dyn_shared;
};

// ---- state (libcuda.cc) ------------------------------------------------------
// Everything is guarded by mu; kernels run under it too, one launch at a time.
extern std::recursive_mutex mu;
#define LOCK std::lock_guard<std::recursive_mutex> lock(mu)
extern char ctx_tag; // the primary context's handle is &ctx_tag
extern bool initialized;
extern int ctx_refs;
extern thread_local void* current_ctx;
extern thread_local int captures_here; // capturing streams begun on this thread (thread-local mode)
extern std::set<Stream*> streams;
extern std::set<Event*> events;
extern std::set<Module*> modules;
extern std::set<Function*> functions;
extern std::set<Graph*> graphs, execs;

// ---- helpers (libcuda.cc) ------------------------------------------------------
// CHECK_INIT: cuInit has run; CHECK_CTX: and this thread has the context.
#define CHECK_INIT() \
	if (!initialized) return kNotInitialized
#define CHECK_CTX()                                 \
	CHECK_INIT();                                   \
	if (current_ctx != &ctx_tag || ctx_refs == 0) return kInvalidContext
// UNSAFE_IN_CAPTURE: calls thread-local capture mode forbids on a thread
// that is capturing; like the driver, they also invalidate the capture.
#define UNSAFE_IN_CAPTURE()                 \
	if (captures_here > 0) {                \
		invalidate_captures_of_this_thread(); \
		return kCaptureUnsupported;         \
	}

void invalidate_captures_of_this_thread();
// stream_ok resolves a CUstream: 0, CU_STREAM_LEGACY (1) and
// CU_STREAM_PER_THREAD (2) are the default streams (nullptr).
bool stream_ok(void* h, Stream** s);
// default_stream_conflict: work on the legacy stream would wait for a
// blocking stream that is capturing (and so invalidates its capture).
bool default_stream_conflict();
CUresult run_kernel(Function* f, const unsigned* grid, const unsigned* block, void* const* params);
CUresult run_node(const Node& n);

// queue runs op now, or records it when s is capturing (from any thread:
// only ending a capture must happen on the thread that began it).
template <class Op>
inline CUresult queue(Stream* s, const Node& node, Op op) {
	if (s && s->capturing) {
		if (s->invalidated) return kCaptureInvalidated;
		s->graph->nodes.push_back(node);
		return kSuccess;
	}
	if (!s && default_stream_conflict()) return kCaptureImplicit;
	return op();
}

#endif // TROUPE_EMU_LIBCUDA_H
