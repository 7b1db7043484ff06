# troupe — see README.md.
GO        ?= go
MODELS    ?= $(abspath ../shared/models)
MODEL     ?= $(MODELS)/stories260K.gguf
PROMPT    ?= Once upon a time
FUZZTIME  ?= 5s
BIN       := bin/troupe

export TROUPE_TEST_MODELS ?= $(MODELS)

.PHONY: all build run test test-go vet fuzz fuzz-short bench testdata clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/troupe

# The main job. Until the HTTP server lands, it generates from the default model.
run: build
	./$(BIN) run -m "$(MODEL)" -p "$(PROMPT)" -n 64 --temp 0

# Everything CI runs: test data, vet, the suite, and each fuzz target briefly.
test: testdata vet test-go fuzz-short

testdata:
	./scripts/testdata-npm.sh

vet:
	$(GO) vet ./...

test-go:
	$(GO) test -count=1 -timeout 15m ./...

# Each fuzz target for FUZZTIME (make fuzz FUZZTIME=10m for a long run).
FUZZ_TARGETS := \
	./model/gguf:FuzzParse \
	./model/safetensors:FuzzOpen \
	./model/tokenizer:FuzzEncodeSPM \
	./model/tokenizer:FuzzEncodeBPE

fuzz-short:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=3s

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "fuzz $$pkg $$fn ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x ./model/...

clean:
	rm -rf bin
