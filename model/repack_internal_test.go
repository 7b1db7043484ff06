package model

import (
	"testing"
	"testing/fstest"

	"github.com/troupe-llm/troupe/compute"
)

// TestChooseRepack checks RepackAuto's choice from the weights' size and
// the memory available, and that an explicit mode is kept.
func TestChooseRepack(t *testing.T) {
	mat := func(typ compute.DType, rows int) *compute.Tensor {
		rb, _ := typ.RowSize(256)
		return &compute.Tensor{Type: typ, Shape: []int{256, rows}, Data: make([]byte, rows*rb)}
	}
	dense := []*compute.Tensor{mat(compute.Q8_0, 1000)}                            // 272,000 bytes, read as stored
	experts := []*compute.Tensor{mat(compute.Q6_K, 2000), mat(compute.Q6_K, 2000)} // 840,000 bytes
	all := append(append([]*compute.Tensor{}, dense...), experts...)
	all = append(all, dense[0]) // counted once
	for _, c := range []struct {
		name    string
		r       Repack
		experts []*compute.Tensor
		avail   int64
		want    Repack
	}{
		{"unknown memory", RepackAuto, experts, 0, RepackAll},
		{"fits", RepackAuto, experts, 2_000_000, RepackAll},
		{"fits but for the headroom", RepackAuto, experts, 1_200_000, RepackDense},
		{"experts do not fit", RepackAuto, experts, 400_000, RepackDense},
		{"dense part does not fit", RepackAuto, experts, 300_000, RepackNone},
		{"dense model does not fit", RepackAuto, nil, 400_000, RepackNone},
		{"forced all", RepackAll, experts, 1, RepackAll},
		{"forced none", RepackNone, experts, 1 << 40, RepackNone},
		{"forced dense", RepackDense, experts, 1 << 40, RepackDense},
	} {
		if got := chooseRepack(c.r, all, c.experts, c.avail); got != c.want {
			t.Errorf("%s: %v with %d bytes available: got %v, want %v", c.name, c.r, c.avail, got, c.want)
		}
	}
	if got := residentBytes(all); got != 272_000+840_000 {
		t.Errorf("residentBytes = %d, want %d", got, 272_000+840_000)
	}
}

// TestAvailableMemory reads MemAvailable and the cgroup v1 and v2 limits
// from file system images.
func TestAvailableMemory(t *testing.T) {
	meminfo := &fstest.MapFile{Data: []byte("MemTotal:       24000000 kB\nMemFree:         1000 kB\nMemAvailable:   20000000 kB\n")}
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	for _, c := range []struct {
		name string
		fs   fstest.MapFS
		want int64
		ok   bool
	}{
		{"no meminfo", fstest.MapFS{}, 0, false},
		{"no cgroup", fstest.MapFS{"proc/meminfo": meminfo}, 20000000 * 1024, true},
		{"v1 without a limit", fstest.MapFS{"proc/meminfo": meminfo,
			"proc/self/cgroup":                           file("12:pids:/\n5:memory:/\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes": file("9223372036854771712\n"),
			"sys/fs/cgroup/memory/memory.usage_in_bytes": file("100\n")}, 20000000 * 1024, true},
		{"v1 limit", fstest.MapFS{"proc/meminfo": meminfo,
			"proc/self/cgroup": file("12:pids:/\n5:cpuacct,memory:/bench\n"),
			"sys/fs/cgroup/memory/bench/memory.limit_in_bytes": file("1000000000\n"),
			"sys/fs/cgroup/memory/bench/memory.usage_in_bytes": file("300000000\n"),
			"sys/fs/cgroup/memory/bench/memory.stat":           file("cache 1\ntotal_rss 100000000\ntotal_cache 200000000\n")},
			900_000_000, true},
		{"v1 limit above MemAvailable", fstest.MapFS{"proc/meminfo": meminfo,
			"proc/self/cgroup": file("5:memory:/big\n"),
			"sys/fs/cgroup/memory/big/memory.limit_in_bytes": file("100000000000\n")}, 20000000 * 1024, true},
		{"v2 limit", fstest.MapFS{"proc/meminfo": meminfo,
			"proc/self/cgroup":                            file("0::/user.slice/job\n"),
			"sys/fs/cgroup/user.slice/job/memory.max":     file("2000000000\n"),
			"sys/fs/cgroup/user.slice/job/memory.current": file("500000000\n"),
			"sys/fs/cgroup/user.slice/job/memory.stat":    file("anon 100000000\nfile 400000000\n")}, 1_900_000_000, true},
		{"v2 max", fstest.MapFS{"proc/meminfo": meminfo,
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("max\n")}, 20000000 * 1024, true},
	} {
		got, ok := availableMemory(c.fs)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: availableMemory = %d, %v; want %d, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
