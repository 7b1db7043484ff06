package model

import (
	"errors"
	"math/bits"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/testmodels"
)

// shapeFields are the Config fields that do not change which arithmetic
// runs, only its sizes or its bookkeeping: every backend reads them, so
// they map to no feature.
var shapeFields = []string{
	"Arch",                                                   // named in errors; the math is in the other fields
	"Dim", "Layers", "Heads", "KVHeads", "HeadDim", "FFNDim", // sizes
	"VocabSize", "ContextLen", "NormEps", "RopeDim", "RopeBase", // sizes and constants of the plain transformer
	"Pooling", // what the embedding API returns from the hidden states, not the forward pass
}

// featureFields maps every other Config field to the feature it turns on.
// set, when not nil, gives the field a value that turns it on where a plain
// non-zero value does not (a field whose default is not zero, or that needs
// another).
var featureFields = map[string]struct {
	f   Features
	set func(c *Config)
}{
	"RopeScale":   {RopeScaling, func(c *Config) { c.RopeScale = 0.25 }},
	"RopeNeox":    {RopeNeox, nil},
	"RopeFactors": {RopeFactors, nil},
	"QKVBias":     {QKVBias, nil},
	"QKNorm":      {QKNorm, nil},
	"TiedOutput":  {TiedOutput, nil},
	"Encoder":     {Encoder, nil},
	"EmbedScale":  {EmbedScale, nil},
	"QueryScale":  {QueryScale, nil},
	"PostNorms":   {PostNorms, nil},
	"GeGLU":       {GeGLU, nil},
	"SlidingWindow": {SlidingWindow, func(c *Config) {
		c.SlidingWindow, c.SWALayers, c.RopeBaseSWA, c.RopeScaleSWA = 16, make([]bool, c.Layers), c.RopeBase, c.RopeScale
	}},
	"SWALayers": {SlidingWindow, func(c *Config) {
		c.SWALayers, c.RopeBaseSWA, c.RopeScaleSWA = make([]bool, c.Layers), c.RopeBase, c.RopeScale
	}},
	"RopeBaseSWA":      {SWARope, func(c *Config) { c.SWALayers, c.RopeBaseSWA, c.RopeScaleSWA = make([]bool, c.Layers), 1e5, c.RopeScale }},
	"RopeScaleSWA":     {SWARope, func(c *Config) { c.SWALayers, c.RopeBaseSWA, c.RopeScaleSWA = make([]bool, c.Layers), c.RopeBase, 0.5 }},
	"AttnSoftcap":      {AttnSoftcap, nil},
	"FinalSoftcap":     {FinalSoftcap, nil},
	"NoRopeLayers":     {NoRopeLayers, nil},
	"FusedQKV":         {FusedQKV, nil},
	"FusedGateUp":      {FusedGateUp, nil},
	"RopeAttnFactor":   {RopeAttnFactor, func(c *Config) { c.RopeAttnFactor = 1.19 }},
	"RopeFactorsShort": {LongRoPE, nil},
	"RopeFactorsLong":  {LongRoPE, nil},
	"RopeOrigContext":  {LongRoPE, nil},
	"Experts":          {MoE, nil},
	"ExpertsUsed":      {MoE, nil},
	"ExpertFFNDim":     {MoE, nil},
	"SharedFFNDim":     {MoESharedExpert, nil},
	"NormTopK":         {MoENormTopK, nil},
	"OBias":            {OBias, nil},
	"AttnSinks":        {AttnSinks, nil},
	"SoftmaxTopK":      {MoESoftmaxTopK, nil},
	"ExpertOAI":        {MoEOAI, nil},
	"RopeYaRN":         {RopeYaRN, nil},
	"RopeSections":     {MRoPE, func(c *Config) { c.RopeSections = [4]int{2, 3, 3, 0} }},
	"RopeInterleaved":  {IMRoPE, func(c *Config) { c.RopeSections, c.RopeInterleaved = [4]int{2, 3, 3, 0}, true }},
	"Deepstack":        {Deepstack, func(c *Config) { c.Deepstack = 1 }},
}

// plainConfig is a llama with none of the features.
func plainConfig() Config {
	return Config{Arch: "llama", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, FFNDim: 96, VocabSize: 32,
		ContextLen: 128, NormEps: 1e-6, RopeDim: 16, RopeBase: 1e4, RopeScale: 1}
}

