# troupe — see README.md.
GO        ?= go
MODELS    ?= $(abspath ../shared/models)
MODEL     ?= $(MODELS)/stories260K.gguf
FUZZTIME  ?= 5s
BIN       := bin/troupe

export TROUPE_TEST_MODELS ?= $(MODELS)

.PHONY: all build run test test-go test-race vet cross test-arm64 dist fuzz fuzz-short soak soak-short bench bench-compare bench-mmap testdata clean apicheck apicheck-baseline

all: build

# The version and commit `troupe --version` and GET /version report.
VERSION   ?= $(shell git describe --tags --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)
LDFLAGS   := -X main.version=$(VERSION) -X main.commit=$(COMMIT)

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/troupe

# The main job: serve the default model's OpenAI-compatible API on
# HOST:PORT, 127.0.0.1:8080 unless told (stories260K from ../shared/models,
# offline; TEMPLATE, when set, is a built-in chat template's name or a Jinja
# file, else the model's own template is used, or chatml when it has none).
# Ctrl-C drains and exits.
#   make run PORT=9000 HOST=0.0.0.0 MODEL=path/to/model.gguf TEMPLATE=llama3
TEMPLATE  ?=
HOST      ?= 127.0.0.1
PORT      ?= 8080
run: build
	@test -e "$(MODEL)" || { echo "make run: no model at $(MODEL): set MODEL=FILE (or MODELS=DIR holding stories260K.gguf)"; exit 2; }
	./$(BIN) serve -m "$(MODEL)" --host "$(HOST)" --port "$(PORT)" $(if $(TEMPLATE),--chat-template "$(TEMPLATE)")

# Everything CI runs: test data, vet, the suite, the race detector over the
# concurrent packages, each fuzz target briefly, and a two-minute soak.
test: testdata vet apicheck cross test-go test-arm64 test-race fuzz-short soak-short

testdata:
	./scripts/testdata-npm.sh
	./scripts/testdata-vocab.sh
	./scripts/testdata-etcd.sh
	./scripts/testdata-clang.sh
	./scripts/testdata-chromium.sh
	./scripts/testdata-schemas.sh
	./scripts/testdata-qemu.sh

vet:
	$(GO) vet ./...

# The other platforms troupe ships build: arm64 for linux and darwin (the
# NEON kernels; vet checks their frames against the Go declarations), and
# riscv64 for the portable Go kernels every other GOARCH runs.
cross:
	GOOS=linux GOARCH=arm64 $(GO) build ./...
	GOOS=linux GOARCH=arm64 $(GO) vet ./compute
	GOOS=darwin GOARCH=arm64 $(GO) build ./...
	GOOS=linux GOARCH=riscv64 $(GO) build ./...
	@# No fused multiply-add in our Go code on arm64 (Go may fuse a*b+c there,
	@# amd64's default build never does): the compiler lists each site it fuses.
	@fused=$$(GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -gcflags='github.com/troupe-llm/troupe/...=-d=fmahash=vy' ./... 2>&1 | grep '^fmahash triggered' || true); \
		if [ -n "$$fused" ]; then echo "$$fused"; echo "make cross: the arm64 compiler fuses these multiply-adds: round the product with an explicit conversion (README, ARM64)"; exit 1; fi

