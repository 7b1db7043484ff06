package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/model"
	"github.com/troupe-llm/troupe/model/lora"
)

// maxLoRAScale bounds --lora's scales, as the runtime bounds a request's.
const maxLoRAScale = actors.MaxLoRAScale

// loraSpec is one --lora: an adapter file and its scale.
type loraSpec struct {
	Path  string
	Scale float32
}

// loraVar defines --lora (llama-server's, also as --lora-scaled: see
// peerflags.go) on fs, appending to list.
func loraVar(fs *flag.FlagSet, list *[]loraSpec) {
	fs.Var(loraFlag{list}, "lora", "a LoRA adapter (llama.cpp's GGUF) applied to every request, `FILE[:SCALE]` (scale default 1, at most 10 either way); repeatable or comma-separated; runs on the CPU device")
}

// loraFlag is --lora: a comma list of FILE[:SCALE], added to the list.
type loraFlag struct{ list *[]loraSpec }

func (f loraFlag) String() string {
	if f.list == nil {
		return ""
	}
	var parts []string
	for _, s := range *f.list {
		parts = append(parts, fmt.Sprintf("%s:%g", s.Path, s.Scale))
	}
	return strings.Join(parts, ",")
}

func (f loraFlag) Set(v string) error {
	for _, item := range splitList(v) {
		spec := loraSpec{Path: item, Scale: 1}
		if i := strings.LastIndexByte(item, ':'); i > 0 {
			if s, err := strconv.ParseFloat(item[i+1:], 32); err == nil {
				if math.IsNaN(s) || math.Abs(s) > maxLoRAScale {
					return fmt.Errorf("%s: scale %v: want a number in [-%d, %d]", item, s, maxLoRAScale, maxLoRAScale)
				}
				spec = loraSpec{Path: item[:i], Scale: float32(s)}
			}
		}
		*f.list = append(*f.list, spec)
	}
	if len(*f.list) == 0 {
		return errors.New("want FILE[:SCALE]")
	}
	return nil
}

// loraDevice is the --device that serves adapters: the CPU (the CUDA
// backend does not apply them), so --device cuda with --lora is a usage
// error and auto becomes cpu.
func loraDevice(device string, specs []loraSpec) (string, error) {
	if len(specs) == 0 {
		return device, nil
	}
	if device == backend.DeviceCUDA {
		return "", usageError{"--lora runs on the CPU device only: drop --device cuda"}
	}
	return backend.DeviceCPU, nil
}

// unapplied is specs at scale 0 when off is set (--lora-init-without-apply).
func unapplied(specs []loraSpec, off bool) []loraSpec {
	if !off {
		return specs
	}
	out := slices.Clone(specs)
	for i := range out {
		out[i].Scale = 0
	}
	return out
}

// openAdapters opens the adapters of specs and gives them to m
// (SetAdapters: every request); the returned func closes them. An adapter
// of a rank above maxRank (vLLM's --max-lora-rank; 0: no bound) is refused.
func openAdapters(m *model.Model, specs []loraSpec, maxRank int) (func(), error) {
	var set []lora.Scaled
	closeAll := func() {
		for _, s := range set {
			s.Adapter.Close()
		}
	}
	for _, spec := range specs {
		a, err := lora.Open(spec.Path)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("--lora: %w", err)
		}
		set = append(set, lora.Scaled{Adapter: a, Scale: spec.Scale})
		if r := adapterRank(a); maxRank > 0 && r > maxRank {
			closeAll()
			return nil, fmt.Errorf("--lora: %s: rank %d is above --max-lora-rank %d", spec.Path, r, maxRank)
		}
	}
	if err := m.SetAdapters(set); err != nil {
		closeAll()
		return nil, fmt.Errorf("--lora: %w", err)
	}
	return closeAll, nil
}
