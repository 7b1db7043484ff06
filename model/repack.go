package model

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/troupe-llm/troupe/compute"
)

// Repacking weights. The assembly of some weight types reads a copy of the
// weights in a layout of its own, made at load (compute/pack.go); the
// mapped originals then leave resident memory. That copy is anonymous
// memory the OS cannot page out: a model whose weights do not fit in
// memory is killed at load. A weight left in place is read by kernels that
// take the file's own layout, with the same bits (compute/inplace.go), and
// its pages come and go with the OS's page cache. Left in place, a
// mixture of experts whose experts do not all fit still runs: the routed
// experts are read from the file as needed, while the dense weights that
// every token reads stay repacked and resident.

// Repack says which weights are repacked at load.
type Repack int

const (
	// RepackAuto is RepackAll when the weights fit in the memory available
	// (MemAvailable, or the cgroup's limit if lower), else RepackDense for
	// a mixture of experts whose dense weights fit, else RepackNone.
	RepackAuto Repack = iota
	// RepackAll repacks every weight whose kernel reads a layout of its own.
	RepackAll
	// RepackDense repacks all but the experts, which are read in place.
	RepackDense
	// RepackNone reads every weight in place (llama.cpp's --no-repack).
	RepackNone
)

var repackNames = [...]string{RepackAuto: "auto", RepackAll: "all", RepackDense: "dense", RepackNone: "none"}

func (r Repack) String() string {
	if r >= 0 && int(r) < len(repackNames) {
		return repackNames[r]
	}
	return fmt.Sprintf("Repack(%d)", int(r))
}

// ParseRepack returns the Repack named s (auto, all, dense or none).
func ParseRepack(s string) (Repack, error) {
	for r, name := range repackNames {
		if s == name {
			return Repack(r), nil
		}
	}
	return 0, fmt.Errorf("repack %q: want auto, all, dense or none", s)
}

// LoadOptions say how a model's weights are held in memory. The zero value
// is the default.
type LoadOptions struct {
	Repack Repack
	// Available is the memory the weights may take, in bytes, for
	// RepackAuto; 0 reads it from the system (availableMemory).
	Available int64
	// Stage loads only the tensors of a pipeline stage's layers (stage.go);
	// the zero value loads the whole model.
	Stage Stage
}

// memoryHeadroom is the share of the available memory left to the KV
// cache, the scratch buffers and the page cache of the mapped weights a
// step reads (1/8).
const memoryHeadroom = 8

// chooseRepack resolves RepackAuto for weights of which experts are the
// experts' matrices, given avail bytes of memory (0: unknown, then
// RepackAll). The weights would take their size, a little more where
// repacked (a Q4_K super-block grows from 144 bytes to 156).
func chooseRepack(r Repack, weights, experts []*compute.Tensor, avail int64) Repack {
	if r != RepackAuto {
		return r
	}
	if avail <= 0 {
		return RepackAll
	}
	budget := avail - avail/memoryHeadroom
	all := residentBytes(weights)
	switch {
	case all <= budget:
		return RepackAll
	case len(experts) > 0 && all-residentBytes(experts) <= budget:
		return RepackDense
	}
	return RepackNone
}

// residentBytes is the memory ts take once bound with repacking, each
// tensor counted once.
func residentBytes(ts []*compute.Tensor) int64 {
	seen := map[*compute.Tensor]bool{}
	var n int64
	for _, t := range ts {
		if t == nil || seen[t] {
			continue
		}
		seen[t] = true
		b := int64(len(t.Data))
		if compute.Repacks(t.Type) {
			b += b / 12 // 156/144
		}
		n += b
	}
	return n
}

