package actors

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/troupe-llm/troupe/compute"
	"github.com/troupe-llm/troupe/model/vision"
)

// ImageEncoder turns image files into embedding rows of the model's width:
// the runtime's view of a multimodal projector (*vision.Projector
// satisfies it). Prepare decodes and preprocesses one image file (its
// errors wrap vision.ErrFormat or vision.ErrTooLarge); Encode runs the
// vision tower and the projector over a prepared image on mm's workers and
// returns p.Rows()·Dim() values, the embedding runs of p.Chunks in order.
// Both may run on several goroutines at once. Optional methods:
// Bidirectional() bool (the rows attend both ways, Gemma 3) and MRoPE()
// bool (Prepared.Positions place the rows for a model with M-RoPE, Qwen-VL:
// the runtime refuses an encoder and a model that disagree).
type ImageEncoder interface {
	Prepare(data []byte) (*vision.Prepared, error)
	Encode(mm *compute.MatMuler, p *vision.Prepared) ([]float32, error)
	Dim() int
}

// encoder encodes images off every other actor's path: each job runs on a
// goroutine of its own, at most max at once (each with its own
// MatMuler), the rest queued in arrival order. Embeddings are kept by
// image hash (embedCache), so the same image in a later request is not
// encoded again. A request that ends before its images are encoded sends
// abandonEncode: its queued jobs are dropped (a running one finishes and
// is cached; its answer goes nowhere).
type encoder struct {
	enc     ImageEncoder
	workers int
	max     int
	running int
	free    []*compute.MatMuler
	queue   []*encodeImage
	cache   embedCache
}

// encodeImage asks for one image's rows. request -> encoder; answered with
// imageEncoded to asker.
type encodeImage struct {
	asker *actor.PID
	index int // the image's index in the request
	image *vision.Prepared
}

// imageEncoded answers encodeImage. encoder -> request.
type imageEncoded struct {
	index  int
	embeds []float32
	err    error
}

// abandonEncode drops the queued jobs of asker. request -> encoder.
type abandonEncode struct {
	asker *actor.PID
}

// encodeDone is a job's goroutine reporting. goroutine -> encoder.
type encodeDone struct {
	job    *encodeImage
	mm     *compute.MatMuler
	embeds []float32
	err    error
}

// encodeConcurrency is how many images encode at once: an encode takes a
// MatMuler of Config.Workers goroutines, so two share the CPU with the
// devices' steps without starving them.
func encodeConcurrency() int { return max(1, min(2, runtime.GOMAXPROCS(0)/2)) }

func newEncoder(enc ImageEncoder, workers int) actor.Producer {
	return func() actor.Actor {
		return &encoder{enc: enc, workers: workers, max: encodeConcurrency(), cache: newEmbedCache(embedCacheBytes)}
	}
}

func (e *encoder) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *encodeImage:
		e.onEncode(ctx, msg)
	case *abandonEncode:
		e.onAbandon(msg)
	case *encodeDone:
		e.onDone(ctx, msg)
	}
}

func (e *encoder) onEncode(ctx actor.Context, job *encodeImage) {
	if rows, ok := e.cache.get(job.image.Hash); ok && len(rows) == job.image.Rows()*e.enc.Dim() {
		ctx.Send(job.asker, &imageEncoded{index: job.index, embeds: rows})
		return
	}
	e.queue = append(e.queue, job)
	e.startNext(ctx)
}

func (e *encoder) onAbandon(msg *abandonEncode) {
	kept := e.queue[:0]
	for _, j := range e.queue {
		if !j.asker.Equal(msg.asker) {
			kept = append(kept, j)
		}
	}
	clear(e.queue[len(kept):])
	e.queue = kept
}

func (e *encoder) onDone(ctx actor.Context, d *encodeDone) {
	e.running--
	e.free = append(e.free, d.mm)
	if d.err == nil {
		e.cache.put(d.job.image.Hash, d.embeds)
	}
	ctx.Send(d.job.asker, &imageEncoded{index: d.job.index, embeds: d.embeds, err: d.err})
	e.startNext(ctx)
}

