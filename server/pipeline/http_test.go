package pipeline

import (
	"slices"
	"testing"
)

// TestDecodeKnown: the fields not known come back sorted; with skipNull a
// null one is absent; the known ones are decoded.
func TestDecodeKnown(t *testing.T) {
	body := []byte(`{"b": 1, "model": "m", "a": null, "c": "x"}`)
	for _, skipNull := range []bool{false, true} {
		var v struct{ Model string }
		got, err := DecodeKnown(body, &v, []string{"model"}, skipNull)
		want := []string{"a", "b", "c"}
		if skipNull {
			want = []string{"b", "c"}
		}
		if err != nil || !slices.Equal(got, want) || v.Model != "m" {
			t.Errorf("skipNull %v: %q, %q, %v; want %q", skipNull, got, v.Model, err, want)
		}
		if e := Unsupported(got); e == nil || e.Param != want[0] || e.Message != e.Param+": this field is not supported" {
			t.Errorf("skipNull %v: %+v", skipNull, e)
		}
	}
	if e := Unsupported(nil); e != nil {
		t.Errorf("no unknown field: %v", e)
	}
	if _, err := DecodeKnown([]byte(`[1]`), &struct{}{}, nil, false); err == nil {
		t.Error("a list decoded as an object")
	}
}
