package kv

import "testing"

// BenchmarkAllocateFree allocates and frees a 2k-token prompt whose first
// half is cached and whose second half is new each time (so the cache stays
// under eviction pressure, as in steady state).
func BenchmarkAllocateFree(b *testing.B) {
	const n, bs = 2048, 16
	m := NewBlockManager(1024, bs, true)
	prompt := span(0, n)
	if _, err := allocate(m, 0, prompt); err != nil {
		b.Fatal(err)
	}
	i := int32(0)
	for b.Loop() {
		i++
		prompt[n/2] = -i // the second half misses
		cached, err := allocate(m, 1, prompt)
		if err != nil || cached != n/2 {
			b.Fatalf("cached %d, %v", cached, err)
		}
		m.Free(1)
	}
	b.ReportMetric(float64(b.N)*n/b.Elapsed().Seconds(), "tok/s")
}

// BenchmarkAppend is the decode path: one token at a time.
func BenchmarkAppend(b *testing.B) {
	const bs, maxTokens = 16, 4096
	m := NewBlockManager(maxTokens/bs, bs, true)
	id := SeqID(0)
	if _, err := allocate(m, id, span(0, 1)); err != nil {
		b.Fatal(err)
	}
	tok := int32(0)
	for b.Loop() {
		if m.NumTokens(id) == maxTokens {
			m.Free(id)
			id++
			if _, err := allocate(m, id, span(0, 1)); err != nil {
				b.Fatal(err)
			}
		}
		tok++
		if err := appendToken(m, id, tok); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
}
