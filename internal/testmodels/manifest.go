package testmodels

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Reference is a model with llama.cpp reference outputs in
// ReferenceDir/<Name()>/, and how close troupe's teacher-forced logits must
// come to them.
type Reference struct {
	// Rel is the model's path relative to Dir: a GGUF file, or a
	// safetensors directory.
	Rel string
	// Bound is the allowed max |Δlogit| over a row as a fraction of the
	// reference row's std, on the CPU path: a little above what was
	// measured (written beside each entry), so that a change in arithmetic
	// shows.
	Bound float64
}

// Name is the model's reference directory name: Rel's base name without
// ".gguf".
func (r Reference) Name() string { return strings.TrimSuffix(filepath.Base(r.Rel), ".gguf") }

// GGUF reports whether the model is a GGUF file.
func (r Reference) GGUF() bool { return strings.HasSuffix(r.Rel, ".gguf") }

// Bounds for files whose arithmetic is ggml's bit for bit (the same
// integers, the same float operations in the same order) but for the
// attention's order of sums and a few last bits: such files measure under
// 0.01%.
const exact = 1e-4

// manifest is every model with reference outputs. The measured figures are
// the worst case's max |Δ|/std of `go test ./model -run LogitParity -v` at
// e207f06 (the IQ4 files with this branch's kernels), on an AVX-512 VNNI
// machine; the AVX2 and generic paths give the same bits.
var manifest = []Reference{
	{"stories260K.gguf", exact},                               // measured 0.0000%
	{"TinyStories-656K-Q8_0.gguf", exact},                     // 0.0000%
	{"tinystories-656k-safetensors", exact},                   // 0.0000%
	{"synthetic/synth-llama-tiny256-BF16.gguf", 0.025},        //
	{"synthetic/synth-llama-tiny256-F16.gguf", 0.025},         //
	{"synthetic/synth-llama-tiny256-Q2_K.gguf", 0.08},         //
	{"synthetic/synth-llama-tiny256-Q3_K_S.gguf", 0.08},       //
	{"synthetic/synth-llama-tiny256-Q4_0.gguf", 0.025},        //
	{"synthetic/synth-llama-tiny256-Q4_1.gguf", 0.025},        //
	{"synthetic/synth-llama-tiny256-Q4_K_M.gguf", 0.08},       //
	{"synthetic/synth-llama-tiny256-Q4_K_S.gguf", 0.08},       //
	{"synthetic/synth-llama-tiny256-Q5_0.gguf", 0.025},        //
	{"synthetic/synth-llama-tiny256-Q5_1.gguf", 0.025},        //
	{"synthetic/synth-llama-tiny256-Q5_K_S.gguf", 0.025},      //
	{"synthetic/synth-llama-tiny256-Q6_K.gguf", 0.025},        //
	{"synthetic/synth-llama-tiny256-Q8_0.gguf", 0.025},        //
	{"synthetic/synth-qwen2-tiny256-Q8_0.gguf", 0.025},        //
	{"synthetic/synth-qwen3-tiny256-Q8_0.gguf", 0.025},        //
	{"synthetic-more/synth-llama-hd128-BF16.gguf", 0.025},     //
	{"synthetic-more/synth-llama-hd128-Q4_K_M.gguf", 0.08},    //
	{"synthetic-more/synth-llama-hd64-F16.gguf", 0.025},       //
	{"synthetic-more/synth-llama-hd64-IQ4_XS.gguf", 0.025},    //
	{"synthetic-more/synth-llama-hd64-Q4_0.gguf", 0.025},      //
	{"synthetic-more/synth-llama-hd64-Q5_K_M.gguf", 0.025},    //
	{"synthetic-more/synth-llama-hd64-Q8_0.gguf", 0.025},      //
	{"synthetic-more/synth-llama-tiny256-IQ4_NL.gguf", 0.025}, //
	{"synthetic-more/synth-llama-tiny256-IQ4_XS.gguf", 0.025}, //
	{"synthetic-more/synth-qwen2-hd64-Q6_K.gguf", 0.025},      //
}

// manifestFolders are the folders of Dir whose every GGUF file must be in
// the manifest.
var manifestFolders = []string{"synthetic", "synthetic-more"}

// References returns every model with reference outputs. It ends the test
// as Dir does when the models directory is missing; a listed model or
// reference directory that is missing, or a GGUF file in the synthetic
// folders that is not listed, is a failure wherever the test runs: the set
// must not shrink (or grow) quietly.
func References(t testing.TB) []Reference {
	t.Helper()
	dir := Dir(t)
	if err := checkManifest(dir, manifest); err != "" {
		t.Fatal(err)
	}
	return slices.Clone(manifest)
}

// ReferenceGGUFs returns the References that are GGUF files.
func ReferenceGGUFs(t testing.TB) []Reference {
	t.Helper()
	var gg []Reference
	for _, r := range References(t) {
		if r.GGUF() {
			gg = append(gg, r)
		}
	}
	return gg
}

// Lookup returns the manifest's entry for the reference name (see
// Reference.Name).
func LookupReference(t testing.TB, name string) Reference {
	t.Helper()
	for _, r := range manifest {
		if r.Name() == name {
			return r
		}
	}
	t.Fatalf("%s is not in the reference manifest", name)
	return Reference{}
}

// checkManifest returns what is wrong with list against the models
// directory dir (and its reference directory beside it), or "".
func checkManifest(dir string, list []Reference) string {
	var problems []string
	listed := map[string]bool{}
	for _, r := range list {
		listed[filepath.ToSlash(r.Rel)] = true
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(r.Rel))); err != nil {
			problems = append(problems, "missing model: "+err.Error())
		}
		if _, err := os.Stat(filepath.Join(dir, "..", "reference", r.Name(), "case0.json")); err != nil {
			problems = append(problems, "missing reference: "+err.Error())
		}
	}
	for _, folder := range manifestFolders {
		files, _ := filepath.Glob(filepath.Join(dir, folder, "*.gguf"))
		for _, f := range files {
			if rel := folder + "/" + filepath.Base(f); !listed[rel] {
				problems = append(problems, "not in the reference manifest: "+rel)
			}
		}
	}
	if len(problems) > 0 {
		return "reference models (" + dir + "):\n\t" + strings.Join(problems, "\n\t")
	}
	return ""
}
