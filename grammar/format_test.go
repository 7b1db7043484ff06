package grammar

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestFormats samples 200 strings of each supported format from random
// tokens of the Llama 2 vocabulary and checks each against the validator's
// format assertion.
func TestFormats(t *testing.T) {
	v := testVocab(t)
	mask := make([]uint64, v.MaskWords())
	for _, f := range []string{"date", "time", "date-time", "uuid", "email", "hostname", "ipv4", "uri", "byte"} {
		schema := `{"type": "string", "format": "` + f + `"}`
		g, err := FromJSONSchema([]byte(schema))
		if err != nil {
			t.Fatal(err)
		}
		val := validator(t, schema)
		r := rand.New(rand.NewPCG(5, 5))
		finished := 0
		for range 200 {
			out, _, ok := generate(t, g, v, r, 400, mask)
			if !ok {
				continue
			}
			finished++
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
			if err == nil {
				err = val.Validate(inst)
			}
			if err != nil {
				t.Fatalf("%s: %q: %v", f, out, err)
			}
			// formatLengths bound every string of the format.
			b := formatLengths[f]
			if n := len(strings.TrimSpace(out)) - 2; n < b[0] || b[1] >= 0 && n > b[1] {
				t.Errorf("%s: %q: %d characters, outside formatLengths %v", f, out, n, b)
			}
		}
		if finished < 100 {
			t.Errorf("%s: %d of 200 samples finished", f, finished)
		}
	}
}
