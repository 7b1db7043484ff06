package server

import (
	"encoding/json"
	"testing"
)

// TestCheckToolChoice: "none" and "auto" pass (the template renders the
// tools), what needs a forced call is a 400 about tool_choice.
func TestCheckToolChoice(t *testing.T) {
	for _, tc := range []struct {
		v  string
		ok bool
	}{
		{``, true}, {`null`, true}, {`"none"`, true}, {`"auto"`, true},
		{`"required"`, false}, {`"always"`, false}, {`{"type": "function", "function": {"name": "f"}}`, false}, {`3`, false},
	} {
		e := checkToolChoice(json.RawMessage(tc.v))
		if (e == nil) != tc.ok || e != nil && (e.Param == nil || *e.Param != "tool_choice" || e.Status != 400) {
			t.Errorf("checkToolChoice(%s) = %+v, want ok %v", tc.v, e, tc.ok)
		}
	}
}
