package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
)

// fetch downloads m's bytes to blob through blob+".incomplete", resuming
// what an earlier attempt left there, and renames it into place once its
// size and sha256 (when known) are right. A failed check deletes the partial
// file; an interrupted transfer keeps it.
func (c *client) fetch(ctx context.Context, ref Ref, m fileMeta, blob string) error {
	if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
		return fmt.Errorf("hub: %s: cache: %w", ref, err)
	}
	tmp := blob + ".incomplete"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("hub: %s: cache: %w", ref, err)
	}
	defer f.Close()
	d := &transfer{f: f, h: sha256.New(), bar: &bar{w: c.o.Progress, name: path.Base(ref.File), size: m.size,
		on: c.o.OnProgress, file: ref.File, step: ProgressStep(m.size)}}
	defer d.bar.close()
	if err := d.keep(m.size); err != nil {
		return fmt.Errorf("hub: %s: cache: %w", ref, err)
	}
	if m.size < 0 || d.n < m.size {
		if err := c.transfer(ctx, ref, m, d); err != nil {
			return err
		}
	}
	if err := d.check(m); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("hub: %s: %w: %v; the download was deleted, run again", ref, ErrChecksum, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("hub: %s: cache: %w", ref, err)
	}
	if err := os.Rename(tmp, blob); err != nil {
		return fmt.Errorf("hub: %s: cache: %w", ref, err)
	}
	d.bar.finish(d.n)
	return nil
}

// transfer is one partial file being written.
type transfer struct {
	f   *os.File
	h   hash.Hash // sha256 of f's first n bytes
	n   int64
	bar *bar
}

// keep takes what an earlier attempt left in the file (up to size, when
// known) and hashes it, so the download can resume after it.
func (d *transfer) keep(size int64) error {
	st, err := d.f.Stat()
	if err != nil {
		return err
	}
	d.n = st.Size()
	if size >= 0 && d.n > size {
		return d.restart()
	}
	if _, err := io.Copy(d.h, io.NewSectionReader(d.f, 0, d.n)); err != nil {
		return err
	}
	_, err = d.f.Seek(d.n, io.SeekStart)
	return err
}

// restart empties the file.
func (d *transfer) restart() error {
	d.n = 0
	d.h.Reset()
	if err := d.f.Truncate(0); err != nil {
		return err
	}
	_, err := d.f.Seek(0, io.SeekStart)
	return err
}

// Write appends to the file, the hash and the bar.
func (d *transfer) Write(p []byte) (int, error) {
	n, err := d.f.Write(p)
	d.h.Write(p[:n])
	d.n += int64(n)
	d.bar.add(n)
	return n, err
}

func (d *transfer) check(m fileMeta) error {
	if m.size >= 0 && d.n != m.size {
		return fmt.Errorf("got %d bytes, the hub announced %d", d.n, m.size)
	}
	if got := hex.EncodeToString(d.h.Sum(nil)); m.sha256 != "" && got != m.sha256 {
		return fmt.Errorf("sha256 %s, the hub announced %s", got, m.sha256)
	}
	return nil
}

// transfer GETs the bytes after the d.n kept ones, asking for a range when
// there are some: a 206 from the right offset is appended, a 200 (a server
// that ignores ranges) starts the file over, and so does a 416 or a 206 from
// another offset, with a second plain request.
func (c *client) transfer(ctx context.Context, ref Ref, m fileMeta, d *transfer) error {
	for {
		req, err := c.newRequest(ctx, http.MethodGet, m.location)
		if err != nil {
			return fmt.Errorf("hub: %s: %w", ref, err)
		}
		resuming := d.n > 0
		if resuming {
			req.Header.Set("Range", fmt.Sprintf("bytes=%d-", d.n))
		}
		resp, err := c.get.Do(req)
		if err != nil {
			return netError(ctx, ref, req.URL.Host, err)
		}
		ok := resp.StatusCode == http.StatusOK ||
			(resp.StatusCode == http.StatusPartialContent && resuming && rangeStart(resp) == d.n)
		if !ok {
			resp.Body.Close()
			if resuming && (resp.StatusCode == http.StatusPartialContent || resp.StatusCode == http.StatusRequestedRangeNotSatisfiable) {
				if err := d.restart(); err != nil {
					return fmt.Errorf("hub: %s: cache: %w", ref, err)
				}
				continue
			}
			return c.statusError(ref, resp)
		}
		if resp.StatusCode == http.StatusOK && d.n > 0 {
			if err := d.restart(); err != nil {
				resp.Body.Close()
				return fmt.Errorf("hub: %s: cache: %w", ref, err)
			}
		}
		d.bar.start(d.n)
		_, err = io.Copy(d, resp.Body)
		resp.Body.Close()
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("hub: %s: stopped after %d bytes, kept to resume: %w", ref, d.n, context.Cause(ctx))
			}
			return fmt.Errorf("hub: %s: download broke off after %d bytes (run again to resume): %w", ref, d.n, err)
		}
		return nil
	}
}

// rangeStart is the first byte of a 206 answer's Content-Range
// ("bytes START-END/SIZE"), or -1.
func rangeStart(resp *http.Response) int64 {
	s, ok := strings.CutPrefix(resp.Header.Get("Content-Range"), "bytes ")
	if !ok {
		return -1
	}
	s, _, _ = strings.Cut(s, "-")
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// bar is a progress bar of one file's transfer, drawn when w is not nil.
// A resumed transfer's bar counts the bytes still to come, so that its speed
// is this transfer's. Its errors (a count past the announced size) never stop
// a download.
type bar struct {
	w    io.Writer
	name string
	size int64 // -1 when unknown
	b    *progressbar.ProgressBar
	// on (Options.OnProgress) is called at start, every step bytes and at
	// the end; n is the count so far, next the count of its next call.
	on            func(file string, completed, total int64)
	file          string
	step, n, next int64
}

// ProgressStep is how many bytes pass between two Options.OnProgress calls
// for a file of size bytes (-1: unknown).
func ProgressStep(size int64) int64 {
	if size < 0 {
		return 1 << 20
	}
	return max(size/100, 32<<10)
}

// start draws the bar for a transfer after the first off bytes.
func (b *bar) start(off int64) {
	if b.on != nil {
		b.n, b.next = off, off+b.step
		b.on(b.file, off, b.size)
	}
	if b.w == nil || b.size == 0 || b.b != nil {
		return
	}
	max, desc := int64(-1), b.name // a spinner, redrawn only as bytes arrive
	if b.size > 0 {
		max = b.size - off
	}
	if off > 0 {
		desc = fmt.Sprintf("%s (resumed after %d bytes)", b.name, off)
	}
	w := b.w
	b.b = progressbar.NewOptions64(max,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowTotalBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionSetSpinnerChangeInterval(0), // no ticker goroutine to stop
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
	)
}

func (b *bar) add(n int) {
	if b.on != nil {
		b.n += int64(n)
		if b.n >= b.next && (b.size < 0 || b.n < b.size) { // the end is finish's
			b.next = b.n + b.step
			b.on(b.file, b.n, b.size)
		}
	}
	if b.b != nil {
		_ = b.b.Add(n)
	}
}

// finish completes the bar of a verified file of n bytes.
func (b *bar) finish(n int64) {
	if b.on != nil {
		b.on(b.file, n, max(b.size, n))
	}
	if b.b != nil {
		_ = b.b.Finish()
	}
}

// close ends the line of a bar left unfinished by an error.
func (b *bar) close() {
	if b.b != nil && !b.b.IsFinished() {
		_ = b.b.Exit()
	}
}