# The arm64 kernels under qemu-aarch64 (Debian's qemu-user), bit for bit
# against the Go reference: the test binaries are cross-compiled and run in
# their package's directory. compute's kernel tests run once per ISA level
# (each CPU model of ARM64_CPUS, model:level; TestWantISA checks that the
# kernels run at that level); model's llama.cpp parity (the tiny synthetic
# models) and actors' smoke run
# once, at the last (highest) level, with the vision encoder's tests of the
# path arm64 takes (the MatMuler's kernels, not GemmPacked's AVX2), as emulation is 10-50x slower than
# native (TestPreemption alone took 12 minutes under qemu on a loaded
# 2-CPU machine). ARM64_RUN_<pkg> narrows a package's tests.
ARM64_CPUS       ?= cortex-a72:neon neoverse-n1:dotprod max:i8mm
ARM64_PKGS       ?= compute model model/vision actors
ARM64_RUN_compute ?= Kernels|InPlace|VecDot|MatMul|Quantize|Attention|Attn|F16s|ISA|GeneratedAssembly
ARM64_RUN_model   ?= ^(TestLogitParityGGUF|TestSynthParity)$$/tiny
ARM64_RUN_actors  ?= ^TestSmoke$$
ARM64_RUN_vision  ?= ^(TestLinearWorkers|TestAttentionHeadDims|TestAttentionWorkersWindows)$$
QEMU_AARCH64     ?= qemu-aarch64
# The aarch64 dynamic loader for the binaries that have one (actors' test
# links the CUDA loader's dlopen): Debian's libc6-arm64-cross.
ARM64_SYSROOT    ?= /usr/aarch64-linux-gnu
test-arm64:
	@command -v $(QEMU_AARCH64) >/dev/null || { echo "make test-arm64: $(QEMU_AARCH64) not found (Debian: apt-get install qemu-user)"; exit 2; }
	@set -e; dir=$$(mktemp -d); trap 'rm -rf "$$dir"' EXIT; \
	for p in $(ARM64_PKGS); do CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) test -c -o "$$dir/$$(echo $$p | tr / _).test" ./$$p; done; \
	for c in $(ARM64_CPUS); do cpu=$${c%%:*}; level=$${c##*:}; \
		for p in $(ARM64_PKGS); do \
			case $$p in compute) run='$(ARM64_RUN_compute)';; model) run='$(ARM64_RUN_model)';; model/vision) run='$(ARM64_RUN_vision)';; actors) run='$(ARM64_RUN_actors)';; *) run=.;; esac; \
			[ "$$p" = compute ] || [ "$$c" = "$(lastword $(ARM64_CPUS))" ] || continue; \
			echo "qemu-aarch64 -cpu $$cpu ($$level): $$p -run '$$run'"; start=$$(date +%s); \
			rc=0; (cd $$p && TROUPE_WANT_ISA=$$level GOTRACEBACK=all $(QEMU_AARCH64) -L $(ARM64_SYSROOT) -cpu $$cpu "$$dir/$$(echo $$p | tr / _).test" -test.count=1 -test.timeout 30m -test.run "$$run|TestWantISA") > "$$dir/out" 2>&1 || rc=$$?; \
			cat "$$dir/out"; echo "  $$p on $$cpu: $$(( $$(date +%s) - start )) s"; \
			if [ $$rc -ne 0 ]; then echo "make test-arm64: $$p on $$cpu ($$level) failed (exit $$rc; $$($(QEMU_AARCH64) --version | head -1)); how it began:"; \
				grep -n -m1 -A12 -E '^(panic|fatal error|unexpected fault|SIG[A-Z]+|--- FAIL)' "$$dir/out" || tail -20 "$$dir/out"; exit $$rc; fi; \
		done; \
	done

# Release binaries, CGO off: linux/amd64, linux/arm64, darwin/arm64 into
# dist/troupe-VERSION-OS-ARCH.
DIST_PLATFORMS ?= linux/amd64 linux/arm64 darwin/arm64
dist:
	@mkdir -p dist
	@set -e; for p in $(DIST_PLATFORMS); do os=$${p%%/*}; arch=$${p##*/}; \
		out=dist/troupe-$(VERSION)-$$os-$$arch; echo "$$out"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o "$$out" ./cmd/troupe; \
	done

test-go:
	$(GO) test -count=1 -timeout 15m ./...

# The race detector over the actors, the KV cache and the HTTP front. Several
# cluster members in one process race inside protoactor-go (ARCHITECTURE.md):
# those tests skip under -race, the rest of actors/cluster runs.
test-race:
	$(GO) test -race -count=1 -timeout 20m ./actors/... ./kv/... ./server/...

# Each fuzz target for FUZZTIME (make fuzz FUZZTIME=10m for a long run).
FUZZ_TARGETS := \
	./model/gguf:FuzzParse \
	./model/safetensors:FuzzOpen \
	./model/tokenizer:FuzzEncodeSPM \
	./model/tokenizer:FuzzEncodeBPE \
	./model/tokenizer:FuzzEncodeWPM \
	./grammar:FuzzCompile \
	./grammar:FuzzJSONSchema \
	./grammar:FuzzRegex \
	./server:FuzzRequests \
	./server:FuzzSSE \
	./server:FuzzOllamaRequests \
	./server:FuzzStructured \
	./server:FuzzHarmonyChat \
	./actors:FuzzStopStrings \
	./actors/cluster:FuzzEnvelope \
	./server/chat:FuzzRender \
	./server/toolcall:FuzzParse \
	./server/toolcall:FuzzGrammar

