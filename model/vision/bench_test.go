package vision

import (
	"runtime"
	"testing"

	"github.com/troupe-llm/troupe/compute"
)

// BenchmarkPrepare and BenchmarkEncode time one image through synth's tiny
// projectors; their cost says little about a real projector's.
func BenchmarkPrepare(b *testing.B) {
	p := tinyGemma3(b)
	data := encodePNG(b, testImage(640, 480))
	for b.Loop() {
		if _, err := p.Prepare(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	for _, shape := range []string{"gemma3-tiny", "idefics3-tiny"} {
		b.Run(shape, func(b *testing.B) {
			p := tinyProjector(b, shape)
			prep, err := p.Prepare(encodePNG(b, testImage(100, 50)))
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
