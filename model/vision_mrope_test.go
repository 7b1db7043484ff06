package model_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/troupe-llm/troupe/internal/synth/synthtest"
	"github.com/troupe-llm/troupe/model"
)

// mropePositions is mtmd's M-RoPE layout of a prompt whose image rows (ids
// -1) take offsets rows in order: text at (p, p, p), an image's rows at
// p0 plus their offsets, the text after it from p0 + extent; then ngen
// tokens after the prompt.
func mropePositions(ids []int32, rows [][3]int32, extent, ngen int) [][3]int32 {
	var out [][3]int32
	p, r := int32(0), 0
	for i, id := range ids {
		if id >= 0 {
			out = append(out, [3]int32{p, p, p})
			p++
			continue
		}
		o := rows[r]
		out = append(out, [3]int32{p + o[0], p + o[1], p + o[2]})
		r++
		if i+1 == len(ids) || ids[i+1] >= 0 {
			p += int32(extent)
		}
	}
	for range ngen {
		out = append(out, [3]int32{p, p, p})
		p++
	}
	return out
}

// TestVisionLogitsParityMRoPE is TestVisionLogitsParity for Qwen2.5-VL: a
// random qwen2vl-tiny text model (troupe synth --shape qwen2vl-tiny --type
// F32 --vocab stories260K.gguf --seed 11: qwen2 with M-RoPE, sections 8,
// 12, 12 of 32 pairs, width 256) and a random qwen2.5vl-tiny projector of
// its width (seed 1), the prompt with wide.png (a 6×3 grid of rows)
// against llama.cpp b10573's mtmd (scripts/vision-logits-ref.sh): the
// layout (ids) and the M-RoPE positions equal mtmd's (text after the
// image from its first position + 6); the text rows' teacher-forced
// logits within the bound with llama.cpp's image rows and with Encode's;
// greedy ids equal. The same prompt with plain positions (no M-RoPE)
// differs far beyond the bound (logged), so the positions reach the
// logits.
func TestVisionLogitsParityMRoPE(t *testing.T) {
	// Measured 4.2e-3 with llama.cpp's image rows, at the first text row
	// (BOS, before the image: the F32 text model's own difference, as
	// gemma3-tiny's 2.65e-3; the rows after the image 2.3e-3 to 4.1e-3),
	// 5.4e-3 with Encode's; 0.12 with plain positions.
	mropeParity(t, "qwen2vl-tiny", "qwen2.5vl-tiny", 5e-3, 7e-3)
}

// TestVisionLogitsParityQwen2VL is TestVisionLogitsParityMRoPE for
// Qwen2-VL: the same qwen2vl-tiny text model with a random qwen2vl-tiny
// projector (layer norms, quick GELU, no windows) of its width (seed 1).
func TestVisionLogitsParityQwen2VL(t *testing.T) {
	mropeParity(t, "qwen2vl-tiny", "qwen2vl-tiny", 5e-3, 7e-3)
}

// TestVisionLogitsParityQwen3VL is TestVisionLogitsParityMRoPE for
// Qwen3-VL: a random qwen3vl-tiny text model (qwen3 with interleaved
// M-RoPE, sections 12, 10, 10 of 32 pairs, and two deepstack layers) and a
// random qwen3vl-tiny projector (rows of 3·256 values: the merger's, then
// two deepstack layers'), against llama.cpp b10573's mtmd. Besides the
// plain positions, the image rows without their deepstack slices must
// differ far beyond the bound, so deepstack reaches the logits, and so
// must the sections taken one after another (not interleaved).
func TestVisionLogitsParityQwen3VL(t *testing.T) {
	mropeParity(t, "qwen3vl-tiny", "qwen3vl-tiny", 5e-3, 7e-3)
}

