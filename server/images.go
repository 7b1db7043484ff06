package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/messages"
	"github.com/troupe-llm/troupe/server/pipeline"
)

// MediaConfig bounds a request's images.
type MediaConfig struct {
	// MaxImages is the most images one request may carry (0: 8).
	MaxImages int
	// AllowedDomains are the hosts whose http(s) image URLs the server
	// fetches ("example.com": that host; ".example.com": its subdomains
	// too; "*": any). Empty: remote URLs are refused.
	AllowedDomains []string
	// AllowPrivate lets a fetch reach loopback, private and link-local
	// addresses (refused by default, checked at dial time; tests).
	AllowPrivate bool
	// FetchTimeout bounds one fetch (0: 10 s).
	FetchTimeout time.Duration
}

const defaultMaxImages = 8

// imagePlaceholder is the token id standing at each embedding row's
// position (any valid id: the row's embedding replaces it).
const imagePlaceholder = 0

// Vision reports whether the served model takes images (a projector is
// loaded): /v1/models and /api/show say so.
func (s *Server) Vision() bool { return s.rt.HasImageEncoder() }

// imagePrompt lays out a rendered conversation with images: text split on
// pipeline.ImageMarker, each piece tokenized (BOS on the first as render
// adds it), each image's chunks spliced in between (its marker texts
// tokenized, a placeholder token per embedding row). It returns the
// prompt and the images' spans in it.
func (s *Server) imagePrompt(ctx context.Context, req *pipeline.Request, text string) ([]int32, []messages.ImageInput, *apiError) {
	prepared, e := s.prepareImages(ctx, req.Images)
	if e != nil {
		return nil, nil, e
	}
	pieces := strings.Split(text, pipeline.ImageMarker)
	if len(pieces)-1 != len(prepared) {
		return nil, nil, badRequest("messages", "the rendered conversation has %d image markers (%s) for %d images; the chat template or the text moved them",
			len(pieces)-1, pipeline.ImageMarker, len(prepared))
	}
	bos, _ := s.rt.SpecialTokens()
	var prompt []int32
	var spans []messages.ImageInput
	for i, piece := range pieces {
		ids, err := s.tokenizeText(piece, i == 0 && (bos == "" || !strings.HasPrefix(text, bos)))
		if err != nil {
			return nil, nil, tokenizeError("messages", "tokenizing the conversation", err)
		}
		prompt = append(prompt, ids...)
		if i == len(prepared) {
			break
		}
		im, row := prepared[i], 0
		for _, c := range im.Chunks {
			if c.Rows == 0 {
				ids, err := s.rt.TokenizeText(c.Text, false, true)
				if err != nil {
					return nil, nil, badRequest(req.Images[i].Field, "%s: tokenizing the image's markers: %v", req.Images[i].Field, err)
				}
				prompt = append(prompt, ids...)
				continue
			}
			spans = append(spans, messages.ImageInput{Pos: len(prompt), Rows: c.Rows, Hash: im.Hash, Row: row, Image: im})
			row += c.Rows
			for range c.Rows {
				prompt = append(prompt, imagePlaceholder)
			}
		}
	}
	return prompt, spans, nil
}

// prepareImages fetches (where allowed) and prepares each image, a 400
// naming the image's part when it cannot be.
func (s *Server) prepareImages(ctx context.Context, images []pipeline.Image) ([]*actors.PreparedImage, *apiError) {
	if !s.rt.HasImageEncoder() {
		return nil, badRequest(images[0].Field, "%s: the served model takes no images (no projector loaded: start troupe with --mmproj)", images[0].Field)
	}
	maxImages := s.cfg.Media.MaxImages
	if maxImages <= 0 {
		maxImages = defaultMaxImages
	}
	if len(images) > maxImages {
		return nil, badRequest(images[maxImages].Field, "%s: %d images; at most %d per request", images[maxImages].Field, len(images), maxImages)
	}
	out := make([]*actors.PreparedImage, len(images))
	for i, im := range images {
		data := im.Data
		if im.URL != "" {
			var err error
			if data, err = s.fetchImage(ctx, im.URL); err != nil {
				return nil, badRequest(im.Field, "%s: %v", im.Field, err)
			}
		}
		p, err := s.rt.PrepareImage(data)
		if err != nil {
			return nil, badRequest(im.Field, "%s: %v", im.Field, err)
		}
		out[i] = p
	}
	return out, nil
}

// fetchImage gets an http(s) image URL whose host MediaConfig allows,
// bounded in time and size; every address dialled (redirects included)
// must be public unless AllowPrivate.
func (s *Server) fetchImage(ctx context.Context, raw string) ([]byte, error) {
	m := &s.cfg.Media
	if len(m.AllowedDomains) == 0 {
		return nil, errors.New("remote image URLs are not allowed (serve with --allowed-media-domains); send the image as a data: URL")
	}
	check := func(u *url.URL) error {
		if u.Scheme != "http" && u.Scheme != "https" {
			return fmt.Errorf("scheme %q: only http(s)", u.Scheme)
		}
		if !domainAllowed(u.Hostname(), m.AllowedDomains) {
			return fmt.Errorf("host %q is not in --allowed-media-domains", u.Hostname())
		}
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("bad URL: %v", err)
	}
	if err := check(u); err != nil {
		return nil, err
	}
	timeout := m.FetchTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	dialer := &net.Dialer{Timeout: timeout, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return err
		}
		if a := ap.Addr().Unmap(); !m.AllowPrivate && !publicAddr(a) {
			return fmt.Errorf("address %s is not public", a)
		}
		return nil
	}}
	client := &http.Client{
		Timeout:   timeout,
		Transport: &http.Transport{DialContext: dialer.DialContext, Proxy: nil, ResponseHeaderTimeout: timeout},
		CheckRedirect: func(r *http.Request, via []*http.Request) error {
			if len(via) >= 3 {
				return errors.New("too many redirects")
			}
			return check(r.URL)
		},
	}
	defer client.CloseIdleConnections()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("bad URL: %v", err)
	}
	resp, err := client.Do(hreq)
	if err != nil {
		return nil, fmt.Errorf("fetching the image: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching the image: %s", resp.Status)
	}
	if resp.ContentLength > pipeline.MaxImageBytes {
		return nil, fmt.Errorf("the image is %d bytes, over %d", resp.ContentLength, pipeline.MaxImageBytes)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, pipeline.MaxImageBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fetching the image: %v", err)
	}
	if len(data) > pipeline.MaxImageBytes {
		return nil, fmt.Errorf("the image is over %d bytes", pipeline.MaxImageBytes)
	}
	return data, nil
}

// domainAllowed matches host against --allowed-media-domains.
func domainAllowed(host string, allowed []string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, d := range allowed {
		d = strings.ToLower(strings.TrimSpace(d))
		switch {
		case d == "*", d == host:
			return true
		case strings.HasPrefix(d, ".") && (host == d[1:] || strings.HasSuffix(host, d)):
			return true
		}
	}
	return false
}

// publicAddr reports whether a is a global unicast address outside the
// private, loopback, link-local and shared ranges.
func publicAddr(a netip.Addr) bool {
	if !a.IsGlobalUnicast() || a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() {
		return false
	}
	cgnat := netip.MustParsePrefix("100.64.0.0/10")
	return !cgnat.Contains(a)
}
