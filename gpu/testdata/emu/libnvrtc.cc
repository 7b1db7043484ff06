// libnvrtc.cc: a fake libnvrtc.so.12 for troupe's CUDA test emulator (see
// emu.h). "Compiling" a program builds it for the host with the C++
// compiler: the source (with emu.h included first) and a trampoline per
// kernel (EMU_KERNEL in emu.h) become a shared object together with
// emu_runtime.cc, and the "CUBIN" is the object's path after a magic line,
// which the fake libcuda's cuModuleLoadData dlopens.
//
// Environment: TROUPE_EMU_DIR (required) is the directory of emu.h and
// emu_runtime.cc; TROUPE_EMU_CXX the compiler (default g++); and
// TROUPE_EMU_CACHE where objects are kept, by a hash of everything that
// goes into them (default $TMPDIR/troupe-cuda-emu), so a source is built
// once; a hit touches its directory. A compiler error fails
// nvrtcCompileProgram with NVRTC_ERROR_COMPILATION and the compiler's
// messages as the program log, "file:line:col:" rewritten to NVRTC's
// "file(line):".
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>

#include "emu_fail.h"

#include <set>
#include <string>
#include <vector>

#define API extern "C" __attribute__((visibility("default")))

enum {
	kSuccess = 0,
	kOutOfMemory = 1,
	kProgramCreationFailure = 2,
	kInvalidInput = 3,
	kInvalidProgram = 4,
	kInvalidOption = 5,
	kCompilation = 6,
	kInternalError = 11,
};

static const char kImageMagic[] = "TROUPE-EMU-MODULE\n"; // as libcuda.cc

struct Program {
	std::string src, name;
	std::vector<std::pair<std::string, std::string>> headers; // include name, source
	std::string log, image;
	bool cubin; // a real architecture (sm_XY) was asked for, not a virtual one
};

API int nvrtcVersion(int* major, int* minor) {
	if (!major || !minor) return kInvalidInput;
	*major = 12;
	*minor = 0;
	return kSuccess;
}

API const char* nvrtcGetErrorString(int r) {
	switch (r) {
	case kSuccess: return "NVRTC_SUCCESS";
	case kOutOfMemory: return "NVRTC_ERROR_OUT_OF_MEMORY";
	case kProgramCreationFailure: return "NVRTC_ERROR_PROGRAM_CREATION_FAILURE";
	case kInvalidInput: return "NVRTC_ERROR_INVALID_INPUT";
	case kInvalidProgram: return "NVRTC_ERROR_INVALID_PROGRAM";
	case kInvalidOption: return "NVRTC_ERROR_INVALID_OPTION";
	case kCompilation: return "NVRTC_ERROR_COMPILATION";
	case kInternalError: return "NVRTC_ERROR_INTERNAL_ERROR";
	}
	return "NVRTC_ERROR unknown";
}

API int nvrtcCreateProgram(Program** prog, const char* src, const char* name, int num_headers,
                           const char* const* headers, const char* const* include_names) {
	if (!prog) return kInvalidProgram;
	if (!src || num_headers < 0 || (num_headers > 0 && (!headers || !include_names))) return kInvalidInput;
	Program* p = new Program;
	p->src = src;
	// The source is written under its own name, so messages name it: keep
	// a plain file name.
	p->name = name && *name ? name : "default_program";
	for (char& c : p->name)
		if (!(isalnum((unsigned char)c) || c == '.' || c == '_' || c == '-')) c = '_';
	for (int i = 0; i < num_headers; i++) p->headers.push_back({include_names[i], headers[i]});
	*prog = p;
	return kSuccess;
}

API int nvrtcDestroyProgram(Program** prog) {
	if (!prog || !*prog) return kInvalidProgram;
	delete *prog;
	*prog = nullptr;
	return kSuccess;
}

// ---- helpers ----------------------------------------------------------------

