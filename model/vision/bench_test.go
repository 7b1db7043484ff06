package vision

import (
	"encoding/binary"
	"math"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/internal/imagetest"
)

// BenchmarkPrepare and BenchmarkEncode time one image through synth's tiny
// projectors; their cost says little about a real projector's.
func BenchmarkPrepare(b *testing.B) {
	p := tinyGemma3(b)
	data := imagetest.PNG(b, testImage(640, 480))
	for b.Loop() {
		if _, err := p.Prepare(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	for _, shape := range []string{"gemma3-tiny", "idefics3-tiny", "qwen2.5vl-tiny", "qwen3vl-tiny"} {
		b.Run(shape, func(b *testing.B) {
			p := tinyProjector(b, shape)
			prep, err := p.Prepare(imagetest.PNG(b, testImage(100, 50)))
			if err != nil {
				b.Fatal(err)
			}
			mm := compute.NewMatMuler(runtime.GOMAXPROCS(0))
			for b.Loop() {
				if _, err := p.Encode(mm, prep); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "images/s")
		})
	}
}

// BenchmarkEncodeTile times one tile through a projector of a real shape
// (TROUPE_VISION_SHAPE, a synth.ProjectorShapes name such as smolvlm-256m
// or gemma3; skipped when unset: a real shape takes seconds a tile). It
// writes the tile's pixels to TROUPE_VISION_PIX when set, for
// scripts/vision-ggml-dump.cpp to time the same tile.
func BenchmarkEncodeTile(b *testing.B) {
	shape := os.Getenv("TROUPE_VISION_SHAPE")
	if shape == "" {
		b.Skip("TROUPE_VISION_SHAPE unset")
	}
	p := tinyProjectorSeed(b, shape, 1)
	sz := p.hp.imageSize
	prep, err := p.Prepare(imagetest.PNG(b, testImage(sz, sz)))
	if err != nil {
		b.Fatal(err)
	}
	tile := &prep.tiles[0]
	if path := os.Getenv("TROUPE_VISION_PIX"); path != "" {
		buf := make([]byte, 4*len(tile.buf))
		for i, v := range tile.buf {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
		}
		if err := os.WriteFile(path, buf, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	mm := compute.NewMatMuler(runtime.GOMAXPROCS(0))
	cpu0 := cpuSeconds()
	for b.Loop() {
		if _, err := p.encodeTile(mm, tile); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/tile")
	// CPU time says more than wall time on a shared machine.
	b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/tile")
}

// cpuSeconds is the process's user and system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
