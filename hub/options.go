package hub

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// DefaultEndpoint is the Hugging Face hub.
const DefaultEndpoint = "https://huggingface.co"

// Options configures Download. The zero value is ready to use: every empty
// field takes its default from the environment, as WithDefaults says.
type Options struct {
	// Endpoint is the hub's base URL: "" means $HF_ENDPOINT, else
	// DefaultEndpoint. A mirror may add a path (https://mirror.example/hf).
	Endpoint string
	// Token is sent as "Authorization: Bearer Token" to the endpoint's host:
	// "" means $HF_TOKEN (none when that is empty too).
	Token string
	// CacheDir holds the downloads: "" means $TROUPE_CACHE, else
	// os.UserCacheDir()/troupe/hub.
	CacheDir string
	// Progress receives a progress bar (bytes, speed) per downloaded file;
	// nil shows none.
	Progress io.Writer
	// OnProgress, when not nil, is called while a file downloads with the
	// file's name in the repository, the bytes it has (a resumed download
	// starts from what was kept) and its size (-1 when the hub announced
	// none). It is called when the transfer starts, after every further
	// ProgressStep bytes (1/100 of the size, at least 32 KiB; 1 MiB when the
	// size is unknown), and once complete, from the downloading goroutine:
	// throttled by bytes, not time, so a caller sees the same calls for the
	// same file. A file already in the cache gives no calls.
	OnProgress func(file string, completed, total int64)
	// Client makes the requests; nil means a client over
	// http.DefaultTransport. Its CheckRedirect is not used for the resolve
	// request, whose redirect is read rather than followed. A Timeout bounds
	// each whole transfer, however large: prefer Download's context.
	Client *http.Client
}

// WithDefaults returns o with its empty fields filled from the environment
// and the defaults.
func (o Options) WithDefaults() Options {
	if o.Endpoint == "" {
		o.Endpoint = os.Getenv("HF_ENDPOINT")
	}
	if o.Endpoint == "" {
		o.Endpoint = DefaultEndpoint
	}
	o.Endpoint = strings.TrimRight(o.Endpoint, "/")
	if o.Token == "" {
		o.Token = strings.TrimSpace(os.Getenv("HF_TOKEN"))
	}
	if o.CacheDir == "" {
		o.CacheDir = os.Getenv("TROUPE_CACHE")
	}
	if o.CacheDir == "" {
		if dir, err := os.UserCacheDir(); err == nil {
			o.CacheDir = filepath.Join(dir, "troupe", "hub")
		}
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	return o
}

// Validate reports options Download cannot work with; call it on
// WithDefaults' result.
func (o Options) Validate() error {
	u, err := url.Parse(o.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("hub: endpoint %q is not an http(s) URL", o.Endpoint)
	}
	if o.CacheDir == "" {
		return fmt.Errorf("hub: no cache directory: set TROUPE_CACHE")
	}
	if strings.ContainsAny(o.Token, "\r\n") {
		return fmt.Errorf("hub: the token contains a line break")
	}
	return nil
}