static std::string quote(const std::string& s) {
	std::string q = "'";
	for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
	return q + "'";
}

// run runs a shell command, returning its exit status and its output
// (stdout and stderr) in out.
static int run(const std::string& cmd, std::string* out) {
	FILE* f = popen((cmd + " 2>&1").c_str(), "r");
	if (!f) return -1;
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0) out->append(buf, n);
	return pclose(f);
}

static bool read_file(const std::string& path, std::string* s) {
	FILE* f = fopen(path.c_str(), "rb");
	if (!f) return false;
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0) s->append(buf, n);
	fclose(f);
	return true;
}

static bool write_file(const std::string& path, const std::string& s) {
	FILE* f = fopen(path.c_str(), "wb");
	if (!f) return false;
	bool ok = fwrite(s.data(), 1, s.size(), f) == s.size();
	return fclose(f) == 0 && ok;
}

// hash is two FNV-1a 64-bit hashes of s, as 32 hex digits.
static std::string hash(const std::string& s) {
	unsigned long long a = 14695981039346656037ull, b = 1099511628211ull * 7;
	for (unsigned char c : s) {
		a = (a ^ c) * 1099511628211ull;
		b = (b ^ c) * 1099511628211ull + 0x9e3779b97f4a7c15ull;
	}
	char h[33];
	snprintf(h, sizeof h, "%016llx%016llx", a, b);
	return h;
}

// kernel_names scans preprocessed text for `__troupe_emu_global__ void NAME(`
// (what __global__ becomes under TROUPE_EMU_SCAN).
static std::vector<std::string> kernel_names(const std::string& pre) {
	static const char tag[] = "__troupe_emu_global__";
	std::vector<std::string> names;
	std::set<std::string> seen;
	for (size_t i = pre.find(tag); i != std::string::npos; i = pre.find(tag, i + 1)) {
		size_t j = i + sizeof tag - 1;
		while (j < pre.size() && isspace((unsigned char)pre[j])) j++;
		if (pre.compare(j, 4, "void") != 0) continue;
		j += 4;
		while (j < pre.size() && isspace((unsigned char)pre[j])) j++;
		size_t k = j;
		while (k < pre.size() && (isalnum((unsigned char)pre[k]) || pre[k] == '_')) k++;
		size_t l = k;
		while (l < pre.size() && isspace((unsigned char)pre[l])) l++;
		if (k > j && l < pre.size() && pre[l] == '(' && seen.insert(pre.substr(j, k - j)).second)
			names.push_back(pre.substr(j, k - j));
	}
	return names;
}

// nvrtc_log rewrites the compiler's "name:LINE:COL: " to NVRTC's "name(LINE): ".
static std::string nvrtc_log(const std::string& out, const std::string& name) {
	std::string log;
	for (size_t start = 0; start < out.size();) {
		size_t end = out.find('\n', start);
		if (end == std::string::npos) end = out.size();
		std::string line = out.substr(start, end - start);
		start = end + 1;
		if (line.compare(0, name.size() + 3, "./" + name + ":") == 0) line.erase(0, 2); // clang's spelling
		size_t i = name.size() + 1, j = i;
		if (line.compare(0, i, name + ":") == 0) {
			while (j < line.size() && isdigit((unsigned char)line[j])) j++;
			if (j > i && j < line.size() && line[j] == ':') {
				size_t k = j + 1;
				while (k < line.size() && isdigit((unsigned char)line[k])) k++;
				if (k == j + 1 || k == line.size() || line[k] != ':') k = j; // no column
				line = name + "(" + line.substr(i, j - i) + "):" + line.substr(k + 1);
			}
		}
		log += line + "\n";
	}
	return log;
}

// ---- compiling ----------------------------------------------------------------