# CI's bound is a count of executions, not a duration: with a duration, Go
# 1.26's fuzz coordinator can fail a target with a bare "context deadline
# exceeded" on a loaded machine (golang/go#75804, fixed in Go 1.27).
fuzz-short:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=3000x

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "fuzz $$pkg $$fn ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

# The real server under a mixed load for SOAK (make soak SOAK=1h), then
# checks: no request lost or hung, outputs as on a quiet server, every KV
# block returned, goroutines and heap back to their level. Prints figures.
# Issue 28's attacks run beside the load (-args -soak-attacks=false: without).
SOAK ?= 10m
soak:
	$(GO) test -count=1 -timeout 0 -run '^TestSoak$$' -v ./cmd/troupe -args -soak=$(SOAK)

soak-short:
	@$(MAKE) --no-print-directory soak SOAK=2m

bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x ./model/...

# troupe against a llama.cpp build, side by side on synthetic TinyLlama-1.1B
# files made once into BENCH_MODELS: by troupe synth where it writes the
# type, else by the llama.cpp build's llama-quantize from the F16 file.
#   make bench-compare LLAMA_CPP=/path/to/llama.cpp/build/bin [BENCH_TYPES="Q4_0 F16"]
BENCH_MODELS ?= $(HOME)/.cache/troupe-bench
BENCH_TYPES  ?= F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K_M Q4_K_M Q5_K_M Q6_K IQ4_NL IQ4_XS MXFP4
SYNTH_TYPES  := F32 F16 BF16 Q8_0 Q4_0 Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K MXFP4
bench-compare: build
	@test -n "$(LLAMA_CPP)" || { echo "make bench-compare: set LLAMA_CPP to a llama.cpp build's bin directory"; exit 2; }
	@mkdir -p "$(BENCH_MODELS)"
	@set -e; synth() { local f="$(BENCH_MODELS)/tinyllama-1.1b-$$1.gguf"; test -f "$$f" && return; \
		if echo " $(SYNTH_TYPES) " | grep -q " $$1 "; then \
			./$(BIN) synth --shape tinyllama-1.1b --type $$1 --vocab "$(MODELS)/vocab/ggml-vocab-llama-spm.gguf" -o "$$f.tmp"; \
		else synth F16; "$(LLAMA_CPP)/llama-quantize" "$(BENCH_MODELS)/tinyllama-1.1b-F16.gguf" "$$f.tmp" $$1 2 >/dev/null; fi; \
		mv "$$f.tmp" "$$f"; }; \
	for t in $(BENCH_TYPES); do synth $$t; done
	LLAMA_CPP="$(LLAMA_CPP)" TROUPE=./$(BIN) bench/compare.sh $(foreach t,$(BENCH_TYPES),"$(BENCH_MODELS)/tinyllama-1.1b-$(t).gguf")

# A mixture of experts run under cgroup memory limits below its size, so
# that its experts come from the mapped file (bench/mmap.sh: needs root and
# a cgroup v1 memory controller, else it says so and skips); with LLAMA_CPP
# set, llama-bench runs under the same limits. The model is made once.
#   make bench-mmap [LLAMA_CPP=/path/to/llama.cpp/build/bin] [MMAP_LIMITS="3G 1.5G 1G"]
MMAP_MODEL  ?= $(BENCH_MODELS)/qwen3-30b-a3b-l6-Q4_K_M.gguf
MMAP_LIMITS ?= 3G 1.5G 1G
bench-mmap: build
	@test -f "$(MMAP_MODEL)" || { mkdir -p "$(dir $(MMAP_MODEL))" && ./$(BIN) synth --shape qwen3-30b-a3b-l6 --type Q4_K_M \
		--vocab "$(MODELS)/vocab/ggml-vocab-llama-spm.gguf" -o "$(MMAP_MODEL).tmp" && mv "$(MMAP_MODEL).tmp" "$(MMAP_MODEL)"; }
	LLAMA_CPP="$(LLAMA_CPP)" TROUPE=./$(BIN) bench/mmap.sh "$(MMAP_MODEL)" $(MMAP_LIMITS)

clean:
	rm -rf bin dist

# Incompatible changes to the stable public packages (API.md: troupe,
# langchain, troupetest, actors, actors/backend, messages) against the
# baseline in api/ (golang.org/x/exp/cmd/apidiff, offline once fetched).
# A deliberate break records a new baseline: make apicheck-baseline.
apicheck:
	./scripts/apicheck.sh

apicheck-baseline:
	./scripts/apicheck.sh -w
