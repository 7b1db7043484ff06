package actors

import (
	"fmt"
	"slices"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/messages"
)

// A request with images has them encoded before its sequences enter the
// schedule (encoder.go): the sequences' NewSequence carry the rows, so the
// batcher keeps them for as long as the sequence lives (preemption
// included). imagesLeft counts the encodings not yet back.

// startImages asks the encoder for every image of the request not yet
// encoded; it returns false when there are none to wait for.
func (r *request) startImages(ctx actor.Context) bool {
	if len(r.req.Images) == 0 {
		return false
	}
	// A copy of the request with its own Images: the client's is not
	// written to.
	req := *r.req
	req.Images = slices.Clone(req.Images)
	r.req = &req
	asked := map[*PreparedImage]bool{} // an image of several runs (spans) is encoded once
	for i, im := range req.Images {
		if im.Embeds != nil {
			continue
		}
		pi, _ := im.Image.(*PreparedImage) // checked by Check
		if asked[pi] {
			continue
		}
		asked[pi] = true
		r.imagesLeft++
		ctx.Send(r.rt.encoder, &encodeImage{asker: ctx.Self(), index: i, image: pi.p})
	}
	return r.imagesLeft > 0
}

func (r *request) onImageEncoded(ctx actor.Context, msg *imageEncoded) {
	if r.imagesLeft == 0 || r.pids != nil || r.left == 0 {
		return // cancelled or failed meanwhile
	}
	if msg.err != nil {
		r.endAll(ctx, messages.FinishError, fmt.Sprintf("image %d: %v", msg.index, msg.err))
		return
	}
	// Every span of that image takes its rows (Row, Rows) of the output.
	pi := r.req.Images[msg.index].Image.(*PreparedImage)
	dim := len(msg.embeds) / pi.p.Rows()
	for i := range r.req.Images {
		if im := &r.req.Images[i]; im.Image == any(pi) {
			im.Embeds, im.Image = msg.embeds[im.Row*dim:(im.Row+im.Rows)*dim], nil
			im.Bidirectional = r.rt.bidirectional
			if pos := pi.p.Positions; pos != nil { // M-RoPE (images.go)
				im.Positions = pos[im.Row : im.Row+im.Rows]
			}
		}
	}
	if r.imagesLeft--; r.imagesLeft == 0 {
		r.spawnSequences(ctx)
	}
}

// endAll ends every choice of a request that has no sequences yet (its
// images not encoded): cancelled, or failed.
func (r *request) endAll(ctx actor.Context, finish, reason string) {
	ctx.Send(r.rt.encoder, &abandonEncode{asker: ctx.Self()})
	r.imagesLeft = 0
	for i := range r.finished {
		r.sink(&messages.OutputChunk{RequestID: r.req.RequestID, Index: i, FinishReason: finish, Err: reason})
		r.finished[i] = true
	}
	r.left = 0
	r.sendDone()
	ctx.Stop(ctx.Self())
}

// checkImages checks a request's images against its prompt and the
// runtime: in order, inside the prompt, not overlapping, each either
// prepared by this runtime (PrepareImage) with Rows rows or carrying
// Rows×dim values.
func (r *Runtime) checkImages(req *messages.GenerateRequest) error {
	if len(req.Images) == 0 {
		return nil
	}
	bad := func(format string, args ...any) error {
		return &RequestError{Param: "images", Msg: fmt.Sprintf(format, args...)}
	}
	if r.cfg.Encoder == nil {
		return bad("%v", ErrNoImageEncoder)
	}
	end := 0
	for i, im := range req.Images {
		switch {
		case im.Rows < 1:
			return bad("image %d has %d rows", i, im.Rows)
		case im.Pos < end:
			return bad("image %d at prompt position %d overlaps the one before it or is out of order", i, im.Pos)
		case im.Pos+im.Rows > len(req.Prompt):
			return bad("image %d (positions %d..%d) runs past the prompt's %d tokens", i, im.Pos, im.Pos+im.Rows-1, len(req.Prompt))
		}
		end = im.Pos + im.Rows
		if im.Embeds != nil {
			if len(im.Embeds) != im.Rows*r.model.Config.InputDim() {
				return bad("image %d has %d values for %d rows of %d", i, len(im.Embeds), im.Rows, r.model.Config.InputDim())
			}
			continue
		}
		pi, ok := im.Image.(*PreparedImage)
		if !ok || pi == nil || pi.p == nil {
			return bad("image %d has neither embeddings nor an image prepared by the runtime (PrepareImage)", i)
		}
		if im.Row < 0 || im.Row+im.Rows > pi.p.Rows() {
			return bad("image %d: rows %d..%d of an image of %d", i, im.Row, im.Row+im.Rows-1, pi.p.Rows())
		}
	}
	return nil
}
