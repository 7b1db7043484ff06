// libcuda_exec.cc: the fake libcuda's modules, launches, stream capture and
// graphs (see libcuda.cc). A module is a shared object the fake NVRTC
// built: its kernels are reached through the trampolines emu.h's
// EMU_KERNEL exports.
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "libcuda.h"

// ---- modules and launches ---------------------------------------------------

// kImageMagic starts the "CUBIN" libnvrtc.cc returns; the path of the
// module's shared object follows it, NUL-terminated.
static const char kImageMagic[] = "TROUPE-EMU-MODULE\n";

API CUresult cuModuleLoadData(void** m, const void* image) {
	LOCK;
	CHECK_CTX();
	if (!m || !image) return kInvalidValue;
	if (emu_fail("cuModuleLoadData")) return kInvalidImage;
	if (strncmp((const char*)image, kImageMagic, sizeof kImageMagic - 1) != 0) {
		fprintf(stderr, "troupe cuda emulator: cuModuleLoadData: not an image of the emulator's NVRTC\n");
		return kInvalidImage;
	}
	const char* path = (const char*)image + sizeof kImageMagic - 1;
	void* so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!so) {
		fprintf(stderr, "troupe cuda emulator: cuModuleLoadData: %s\n", dlerror());
		return kInvalidImage;
	}
	Module* mod = new Module{so};
	modules.insert(mod);
	*m = mod;
	return kSuccess;
}

// cuModuleGetFunction finds the kernel's trampolines, emu_launch_<name> and
// emu_params_<name> (see EMU_KERNEL in emu.h).
API CUresult cuModuleGetFunction(void** f, void* m, const char* name) {
	LOCK;
	CHECK_CTX();
	if (!f || !name) return kInvalidValue;
	Module* mod = (Module*)m;
	if (!modules.count(mod)) return kInvalidHandle;
	std::string n(name);
	auto launch = (int (*)(void* const*, const unsigned*, const unsigned*))dlsym(mod->so, ("emu_launch_" + n).c_str());
	auto params = (int (*)(size_t*, int))dlsym(mod->so, ("emu_params_" + n).c_str());
	if (!launch || !params) return kNotFound;
	Function* fn = new Function{mod, n, launch, 0, {}, 0};
	fn->nparams = params(nullptr, 0);
	fn->sizes.resize(fn->nparams);
	params(fn->sizes.data(), fn->nparams);
	functions.insert(fn);
	*f = fn;
	return kSuccess;
}

API CUresult cuModuleUnload(void* m) {
	LOCK;
	CHECK_CTX();
	Module* mod = (Module*)m;
	if (!modules.erase(mod)) return kInvalidHandle;
	for (auto it = functions.begin(); it != functions.end();) {
		if ((*it)->mod == mod) {
			delete *it;
			it = functions.erase(it);
		} else {
			++it;
		}
	}
	dlclose(mod->so);
	delete mod;
	return kSuccess;
}

API CUresult cuFuncSetAttribute(void* f, int attr, int v) {
	LOCK;
	CHECK_CTX();
	Function* fn = (Function*)f;
	if (!functions.count(fn)) return kInvalidHandle;
	if (attr != 8 || v < 0 || v > (163 << 10)) return kInvalidValue; // MAX_DYNAMIC_SHARED_SIZE_BYTES only
	fn->max_dyn_shared = v;
	return kSuccess;
}

