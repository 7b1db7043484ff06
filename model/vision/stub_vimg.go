// DELETE AT MERGE: a stand-in for the projector API that h-vision builds
// (Open, Check, Dim, Type, Prepare, Encode), so that branch h-vimg (the
// runtime and API side of issue 34) compiles alone. Nothing here works.

package vision

import (
	"errors"

	"github.com/troupe-llm/troupe/compute"
)

// Projector is a stand-in (DELETE AT MERGE).
type Projector struct{}

var errStub = errors.New("vision: projector files are not read in this build (stub_vimg.go)")

// Open is a stand-in (DELETE AT MERGE).
func Open(path string) (*Projector, error) { return nil, errStub }

// Check is a stand-in (DELETE AT MERGE).
func (p *Projector) Check(embedDim int) error { return errStub }

// Dim is a stand-in (DELETE AT MERGE).
func (p *Projector) Dim() int { return 0 }

// Type is a stand-in (DELETE AT MERGE).
func (p *Projector) Type() string { return "" }

// Prepare is a stand-in (DELETE AT MERGE).
func (p *Projector) Prepare(data []byte) (*Prepared, error) { return nil, errStub }

// Encode is a stand-in (DELETE AT MERGE).
func (p *Projector) Encode(mm *compute.MatMuler, pr *Prepared) ([]float32, error) {
	return nil, errStub
}