// availableMemory returns the bytes of memory this process may still take:
// MemAvailable from /proc/meminfo, or less where its cgroup (v1 or v2) has
// a lower limit: the limit less what the cgroup uses other than page cache.
// fsys is the root file system (os.DirFS("/")); ok is false when
// /proc/meminfo cannot be read.
func availableMemory(fsys fs.FS) (avail int64, ok bool) {
	mi, err := fs.ReadFile(fsys, "proc/meminfo")
	if err != nil {
		return 0, false
	}
	avail, ok = statValue(mi, "MemAvailable:")
	if !ok {
		return 0, false
	}
	avail *= 1024 // kB
	if cg, ok := cgroupAvailable(fsys); ok && cg < avail {
		avail = cg
	}
	return avail, true
}

// cgroupAvailable returns the memory left under this process's cgroup
// limit, if it has one: the limit less the usage that is not page cache
// (which the kernel reclaims under the limit).
func cgroupAvailable(fsys fs.FS) (int64, bool) {
	self, err := fs.ReadFile(fsys, "proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(self)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		path := strings.Trim(parts[2], "/")
		switch {
		case parts[1] == "" && parts[0] == "0": // v2
			dir := strings.TrimSuffix("sys/fs/cgroup/"+path, "/")
			if v, ok := cgroupLeft(fsys, dir+"/memory.max", dir+"/memory.current", dir+"/memory.stat", "file"); ok {
				return v, true
			}
		case slices.Contains(strings.Split(parts[1], ","), "memory"): // v1
			dir := strings.TrimSuffix("sys/fs/cgroup/memory/"+path, "/")
			if v, ok := cgroupLeft(fsys, dir+"/memory.limit_in_bytes", dir+"/memory.usage_in_bytes", dir+"/memory.stat", "total_cache"); ok {
				return v, true
			}
		}
	}
	return 0, false
}

// cgroupLeft reads a cgroup's limit, usage and page cache (the memory.stat
// key cacheKey) and returns limit − (usage − cache); ok is false without a
// limit ("max", or v1's near-2⁶³ default).
func cgroupLeft(fsys fs.FS, limitFile, usageFile, statFile, cacheKey string) (int64, bool) {
	limit, ok := fileInt(fsys, limitFile)
	if !ok || limit >= 1<<60 {
		return 0, false
	}
	usage, _ := fileInt(fsys, usageFile)
	var cache int64
	if st, err := fs.ReadFile(fsys, statFile); err == nil {
		cache, _ = statValue(st, cacheKey)
	}
	return max(0, limit-max(0, usage-cache)), true
}

// fileInt reads a file holding one integer.
func fileInt(fsys fs.FS, name string) (int64, bool) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
	return v, err == nil
}

// statValue returns the number after key on the line that starts with key
// followed by a space ("MemAvailable:  123 kB", "total_cache 456").
func statValue(b []byte, key string) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == key {
			v, err := strconv.ParseInt(f[1], 10, 64)
			return v, err == nil
		}
	}
	return 0, false
}

// applyRepack resolves o.Repack for w (whose matrices are mats) and marks
// the weights to read in place; it returns the resolved mode.
func applyRepack(o LoadOptions, w *Weights, mats []*compute.Tensor) Repack {
	var experts []*compute.Tensor
	for i := range w.Layers {
		if e := w.Layers[i].MoE; e != nil {
			experts = append(experts, e.Gate...)
			experts = append(experts, e.Up...)
			experts = append(experts, e.Down...)
		}
	}
	avail := o.Available
	if avail == 0 && o.Repack == RepackAuto {
		avail, _ = availableMemory(os.DirFS("/"))
	}
	r := chooseRepack(o.Repack, append([]*compute.Tensor{w.TokEmbd}, mats...), experts, avail)
	if r == RepackDense && len(experts) == 0 {
		r = RepackAll // a dense model: nothing to leave in place
	}
	switch r {
	case RepackDense:
		for _, t := range experts {
			t.InPlace = true
		}
	case RepackNone:
		for _, t := range mats {
			if t != nil {
				t.InPlace = true
			}
		}
	}
	return r
}