// cuLaunchKernel runs the kernel now (or records it, with a copy of its
// parameter values, on a capturing stream). kernelParams must be given;
// extra is not supported. Dynamic shared memory is checked, not provided:
// gpu's kernels declare none.
API CUresult cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned shared, void* h, void** params, void** extra) {
	LOCK;
	CHECK_CTX();
	Function* fn = (Function*)f;
	Stream* s;
	if (!functions.count(fn) || !stream_ok(h, &s)) return kInvalidHandle;
	unsigned long long threads = (unsigned long long)bx * by * bz;
	if (extra || (fn->nparams > 0 && !params) || gx == 0 || gy == 0 || gz == 0 || gy > 65535 || gz > 65535 ||
	    gx > 0x7fffffffu || threads == 0 || threads > 1024 || bz > 64 ||
	    shared > (unsigned)(fn->max_dyn_shared > (48 << 10) ? fn->max_dyn_shared : 48 << 10))
		return kInvalidValue;
	Node node(Node::kKernel);
	node.fn = fn;
	unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
	memcpy(node.grid, grid, sizeof grid);
	memcpy(node.block, block, sizeof block);
	if (s && s->capturing) { // copy the values: the caller reuses params
		for (int i = 0; i < fn->nparams; i++) {
			node.offsets.push_back(node.store.size());
			node.store.resize(node.store.size() + (fn->sizes[i] + 7) / 8);
			memcpy(&node.store[node.offsets.back()], params[i], fn->sizes[i]);
		}
	}
	return queue(s, node, [&] { return run_kernel(fn, grid, block, params); });
}

// ---- stream capture and graphs ----------------------------------------------

API CUresult cuStreamBeginCapture_v2(void* h, int mode) {
	LOCK;
	CHECK_CTX();
	Stream* s;
	if (!stream_ok(h, &s)) return kInvalidHandle;
	if (!s) return kCaptureUnsupported; // the legacy stream cannot capture
	if (mode < 0 || mode > 2) return kInvalidValue;
	if (s->capturing) return kInvalidValue;
	s->capturing = true;
	s->invalidated = false;
	s->capture_thread = pthread_self();
	s->graph = new Graph;
	if (mode != 2) captures_here++; // relaxed mode (2) forbids nothing
	return kSuccess;
}

API CUresult cuStreamEndCapture(void* h, void** g) {
	LOCK;
	CHECK_CTX();
	Stream* s;
	if (!stream_ok(h, &s) || !s) return kInvalidHandle;
	if (!g) return kInvalidValue;
	if (!s->capturing) return kCaptureUnmatched;
	if (!pthread_equal(s->capture_thread, pthread_self())) return kCaptureWrongThread;
	s->capturing = false;
	if (captures_here > 0) captures_here--;
	if (s->invalidated) {
		delete s->graph;
		s->graph = nullptr;
		*g = nullptr;
		return kCaptureInvalidated;
	}
	graphs.insert(s->graph);
	*g = s->graph;
	s->graph = nullptr;
	return kSuccess;
}

API CUresult cuGraphInstantiateWithFlags(void** e, void* g, unsigned long long flags) {
	LOCK;
	CHECK_CTX();
	if (!e) return kInvalidValue;
	if (!graphs.count((Graph*)g)) return kInvalidHandle;
	if (flags != 0) return kNotSupported;
	Graph* x = new Graph(*(Graph*)g);
	execs.insert(x);
	*e = x;
	return kSuccess;
}

API CUresult cuGraphLaunch(void* e, void* h) {
	LOCK;
	CHECK_CTX();
	Stream* s;
	Graph* x = (Graph*)e;
	if (!execs.count(x) || !stream_ok(h, &s)) return kInvalidHandle;
	if (s && s->capturing) return kNotSupported; // child graphs are not emulated
	if (!s && default_stream_conflict()) return kCaptureImplicit;
	for (const Node& n : x->nodes) {
		// A node's function may have been unloaded with its module since.
		if (n.kind == Node::kKernel && !functions.count(n.fn)) return kInvalidHandle;
		if (CUresult r = run_node(n)) return r;
	}
	return kSuccess;
}

API CUresult cuGraphDestroy(void* g) {
	LOCK;
	CHECK_CTX();
	if (!graphs.erase((Graph*)g)) return kInvalidHandle;
	delete (Graph*)g;
	return kSuccess;
}

API CUresult cuGraphExecDestroy(void* e) {
	LOCK;
	CHECK_CTX();
	if (!execs.erase((Graph*)e)) return kInvalidHandle;
	delete (Graph*)e;
	return kSuccess;
}