// mropeParity is the M-RoPE logits parity of text shape textShape (synth
// F32, stories260K's vocabulary, seed 11) with projector projShape (seed
// 1), against scripts/vision-logits-ref.sh's references.
func mropeParity(t *testing.T, textShape, projShape string, bound, imageBound float64) {
	name := textShape + "-" + projShape
	m, f := openGGUF(t, synthtest.Write(t, textShape, "F32", "stories260K.gguf", 11))
	if !m.Features.Has(model.MRoPE) {
		t.Fatalf("%s model without the mrope feature", textShape)
	}

	emb, _, prep := encodeWide(t, projShape, m.Config.Dim)

	ref := readVisionPrompt(t, name)
	refPos := readI32(t, filepath.Join(visionLogitsDir, name+".pos"))
	if len(emb) != len(ref.emb) {
		t.Fatalf("Encode gave %d values, llama.cpp %d", len(emb), len(ref.emb))
	}
	layout := serverLayout(t, f, prep)
	if !slices.Equal(layout, ref.ids) {
		t.Errorf("server's layout %v\nmtmd's          %v", layout, ref.ids)
	}
	extent := 0
	for _, o := range prep.Positions {
		extent = max(extent, int(o[1])+1, int(o[2])+1)
	}
	pos := mropePositions(ref.ids, prep.Positions, extent, len(ref.gen))
	var want [][3]int32
	for i := 0; i+2 < len(refPos); i += 3 {
		want = append(want, [3]int32{refPos[i], refPos[i+1], refPos[i+2]})
	}
	if !slices.Equal(pos, want) {
		t.Fatalf("M-RoPE positions %v\nmtmd's           %v", pos, want)
	}

	vocab := m.Config.VocabSize
	got, gen := visionForward(t, m, ref.ids, pos, emb, len(ref.gen), false)
	withRef, _ := visionForward(t, m, ref.ids, pos, ref.emb, 0, false)
	plain, _ := visionForward(t, m, ref.ids, nil, ref.emb, 0, false)
	rel, abs := worstRelAbs(got, ref.logits, vocab)
	relRef, _ := worstRelAbs(withRef, ref.logits, vocab)
	off, _ := worstRelAbs(plain, ref.logits, vocab)
	t.Logf("%d text rows: max |Δ|/std %.2e (max |Δ| %.2e) against llama.cpp; %.2e with llama.cpp's image rows; %.2e without M-RoPE positions",
		len(got)/vocab, rel, abs, relRef, off)
	t.Logf("greedy ids %v, llama.cpp's %v", gen, ref.gen)
	if relRef > bound {
		t.Errorf("with llama.cpp's image rows: max |Δ|/std %.2e, want at most %.0e", relRef, bound)
	}
	if rel > imageBound {
		t.Errorf("max |Δ|/std %.2e, want at most %.0e", rel, imageBound)
	}
	if off < 10*imageBound {
		t.Errorf("plain positions give %.2e, want far more than the bound: M-RoPE does not reach the logits", off)
	}
	if !slices.Equal(gen, ref.gen) {
		t.Errorf("greedy ids %v, llama.cpp's %v", gen, ref.gen)
	}
	if c := &m.Config; c.RopeInterleaved {
		c.RopeInterleaved = false // the sections one after another, as qwen2vl's
		seq, _ := visionForward(t, m, ref.ids, pos, ref.emb, 0, false)
		c.RopeInterleaved = true
		off, _ := worstRelAbs(seq, ref.logits, vocab)
		t.Logf("%.2e with the sections not interleaved", off)
		if off < 10*imageBound {
			t.Errorf("sections not interleaved: %.2e, want far more than the bound: IMROPE does not reach the logits", off)
		}
	}
	if c := &m.Config; c.Deepstack > 0 {
		flat := slices.Clone(ref.emb)
		for r := 0; r < len(flat); r += c.InputDim() {
			clear(flat[r+c.Dim : r+c.InputDim()])
		}
		noDeep, _ := visionForward(t, m, ref.ids, pos, flat, 0, false)
		off, _ := worstRelAbs(noDeep, ref.logits, vocab)
		t.Logf("%.2e without the deepstack slices", off)
		if off < 10*imageBound {
			t.Errorf("without the deepstack slices %.2e, want far more than the bound: deepstack does not reach the logits", off)
		}
	}
}
