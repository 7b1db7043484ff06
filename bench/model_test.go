package bench

import (
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
	"github.com/troupe-llm/troupe/model"
)

// TestModel runs both llama-bench tests on a small model and checks the
// report's shape: one result per test, one rate per repetition, all finite
// and positive. Timings themselves belong to benchmarks.
func TestModel(t *testing.T) {
	m, err := model.Open(testmodels.Path(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	res, err := Model(m, ModelOptions{Prompt: 32, Gen: 8, Reps: 3, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Test != "pp32" || res[1].Test != "tg8" {
		t.Fatalf("tests %+v, want pp32 and tg8", res)
	}
	for _, r := range res {
		if len(r.TPS) != 3 {
			t.Errorf("%s: %d rates, want 3", r.Test, len(r.TPS))
		}
		for _, v := range r.TPS {
			if !(v > 0) {
				t.Errorf("%s: rate %v", r.Test, v)
			}
		}
		if !(r.Mean() > 0) || r.Std() < 0 {
			t.Errorf("%s: mean %v std %v", r.Test, r.Mean(), r.Std())
		}
	}
	only, err := Model(m, ModelOptions{Gen: 4, Reps: 1, Workers: 1})
	if err != nil || len(only) != 1 || only[0].Test != "tg4" || only[0].Std() != 0 {
		t.Fatalf("tg only: %+v, %v", only, err)
	}
	info := DescribeModel(m)
	if !strings.HasPrefix(info.Name, "llama 292K F32") || info.Params != 292_096 || info.Bytes != 4*info.Params {
		t.Errorf("DescribeModel = %+v", info)
	}
}

func TestModelOptionsValidate(t *testing.T) {
	for _, o := range []ModelOptions{
		{Reps: 1, Workers: 1},
		{Prompt: -1, Gen: 1, Reps: 1, Workers: 1},
		{Prompt: 1, Reps: 0, Workers: 1},
		{Prompt: 1, Reps: 1, Workers: 0},
	} {
		if o.Validate() == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

func TestSizeClass(t *testing.T) {
	for p, want := range map[int64]string{1_100_048_384: "1.1B", 134_515_008: "135M", 292_352: "292K", 1_235_814_400: "1.2B"} {
		if got := sizeClass(p); got != want {
			t.Errorf("sizeClass(%d) = %q, want %q", p, got, want)
		}
	}
}