// startNext starts queued jobs while fewer than max run; a job whose image
// was cached meanwhile (the same image asked twice) is answered at once.
func (e *encoder) startNext(ctx actor.Context) {
	for e.running < e.max && len(e.queue) > 0 {
		job := e.queue[0]
		e.queue[0] = nil
		e.queue = e.queue[1:]
		if rows, ok := e.cache.get(job.image.Hash); ok && len(rows) == job.image.Rows()*e.enc.Dim() {
			ctx.Send(job.asker, &imageEncoded{index: job.index, embeds: rows})
			continue
		}
		var mm *compute.MatMuler
		if n := len(e.free); n > 0 {
			mm, e.free = e.free[n-1], e.free[:n-1]
		} else {
			mm = compute.NewMatMuler(e.workers)
		}
		e.running++
		self, root := ctx.Self(), ctx.ActorSystem().Root
		go func() {
			rows, err := encodeOne(e.enc, mm, job.image)
			root.Send(self, &encodeDone{job: job, mm: mm, embeds: rows, err: err})
		}()
	}
}

// encodeOne runs enc over p, turning a panic into an error and checking
// the number of values.
func encodeOne(enc ImageEncoder, mm *compute.MatMuler, p *vision.Prepared) (rows []float32, err error) {
	defer func() {
		if r := recover(); r != nil {
			rows, err = nil, fmt.Errorf("image encoder: panic: %v", r)
		}
	}()
	rows, err = enc.Encode(mm, p)
	if err != nil {
		return nil, fmt.Errorf("image encoder: %w", err)
	}
	if want := p.Rows() * enc.Dim(); len(rows) != want {
		return nil, fmt.Errorf("image encoder: %d values for %d rows of %d", len(rows), p.Rows(), enc.Dim())
	}
	return rows, nil
}

// embedCacheBytes bounds the embeddings kept by image hash (about 25
// Gemma 3 images of 256 rows of 2560).
const embedCacheBytes = 64 << 20

// embedCache keeps encoded images by hash, the oldest dropped first past
// its byte bound. The rows are shared read-only with the sequences.
type embedCache struct {
	limit, bytes int
	rows         map[[32]byte][]float32
	order        [][32]byte // insertion order
}

func newEmbedCache(limit int) embedCache {
	return embedCache{limit: limit, rows: make(map[[32]byte][]float32)}
}

func (c *embedCache) get(h [32]byte) ([]float32, bool) {
	r, ok := c.rows[h]
	return r, ok
}

func (c *embedCache) put(h [32]byte, rows []float32) {
	size := 4 * len(rows)
	if _, ok := c.rows[h]; ok || size > c.limit {
		return
	}
	for c.bytes+size > c.limit && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.bytes -= 4 * len(c.rows[old])
		delete(c.rows, old)
	}
	c.rows[h], c.bytes = rows, c.bytes+size
	c.order = append(c.order, h)
}

// PreparedImage is one image file decoded and preprocessed for the
// runtime's encoder: how it enters a prompt (Chunks: text to tokenize, the
// model's markers around the image, and runs of embedding rows) and the
// hash of its pixels. A front end lays the prompt out from Chunks (a
// placeholder token per row) and puts the image in
// GenerateRequest.Images (ImageInput.Image).
type PreparedImage struct {
	Chunks        []ImageChunk
	Hash          [32]byte
	Width, Height int // the decoded file's size

	p *vision.Prepared
}

// ImageChunk is one piece of a prepared image in the prompt: Text (parse
// special tokens) when Rows is 0, else a run of Rows embedding rows.
type ImageChunk struct {
	Text string
	Rows int
}

// ErrNoImageEncoder is PrepareImage's error on a runtime without an
// encoder (no projector loaded).
var ErrNoImageEncoder = errors.New("the model takes no images (no projector loaded: --mmproj)")

// HasImageEncoder says whether the runtime takes images (Config.Encoder).
func (r *Runtime) HasImageEncoder() bool { return r.cfg.Encoder != nil }

// PrepareImage decodes and preprocesses one image file (PNG, JPEG, GIF,
// WebP), on the caller's goroutine: a front end calls it before it lays
// out the prompt. Its errors are the client's (a bad or too large image),
// or ErrNoImageEncoder.
func (r *Runtime) PrepareImage(data []byte) (*PreparedImage, error) {
	if r.cfg.Encoder == nil {
		return nil, ErrNoImageEncoder
	}
	p, err := r.cfg.Encoder.Prepare(data)
	if err != nil {
		return nil, err
	}
	if p.Rows() == 0 {
		return nil, fmt.Errorf("%w: the image gives no embedding rows", vision.ErrFormat)
	}
	pi := &PreparedImage{Hash: p.Hash, Width: p.Width, Height: p.Height, p: p}
	for _, c := range p.Chunks {
		pi.Chunks = append(pi.Chunks, ImageChunk{Text: c.Text, Rows: c.Embeds})
	}
	return pi, nil
}