// options turns NVRTC options into compiler flags: the language standard,
// -D and -I pass through; the architecture decides whether there is a
// CUBIN; options about GPU code generation are accepted and ignored.
static int options(Program* p, int n, const char* const* opts, std::string* flags) {
	std::string std_flag = "-std=c++17"; // NVRTC's default
	p->cubin = false;
	bool arch = false;
	for (int i = 0; i < n; i++) {
		std::string o = opts[i] ? opts[i] : "";
		auto value = [&](const char* prefix) -> const char* {
			size_t l = strlen(prefix);
			return o.compare(0, l, prefix) == 0 ? o.c_str() + l : nullptr;
		};
		const char* v;
		if ((v = value("-arch=")) || (v = value("--gpu-architecture="))) {
			arch = true;
			if (strncmp(v, "sm_", 3) == 0) {
				p->cubin = true;
			} else if (strncmp(v, "compute_", 8) != 0) {
				p->log = "nvrtc: error: invalid value for --gpu-architecture (-arch): " + std::string(v) + "\n";
				return kInvalidOption;
			}
		} else if ((v = value("-std=")) || (v = value("--std="))) {
			std_flag = std::string("-std=") + v;
		} else if ((v = value("-D")) || (v = value("--define-macro="))) {
			*flags += " " + quote(std::string("-D") + v);
		} else if ((v = value("-I")) || (v = value("--include-path="))) {
			*flags += " " + quote(std::string("-I") + v);
		} else if (o == "-default-device" || o == "-dw" || o == "-lineinfo" || o == "--generate-line-info" ||
		           o == "-G" || o == "--device-debug" || o == "-use_fast_math" || o == "--use_fast_math" ||
		           o == "-w" || o == "--disable-warnings" || o == "-restrict" || o == "--restrict" ||
		           value("-ftz=") || value("-prec-div=") || value("-prec-sqrt=") || value("-fmad=") ||
		           value("--ftz=") || value("--prec-div=") || value("--prec-sqrt=") || value("--fmad=") ||
		           value("-maxrregcount=") || value("--maxrregcount=") || o == "-rdc=false" ||
		           o == "--relocatable-device-code=false") {
			// GPU code generation: nothing to do on the host.
		} else {
			p->log = "nvrtc: error: unrecognized option " + o + "\n";
			return kInvalidOption;
		}
	}
	if (!arch) p->cubin = true; // NVRTC's default architecture is a real one
	*flags = std_flag + *flags;
	return kSuccess;
}

