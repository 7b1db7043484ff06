// emu_fail.h: the failure switch the fake libcuda and libnvrtc share.
#ifndef TROUPE_EMU_FAIL_H
#define TROUPE_EMU_FAIL_H

#include <stdlib.h>
#include <string.h>

// emu_fail reports whether TROUPE_EMU_FAIL, a comma-separated list, names
// stage: the tests of troupe's fallback from CUDA to the CPU make the fake
// libraries fail there ("cuInit", "cuMemAlloc", "cuModuleLoadData",
// "nvrtcCompileProgram").
static inline bool emu_fail(const char* stage) {
	const char* list = getenv("TROUPE_EMU_FAIL");
	size_t n = strlen(stage);
	for (const char* p = list; p && *p;) {
		const char* end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len == n && strncmp(p, stage, n) == 0) return true;
		p = end ? end + 1 : 0;
	}
	return false;
}

#endif
