//go:build linux

package model_test

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/internal/synth/synthtest"
	"github.com/troupe-llm/troupe/kv"
	"github.com/troupe-llm/troupe/model"
)

// TestStageResident loads the middle stage of three of a mixture of experts
// with its weights read in place (RepackNone), runs a batch through it, and
// measures the resident pages of its file mapping (/proc/self/smaps): its
// own layers and the header, not the other stages'.
func TestStageResident(t *testing.T) {
	if _, err := os.Stat("/proc/self/smaps"); err != nil {
		t.Skip("no /proc/self/smaps here")
	}
	path := synthtest.Write(t, "gpt-oss-tiny", "Q8_0", "stories260K.gguf", 1)
	plan, err := model.PlanStages(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	st := plan[1]
	dropPageCache(t, path) // written just now: its pages are cached in large folios
	m, err := model.OpenWith(path, model.LoadOptions{Stage: st, Repack: model.RepackNone})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c := &m.Config
	cache, err := m.NewStageCache(kv.F16, 4, 16)
	if err != nil {
		t.Fatal(err)
	}
	b := &model.Batch{BlockTables: [][]int32{{0, 1}}}
	for p := range 20 {
		b.Add(int32(p+3), int32(p), 0, false)
	}
	in, out := make([]float32, 20*c.Dim), make([]float32, 20*c.Dim)
	if err := m.ForwardStage(model.NewState(c, 2), b, cache, in, out, nil); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	var stageBytes int64
	for _, lw := range m.Weights.Layers[st.Lo:st.Hi] {
		for _, x := range append([]*compute.Tensor{lw.Q, lw.K, lw.V, lw.O}, lw.MoE.Matrices()...) {
			if x != nil {
				stageBytes += int64(len(x.Data))
			}
		}
	}
	rss := mappingRss(t, unsafe.Pointer(unsafe.SliceData(m.Weights.Layers[st.Lo].Q.Data)))
	t.Logf("stage %v of 3: file %d KiB, the stage's matrices %d KiB, resident in its mapping %d KiB", st, fi.Size()>>10, stageBytes>>10, rss>>10)
	// The header (vocabulary) and the pages the kernel maps around each
	// fault (fault-around, 64 KiB) come on top of the stage's own.
	if limit := stageBytes + fi.Size()/8; rss > limit {
		t.Errorf("resident %d KiB, more than the stage's %d KiB and an eighth of the file", rss>>10, stageBytes>>10)
	}
	if rss > fi.Size()/2 {
		t.Errorf("resident %d KiB of a %d KiB file for one stage of three", rss>>10, fi.Size()>>10)
	}
}

// dropPageCache writes path's pages out and drops them from the page
// cache, so that what the test maps is read on its faults, page by page
// (readahead aside), not found in the large folios the writes left.
func dropPageCache(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Skipf("fadvise: %v", err)
	}
	// Where the page cache keeps the file anyway, faults map what is
	// cached around them, and the measure says nothing of the stage.
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	defer unix.Munmap(data)
	vec := make([]byte, (len(data)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&data[0])), uintptr(len(data)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Skipf("mincore: %v", e)
	}
	cached := 0
	for _, v := range vec {
		cached += int(v & 1)
	}
	if cached > len(vec)/10 {
		t.Skipf("the page cache kept %d of the file's %d pages after FADV_DONTNEED", cached, len(vec))
	}
}

// mappingRss returns the resident bytes of the mapping of this process
// that holds p (/proc/self/smaps).
func mappingRss(t *testing.T, p unsafe.Pointer) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	addr := uint64(uintptr(p))
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(fields[0], "-"); ok && !strings.HasSuffix(fields[0], ":") {
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && a <= addr && addr < b
			continue
		}
		if in && fields[0] == "Rss:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no mapping holds the stage's weights")
	return 0
}
