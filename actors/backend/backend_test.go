package backend_test

import (
	"strings"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
	"github.com/troupe-llm/troupe/actors/internal/actortest"
	"github.com/troupe-llm/troupe/gpu/cuda"
	"github.com/troupe-llm/troupe/internal/cudaemu"
	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model"
)

// Where there is no GPU, cuda.Available reports the CUDA emulator's device
// (internal/cudaemu), unless TROUPE_CUDA_EMU=0.
func TestMain(m *testing.M) { cudaemu.Main(m) }

// TestResolve: the device kinds, and cuda without a GPU.
func TestResolve(t *testing.T) {
	gpu := cuda.Available() == nil
	for _, tc := range []struct {
		kind, want string
		err        bool
	}{
		{"", backend.DeviceCPU, false},
		{"cpu", backend.DeviceCPU, false},
		{"auto", backend.DeviceAuto, false}, // decided by Selector.New
		{"cuda", map[bool]string{false: "", true: backend.DeviceCUDA}[gpu], !gpu},
		{"tpu", "", true},
	} {
		got, err := backend.Resolve(tc.kind)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("Resolve(%q) = %q, %v; want %q, error %v", tc.kind, got, err, tc.want, tc.err)
		}
	}
}

// TestFor: the runtime starts on the backends For makes, and not on a kind
// Resolve rejects (or cuda without a GPU).
func TestFor(t *testing.T) {
	m, err := model.Open(testmodels.Path(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	gpu := cuda.Available() == nil
	for _, tc := range []struct {
		kind string
		ok   bool
	}{
		{backend.DeviceCPU, true},
		{"tpu", false},
		{backend.DeviceCUDA, gpu},
	} {
		if tc.kind == backend.DeviceCUDA && cudaemu.Active() {
			continue // actors' TestCUDA runs the runtime on the emulator; a load here takes long
		}
		sys := actortest.QuietSystem()
		rt, err := actors.Start(sys, m, actors.Config{Devices: 2, NumBlocks: 8, NewBackend: backend.For(m, tc.kind)})
		if (err == nil) != tc.ok {
			t.Errorf("Start on %q: error %v, want success %v", tc.kind, err, tc.ok)
		}
		if err == nil {
			if err := rt.Stop(5 * time.Second); err != nil {
				t.Errorf("Stop on %q: %v", tc.kind, err)
			}
		}
		sys.Shutdown()
	}
}

// TestSelectorQ8_0: auto with a q8_0 KV cache takes the CPU for every
// device (CUDA stores f16 only) and says why; cpu takes it with no reason.
func TestSelectorQ8_0(t *testing.T) {
	m, err := model.Open(testmodels.Path(t, "synthetic/synth-llama-tiny256-Q8_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c := actors.BackendConfig{NumBlocks: 4, BlockSize: 16, Workers: 1, KVCacheType: kv.Q8_0}
	for _, tc := range []struct {
		kind string
		why  bool
	}{{backend.DeviceAuto, true}, {backend.DeviceCPU, false}} {
		s := backend.NewSelector(m, tc.kind)
		for device := range 2 {
			be, err := s.New(device, c)
			if err != nil {
				t.Fatalf("%s: device %d: %v", tc.kind, device, err)
			}
			if k := be.(interface{ DeviceKind() string }).DeviceKind(); k != backend.DeviceCPU {
				t.Errorf("%s: device %d on %s, want cpu", tc.kind, device, k)
			}
		}
		if s.Device() != backend.DeviceCPU {
			t.Errorf("%s: Device() = %q, want cpu", tc.kind, s.Device())
		}
		if why := s.Fallback(); (why != nil) != tc.why || why != nil && !strings.Contains(why.Error(), "CPU only") {
			t.Errorf("%s: Fallback() = %v, want a reason %v", tc.kind, why, tc.why)
		}
	}
}
