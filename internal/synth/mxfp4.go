package synth

import "github.com/troupe-llm/troupe/compute"

// MXFP4 file types. llama.cpp has one, MXFP4_MOE (llama_ftype 38): its
// expert tensors in MXFP4, every other matrix Q8_0 (the MoE routers stay
// F32). Write also makes a dense "MXFP4" with that id, for speed and parity
// checks of the type on dense shapes: every matrix MXFP4 but the output
// (Q8_0, as MXFP4_MOE gives it).

// isMXFP4 reports whether ft is one of the MXFP4 file types.
func (ft FileType) isMXFP4() bool { return ft.Base == compute.MXFP4 }

// mxfp4Type is the type of a matrix of kind (see TensorType) in an MXFP4
// file type; expert is whether it is a 3-D expert tensor. (Routers are
// F32 in every file type: TensorType returns before it asks.)
func (ft FileType) mxfp4Type(kind string, expert bool) compute.DType {
	switch {
	case expert:
		return compute.MXFP4
	case kind == "output" || ft.Name == "MXFP4_MOE":
		return compute.Q8_0
	}
	return compute.MXFP4
}
