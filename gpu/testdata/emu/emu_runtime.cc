// emu_runtime.cc: the execution engine of troupe's CUDA test emulator (see
// emu.h), linked into every module the fake NVRTC builds.
//
// A launch runs the grid's blocks one after another, in order of blockIdx
// (x fastest). A block's threads are cooperative fibers on one OS thread,
// started in order of their linear id; a fiber runs until it reaches a
// barrier (sync_threads, sync_warp, or a shuffle, which is a warp barrier
// between depositing its value and reading its source lane's) and then
// hands over to the next fiber that can run. Everything is deterministic.
// Launches are serialized by a mutex: the fiber state below is global.
//
// A launch fails (emu_run returns nonzero, after printing why) when the
// threads of a block deadlock, when the lanes of a warp meet at different
// kinds of warp-wide operation, or when a warp-wide operation (all of
// gpu's kernels use the full mask) finds a lane of its warp exited or
// missing.
//
// Fibers switch by a few lines of assembly on x86-64 and arm64, by
// ucontext elsewhere (or with -DEMU_UCONTEXT; glibc's swapcontext makes a
// system call each time, about 25 times slower).
#include "emu.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#if (defined(__x86_64__) || defined(__aarch64__)) && !defined(EMU_UCONTEXT)
#define EMU_ASM_SWITCH 1
#else
#include <ucontext.h>
#endif

namespace {

const size_t kStack = 64 << 10; // per fiber; kernels keep arrays like float v[32] on it
const int kMaxThreads = 1024;

// A fiber can run when *wait != wait_gen: waiting at a barrier, wait points
// at the barrier's generation count; ready, at kOne; done, at kZero.
const unsigned kOne = 1, kZero = 0;

struct Fiber {
	emu_fiber_pub pub; // threadIdx
	const unsigned* wait;
	unsigned wait_gen;
	int warp, lane;
	int phase; // which of the warp's two shuffle slots its next shuffle uses
	char* stack;       // kStack bytes above a guard page
#if EMU_ASM_SWITCH
	void* sp;
#else
	ucontext_t uc;
#endif
};

struct Warp {
	int size, live, arrived, kind;
	unsigned gen;
	unsigned slot[2][32];
};

struct Block {
	int n, live, arrived;
	unsigned gen;
};

pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
Fiber fibers[kMaxThreads];
Warp warps[kMaxThreads / 32];
Block blk;
int cur; // index of the running fiber
emu_body body;
void* const* params;
const char* kname;
char failure[512]; // why the block failed; empty while it runs well

#if EMU_ASM_SWITCH
void* main_sp; // the launching thread's context while fibers run
#else
ucontext_t main_uc;
#endif

} // namespace

extern "C" {
emu_fiber_pub* emu_self;
emu_dim3 emu_block_idx, emu_block_dim, emu_grid_dim;
}

// ---- context switching ------------------------------------------------------
#if EMU_ASM_SWITCH
// emu_switch(save, to): saves the callee-saved registers on this stack and
// its stack pointer in *save, then resumes the context whose stack pointer
// is to. A new fiber's stack is laid out as if it had called emu_switch,
// returning into emu_fiber_entry with its Fiber* in rbx (x19), which calls
// emu_fiber_main(f).
extern "C" void emu_switch(void** save, void* to);
extern "C" void emu_fiber_entry(void);
extern "C" __attribute__((visibility("hidden"))) void emu_fiber_main(Fiber* f);
#if defined(__x86_64__)
asm(R"(
	.text
	.globl emu_switch
	.hidden emu_switch
	.type emu_switch, @function
emu_switch:
	pushq %rbp
	pushq %rbx
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	movq %rsp, (%rdi)
	movq %rsi, %rsp
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbx
	popq %rbp
	ret
	.size emu_switch, .-emu_switch

	.globl emu_fiber_entry
	.hidden emu_fiber_entry
	.type emu_fiber_entry, @function
emu_fiber_entry:
	movq %rbx, %rdi
	andq $-16, %rsp
	call emu_fiber_main
	ud2
	.size emu_fiber_entry, .-emu_fiber_entry
)");