// setNonZero gives v a non-zero value of its type: true, 2, a slice of
// two elements, a new pointee.
func setNonZero(t *testing.T, name string, v reflect.Value) {
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int:
		v.SetInt(2)
	case reflect.Float32:
		v.SetFloat(2)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
	default:
		t.Fatalf("field %s: no non-zero value for kind %s; give it a set function", name, v.Kind())
	}
}

// TestConfigFieldsMapToFeatures: every Config field is either a shape
// (shapeFields) or maps to a feature, and turning the field on (alone, or
// with what it needs) turns its feature on, so a family that adds a field
// must say which feature it is, or the backends never hear of it.
func TestConfigFieldsMapToFeatures(t *testing.T) {
	plain := plainConfig()
	if f := plain.Features(); f != 0 {
		t.Fatalf("the plain llama config has features %s", f)
	}
	typ := reflect.TypeFor[Config]()
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		ff, mapped := featureFields[name]
		if slices.Contains(shapeFields, name) {
			if mapped {
				t.Errorf("field %s is listed as a shape and as feature %s", name, ff.f)
			}
			continue
		}
		if !mapped {
			t.Errorf("Config.%s maps to no feature: add a Feature and a featureRules entry (and declare it on the backends that compute it), or list it in shapeFields", name)
			continue
		}
		c := plainConfig()
		before := reflect.ValueOf(c).Field(i).Interface()
		if ff.set != nil {
			ff.set(&c)
		} else {
			setNonZero(t, name, reflect.ValueOf(&c).Elem().Field(i))
		}
		if reflect.DeepEqual(before, reflect.ValueOf(c).Field(i).Interface()) {
			t.Errorf("the test's setter of %s leaves it unchanged", name)
		}
		// A field turned on alone gives its feature alone; one set with
		// what it needs gives at least its feature.
		if got := c.Features(); got != ff.f && (ff.set == nil || !got.Has(ff.f)) {
			t.Errorf("Config.%s on: features %s, want %s", name, got, ff.f)
		}
	}
	for name := range featureFields {
		if _, ok := typ.FieldByName(name); !ok {
			t.Errorf("featureFields names %s, which Config does not have", name)
		}
	}
}

// TestFeatureNames: every feature bit has one rule, named once, in bit
// order, and the CPU forward pass implements every feature there is.
func TestFeatureNames(t *testing.T) {
	seen := map[string]bool{}
	var all Features
	for i, r := range featureRules {
		if r.f != 1<<i {
			t.Errorf("rule %d (%s) is bit %d", i, r.name, bits.TrailingZeros64(uint64(r.f)))
		}
		if seen[r.name] || r.name == "" {
			t.Errorf("rule %d: name %q empty or repeated", i, r.name)
		}
		seen[r.name] = true
		all |= r.f
	}
	if missing := all &^ CPUFeatures; missing != 0 {
		t.Errorf("the CPU forward pass does not declare %s", missing)
	}
	if got := (QKNorm | GeGLU | 1<<62).String(); got != "qk-norm, geglu, feature-62" {
		t.Errorf("String() = %q", got)
	}
}

// TestLoadRefusesUndeclaredFeature adds a feature as a new family would (a
// rule that turns it on for this llama file) and declares it on no
// backend: the CPU's load refuses the model, naming the feature.
func TestLoadRefusesUndeclaredFeature(t *testing.T) {
	path := testmodels.Path(t, "stories260K.gguf")
	m, _, err := LoadGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	next := Features(1) << len(featureRules)
	saved := featureRules
	featureRules = append(slices.Clip(featureRules), struct {
		f    Features
		name string
		has  func(c *Config) bool
	}{next, "new-family-flag", func(c *Config) bool { return true }})
	defer func() { featureRules = saved }()
	m, _, err = LoadGGUF(path)
	if err == nil {
		m.Close()
		t.Fatal("a model with a feature no backend declares was loaded")
	}
	if !errors.Is(err, ErrUnsupportedFeature) || !strings.Contains(err.Error(), "new-family-flag") || !strings.Contains(err.Error(), "CPU") {
		t.Fatalf("error %q does not name the feature and the backend", err)
	}
}
