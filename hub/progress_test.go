package hub

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/hub/hubtest"
)

// call is one Options.OnProgress call.
type call struct {
	file             string
	completed, total int64
}

// TestOnProgress: the callback sees the file's size, counts that only grow
// in steps of at least ProgressStep, several of them, and the whole size
// last; a resumed download starts from the kept bytes; a cached file gives
// no calls.
func TestOnProgress(t *testing.T) {
	gguf := ggufBytes(t)
	size := int64(len(gguf))
	s := newHub(t, gguf)
	o := options(t, s)
	var calls []call
	o.OnProgress = func(file string, completed, total int64) { calls = append(calls, call{file, completed, total}) }
	ref := mustParse(t, "hf://"+repoID+"/stories260K.gguf")

	const cut = 300_000
	s.SetFault(gguf, hubtest.Fault{CutAfter: cut})
	if _, err := Download(context.Background(), ref, o); err == nil {
		t.Fatal("the cut transfer succeeded")
	}
	check := func(from int64) {
		t.Helper()
		if len(calls) < 3 || calls[0].completed != from {
			t.Fatalf("calls %v: want several, the first at %d", calls, from)
		}
		for i, c := range calls {
			if c.file != "stories260K.gguf" || c.total != size {
				t.Fatalf("call %d: %+v, want stories260K.gguf of %d bytes", i, c, size)
			}
			if i > 0 && c.completed < calls[i-1].completed+ProgressStep(size) && c.completed != size {
				t.Errorf("call %d at %d, the one before at %d: less than a step (%d) apart", i, c.completed, calls[i-1].completed, ProgressStep(size))
			}
		}
	}
	check(0)
	if last := calls[len(calls)-1].completed; last > cut {
		t.Errorf("the cut transfer reported %d bytes, more than the %d served", last, cut)
	}

	calls = nil
	p, err := Download(context.Background(), ref, o)
	if err != nil {
		t.Fatal(err)
	}
	checkFile(t, p, gguf)
	check(cut)
	if last := calls[len(calls)-1]; last.completed != size {
		t.Errorf("last call %+v, want the whole %d bytes", last, size)
	}
	// Byte steps, not time: at most one call per step, plus the first and last.
	if n := int64(len(calls)); n > (size-cut)/ProgressStep(size)+2 {
		t.Errorf("%d calls for %d bytes in steps of %d", n, size-cut, ProgressStep(size))
	}

	calls = nil
	if _, err := Download(context.Background(), ref, o); err != nil || len(calls) != 0 {
		t.Errorf("cached file: %v, calls %v", err, calls)
	}
}

func TestProgressStep(t *testing.T) {
	for size, want := range map[int64]int64{-1: 1 << 20, 0: 32 << 10, 1 << 20: 32 << 10, 100 << 20: 1 << 20, 4 << 30: (4 << 30) / 100} {
		if got := ProgressStep(size); got != want {
			t.Errorf("ProgressStep(%d) = %d, want %d", size, got, want)
		}
	}
}

// TestListFiles lists a repository's files, sorted, whatever file the
// reference names; a missing repository is ErrNotFound.
func TestListFiles(t *testing.T) {
	s := newHub(t, ggufBytes(t))
	o := options(t, s)
	files, err := ListFiles(context.Background(), mustParse(t, "hf://"+repoID+"/stories260K.gguf"), o)
	if err != nil || !slices.Equal(files, []string{"README.md", "stories260K.gguf"}) {
		t.Errorf("ListFiles = %v, %v", files, err)
	}
	_, err = ListFiles(context.Background(), mustParse(t, "hf://acme/missing"), o)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "acme/missing") {
		t.Errorf("missing repo: %v", err)
	}
}
