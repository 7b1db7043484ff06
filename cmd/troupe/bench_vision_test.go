package main

import (
	"encoding/json"
	"testing"
)

// TestBenchVision: troupe bench vision on stories260K with a synthetic
// gemma3-tiny projector reports each repetition's prepare, encode and
// time-to-first-token (all positive) and the image's 16 rows, and with
// --ttft=false the encode alone; missing files and flags are usage errors.
func TestBenchVision(t *testing.T) {
	stories, proj, pic := imageFixture(t)
	stdout := troupeOK(t, "bench", "vision", "-m", stories, "--mmproj", proj, "--image", pic, "-r", "2", "-o", "json")
	var out struct {
		Rows int `json:"image_rows"`
		Reps []struct {
			PrepareMS float64 `json:"prepare_ms"`
			EncodeMS  float64 `json:"encode_ms"`
			TTFTMS    float64 `json:"ttft_ms"`
		} `json:"reps"`
		MeanTTFTMS float64 `json:"mean_ttft_ms"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if out.Rows != 16 || len(out.Reps) != 2 || out.MeanTTFTMS <= 0 {
		t.Fatalf("output %s", stdout)
	}
	for i, r := range out.Reps {
		if r.PrepareMS <= 0 || r.EncodeMS <= 0 || r.TTFTMS <= 0 {
			t.Errorf("rep %d: %+v", i, r)
		}
	}
	// --ttft=false: the encode alone, no first token.
	stdout = troupeOK(t, "bench", "vision", "-m", stories, "--mmproj", proj, "--image", pic, "-r", "1", "--ttft=false", "-o", "json")
	out.Reps, out.MeanTTFTMS = nil, 0
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if len(out.Reps) != 1 || out.Reps[0].EncodeMS <= 0 || out.Reps[0].TTFTMS != 0 || out.MeanTTFTMS != 0 {
		t.Errorf("--ttft=false: output %s", stdout)
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"bench", "vision", "-m", stories, "--image", pic}, "--mmproj FILE and --image FILE are required"},
		{[]string{"bench", "vision", "-m", stories, "--mmproj", proj, "--image", pic, "-r", "0"}, "must be at least 1"},
	} {
		wantUsage(t, tc.msg, tc.args...)
	}
}