static void start_fiber(Fiber* f) {
	void** sp = (void**)(f->stack + kStack);
	*--sp = 0;                             // alignment pad
	*--sp = (void*)emu_fiber_entry;        // emu_switch's return address
	*--sp = 0;                             // rbp
	*--sp = f;                             // rbx
	for (int i = 0; i < 4; i++) *--sp = 0; // r12..r15
	f->sp = sp;
}
#else // __aarch64__: x19-x30 and d8-d15 in a 160-byte frame
asm(R"(
	.text
	.globl emu_switch
	.hidden emu_switch
	.type emu_switch, %function
emu_switch:
	sub sp, sp, #160
	stp x19, x20, [sp, #0]
	stp x21, x22, [sp, #16]
	stp x23, x24, [sp, #32]
	stp x25, x26, [sp, #48]
	stp x27, x28, [sp, #64]
	stp x29, x30, [sp, #80]
	stp d8, d9, [sp, #96]
	stp d10, d11, [sp, #112]
	stp d12, d13, [sp, #128]
	stp d14, d15, [sp, #144]
	mov x9, sp
	str x9, [x0]
	mov sp, x1
	ldp x19, x20, [sp, #0]
	ldp x21, x22, [sp, #16]
	ldp x23, x24, [sp, #32]
	ldp x25, x26, [sp, #48]
	ldp x27, x28, [sp, #64]
	ldp x29, x30, [sp, #80]
	ldp d8, d9, [sp, #96]
	ldp d10, d11, [sp, #112]
	ldp d12, d13, [sp, #128]
	ldp d14, d15, [sp, #144]
	add sp, sp, #160
	ret
	.size emu_switch, .-emu_switch

	.globl emu_fiber_entry
	.hidden emu_fiber_entry
	.type emu_fiber_entry, %function
emu_fiber_entry:
	mov x0, x19
	bl emu_fiber_main
	brk #0
	.size emu_fiber_entry, .-emu_fiber_entry
)");

static void start_fiber(Fiber* f) {
	void** sp = (void**)(f->stack + kStack) - 20; // the 160-byte frame
	for (int i = 0; i < 20; i++) sp[i] = 0;
	sp[0] = f;                      // x19
	sp[11] = (void*)emu_fiber_entry; // x30, emu_switch's return address
	f->sp = sp;
}
#endif
static void switch_fiber(Fiber* from, Fiber* to) { emu_switch(&from->sp, to->sp); }
static void enter_fibers(Fiber* to) { emu_switch(&main_sp, to->sp); }
static void leave_fibers(Fiber* from) { emu_switch(&from->sp, main_sp); }
#else
extern "C" void emu_fiber_main(Fiber* f);
static void fiber_start_uc(unsigned hi, unsigned lo) {
	emu_fiber_main((Fiber*)(((uintptr_t)hi << 32) | lo));
}
static void start_fiber(Fiber* f) {
	getcontext(&f->uc);
	f->uc.uc_stack.ss_sp = f->stack;
	f->uc.uc_stack.ss_size = kStack;
	f->uc.uc_link = 0;
	uintptr_t p = (uintptr_t)f;
	makecontext(&f->uc, (void (*)())fiber_start_uc, 2, (unsigned)(p >> 32), (unsigned)p);
}
static void switch_fiber(Fiber* from, Fiber* to) { swapcontext(&from->uc, &to->uc); }
static void enter_fibers(Fiber* to) { swapcontext(&main_uc, &to->uc); }
static void leave_fibers(Fiber* from) { swapcontext(&from->uc, &main_uc); }
#endif

// ---- scheduling -------------------------------------------------------------

static inline bool runnable(const Fiber& f) { return *f.wait != f.wait_gen; }

static inline void wait_for(Fiber& f, const unsigned* gen) {
	f.wait = gen;
	f.wait_gen = *gen;
}

// fail records why the block cannot go on (the first reason only); fmt
// takes the ints a and b.
static void fail(const char* fmt, int a, int b) {
	if (failure[0]) return;
	const Fiber& f = fibers[cur];
	int n = snprintf(failure, sizeof failure, "kernel %s, block (%u,%u,%u), thread (%u,%u,%u): ", kname,
	                 emu_block_idx.x, emu_block_idx.y, emu_block_idx.z, f.pub.tid.x, f.pub.tid.y, f.pub.tid.z);
	snprintf(failure + n, sizeof failure - n, fmt, a, b);
}

static const char* kind_name(int kind) {
	switch (kind) {
	case EMU_SHFL_BFLY: return "shfl_bfly";
	case EMU_SHFL_IDX: return "shfl_idx";
	case EMU_SYNC_WARP: return "sync_warp";
	}
	return "?";
}

static inline void resume(Fiber* from, int j) {
	Fiber* to = &fibers[j];
	to->wait = &kOne; // ready
	to->wait_gen = 0;
	cur = j;
	emu_self = &to->pub;
	if (to != from) switch_fiber(from, to);
}

// yield hands over to the next fiber that can run: the next lane of the
// current warp that can (so a warp runs from barrier to barrier with its
// 32 stacks in cache), else the next fiber of the block; or back to the
// launching thread when none can (all done, or a failure).
static void yield() {
	Fiber* from = &fibers[cur];
	if (!failure[0]) {
		int base = cur & ~31, size = warps[from->warp].size;
		for (int i = 1, l = from->lane; i <= size; i++) {
			if (++l == size) l = 0;
			if (runnable(fibers[base + l])) return resume(from, base + l);
		}
		for (int i = 1, j = cur; i <= blk.n; i++) {
			if (++j == blk.n) j = 0;
			if (runnable(fibers[j])) return resume(from, j);
		}
		if (blk.live > 0) fail("deadlock: %d of %d threads wait at barriers that cannot complete", blk.live, blk.n);
	}
	leave_fibers(from);
}

extern "C" void emu_fiber_main(Fiber* f) {
	body(params);
	wait_for(*f, &kZero); // never runnable again
	Warp& w = warps[f->warp];
	w.live--;
	if (w.arrived > 0) fail("exited while %d lanes of its warp wait at a warp-wide operation (lane %d)", w.arrived, f->lane);
	if (--blk.live > 0 && blk.arrived == blk.live) { // the others wait only for the exited
		blk.arrived = 0;
		blk.gen++;
	}
	yield();
	abort(); // a finished fiber is never resumed
}

// warp_barrier: the current fiber waits until every lane of its warp has
// arrived at an operation of the same kind; the last to arrive goes on.
// The lanes run in turn, so the next lane is almost always the one to run.
static inline __attribute__((always_inline)) void warp_barrier(int kind) {
	Fiber& f = fibers[cur];
	Warp& w = warps[f.warp];
	if (__builtin_expect(w.size != 32 || w.live != 32, 0)) {
		fail("warp-wide operation in a warp of %d threads, %d not exited (the mask is full)", w.size, w.live);
		yield();
		return;
	}
	if (w.arrived == 0) {
		w.kind = kind;
	} else if (__builtin_expect(w.kind != kind, 0)) {
		if (!failure[0]) {
			char msg[128];
			snprintf(msg, sizeof msg, "lanes of a warp diverged: lane %%d at %s, %%d lanes before it at %s", kind_name(kind),
			         kind_name(w.kind));
			fail(msg, f.lane, w.arrived);
		}
		yield();
		return;
	}
	if (++w.arrived == 32) {
		w.arrived = 0;
		w.gen++;
		return;
	}
	wait_for(f, &w.gen);
	int next = f.lane == 31 ? cur - 31 : cur + 1;
	if (runnable(fibers[next]) && !failure[0]) {
		resume(&f, next);
		return;
	}
	yield();
}

extern "C" void emu_sync_warp(void) { warp_barrier(EMU_SYNC_WARP); }

extern "C" void emu_sync_threads(void) {
	Fiber& f = fibers[cur];
	if (++blk.arrived == blk.live) {
		blk.arrived = 0;
		blk.gen++;
		return;
	}
	wait_for(f, &blk.gen);
	yield();
}

// emu_shfl: deposit v, wait for the warp, read src_lane's deposit. Two slots
// used in turn make one barrier enough: a lane deposits for its next shuffle
// only after every lane has arrived at this one, so after every lane has
// read the previous shuffle's slot, the one it overwrites.
extern "C" unsigned emu_shfl(unsigned v, int b, int kind) {
	Fiber& f = fibers[cur];
	Warp& w = warps[f.warp];
	int ph = f.phase, src = (kind == EMU_SHFL_BFLY ? f.lane ^ b : b) & 31;
	f.phase ^= 1;
	w.slot[ph][f.lane] = v;
	warp_barrier(kind);
	return w.slot[ph][src];
}

// ---- launching --------------------------------------------------------------

// stack_for returns fiber i's stack, mapped on first use with a guard page
// below it, so an overflow faults instead of corrupting a neighbour.
static char* stack_for(int i) {
	if (!fibers[i].stack) {
		size_t page = (size_t)sysconf(_SC_PAGESIZE);
		char* p = (char*)mmap(0, kStack + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) return 0;
		mprotect(p, page, PROT_NONE);
		fibers[i].stack = p + page;
	}
	return fibers[i].stack;
}

// run_block runs the current block's n threads to completion.
static int run_block(int n) {
	const emu_dim3 d = emu_block_dim;
	for (int i = 0; i < n; i++) {
		Fiber& f = fibers[i];
		f.pub.tid = {i % d.x, i / d.x % d.y, i / (d.x * d.y)};
		f.warp = i / 32;
		f.lane = i % 32;
		f.wait = &kOne;
		f.wait_gen = 0;
		f.phase = 0;
		start_fiber(&f);
	}
	for (int w = 0; w < (n + 31) / 32; w++) {
		warps[w].size = warps[w].live = n - 32 * w < 32 ? n - 32 * w : 32;
		warps[w].arrived = 0;
		warps[w].gen = 0;
	}
	blk = {n, n, 0, 0};
	cur = 0;
	emu_self = &fibers[0].pub;
	enter_fibers(&fibers[0]);
	if (failure[0]) return 1;
	return 0;
}

extern "C" int emu_run(const char* name, emu_body b, void* const* p, const unsigned* grid,
                       const unsigned* block) {
	unsigned long long n = (unsigned long long)block[0] * block[1] * block[2];
	if (n == 0 || n > kMaxThreads || grid[0] == 0 || grid[1] == 0 || grid[2] == 0) {
		fprintf(stderr, "troupe cuda emulator: kernel %s: bad launch shape\n", name);
		return 1;
	}
	pthread_mutex_lock(&mu);
	for (int i = 0; i < (int)n; i++) {
		if (!stack_for(i)) {
			pthread_mutex_unlock(&mu);
			fprintf(stderr, "troupe cuda emulator: kernel %s: no memory for fiber stacks\n", name);
			return 1;
		}
	}
	kname = name;
	body = b;
	params = p;
	failure[0] = 0;
	emu_block_dim = {block[0], block[1], block[2]};
	emu_grid_dim = {grid[0], grid[1], grid[2]};
	int rc = 0;
	for (unsigned z = 0; z < grid[2] && !rc; z++)
		for (unsigned y = 0; y < grid[1] && !rc; y++)
			for (unsigned x = 0; x < grid[0] && !rc; x++) {
				emu_block_idx = {x, y, z};
				rc = run_block((int)n);
			}
	if (rc) fprintf(stderr, "troupe cuda emulator: %s\n", failure);
	emu_self = 0;
	pthread_mutex_unlock(&mu);
	return rc;
}