API int nvrtcCompileProgram(Program* p, int n, const char* const* opts) {
	if (!p) return kInvalidProgram;
	if (n < 0 || (n > 0 && !opts)) return kInvalidInput;
	p->log.clear();
	p->image.clear();
	std::string flags;
	if (int r = options(p, n, opts, &flags)) return r;
	if (emu_fail("nvrtcCompileProgram")) {
		p->log = "troupe cuda emulator: failing as TROUPE_EMU_FAIL says\n";
		return kCompilation;
	}

	const char* emu = getenv("TROUPE_EMU_DIR");
	std::string emu_h, runtime;
	if (!emu || !read_file(std::string(emu) + "/emu.h", &emu_h) ||
	    !read_file(std::string(emu) + "/emu_runtime.cc", &runtime)) {
		p->log = "troupe cuda emulator: TROUPE_EMU_DIR must name the directory of emu.h and emu_runtime.cc\n";
		return kCompilation;
	}
	const char* cxx_env = getenv("TROUPE_EMU_CXX");
	std::string cxx = cxx_env && *cxx_env ? cxx_env : "g++";
	std::string cflags = flags + " -O2 -ffp-contract=off -fPIC -fvisibility=hidden -Wno-unknown-pragmas -DTROUPE_EMU -I" +
	                     quote(emu) + " -I.";
#if defined(__x86_64__)
	if (__builtin_cpu_supports("fma")) cflags += " -mfma"; // fmaf inline (the same result as the library's)
#endif

	std::string key_src = "v1\n" + cxx + "\n" + cflags + "\n" + p->name + "\n" + p->src + "\n" + emu_h + runtime;
	for (auto& h : p->headers) key_src += "\n" + h.first + "\n" + h.second;
	const char* cache_env = getenv("TROUPE_EMU_CACHE");
	const char* tmp_env = getenv("TMPDIR");
	std::string cache = cache_env && *cache_env ? cache_env : std::string(tmp_env && *tmp_env ? tmp_env : "/tmp") + "/troupe-cuda-emu";
	std::string dir = cache + "/" + hash(key_src), so = dir + "/module.so";

	struct stat st;
	if (stat(so.c_str(), &st) == 0) {
		utime(dir.c_str(), nullptr); // in use (internal/cudaemu prunes entries unused for a week)
	} else {
		std::string out;
		if (run("mkdir -p " + quote(cache), &out) != 0) {
			p->log = "troupe cuda emulator: cannot create " + cache + ": " + out;
			return kInternalError;
		}
		std::string tmp = cache + "/tmp-XXXXXX";
		if (!mkdtemp(&tmp[0])) {
			p->log = "troupe cuda emulator: mkdtemp in " + cache + ": " + strerror(errno) + "\n";
			return kInternalError;
		}
		bool ok = write_file(tmp + "/" + p->name, p->src);
		for (auto& h : p->headers) ok = ok && write_file(tmp + "/" + h.first, h.second);
		// Find the kernels: preprocess with __global__ as a marker. Then
		// build the source, a trampoline per kernel and the runtime.
		std::string pre, cd = "cd " + quote(tmp) + " && " + quote(cxx) + " " + cflags;
		int rc = -1;
		out = "troupe cuda emulator: cannot write the sources in " + tmp + "\n";
		if (ok) {
			rc = run(cd + " -E -P -DTROUPE_EMU_SCAN -include emu.h -x c++ " + quote(p->name), &pre);
			out = pre;
		}
		std::string gen = "#include \"emu.h\"\n#include \"" + p->name + "\"\n";
		for (const std::string& k : kernel_names(pre)) gen += "EMU_KERNEL(" + k + ")\n";
		if (rc == 0 && write_file(tmp + "/gen.cc", gen)) {
			out.clear();
			rc = run(cd + " -shared -o module.so gen.cc " + quote(std::string(emu) + "/emu_runtime.cc") + " -lm", &out);
		} else if (rc == 0) {
			rc = -1;
			out = "troupe cuda emulator: cannot write " + tmp + "/gen.cc\n";
		}
		if (rc != 0) {
			p->log = nvrtc_log(out, p->name);
			std::string ignored;
			run("rm -rf " + quote(tmp), &ignored);
			return kCompilation;
		}
		if (rename(tmp.c_str(), dir.c_str()) != 0) { // built meanwhile by another process
			std::string ignored;
			run("rm -rf " + quote(tmp), &ignored);
		}
	}
	p->image = std::string(kImageMagic) + so;
	p->image.push_back('\0');
	return kSuccess;
}

API int nvrtcGetCUBINSize(Program* p, size_t* n) {
	if (!p) return kInvalidProgram;
	if (!n) return kInvalidInput;
	*n = p->cubin ? p->image.size() : 0;
	return kSuccess;
}

API int nvrtcGetCUBIN(Program* p, char* cubin) {
	if (!p) return kInvalidProgram;
	if (!cubin || !p->cubin || p->image.empty()) return kInvalidInput;
	memcpy(cubin, p->image.data(), p->image.size());
	return kSuccess;
}

API int nvrtcGetProgramLogSize(Program* p, size_t* n) {
	if (!p) return kInvalidProgram;
	if (!n) return kInvalidInput;
	*n = p->log.size() + 1;
	return kSuccess;
}

API int nvrtcGetProgramLog(Program* p, char* log) {
	if (!p) return kInvalidProgram;
	if (!log) return kInvalidInput;
	memcpy(log, p->log.c_str(), p->log.size() + 1);
	return kSuccess;
}
