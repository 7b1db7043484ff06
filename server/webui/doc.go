// Package webui is troupe serve's web page: a chat (streaming through
// /v1/chat/completions, conversations kept in the browser's localStorage)
// and a live view of the actor runtime (the /v1/live event stream). The
// page is hand-written HTML, CSS and JavaScript embedded in the binary: it
// needs no network, at build time or when it runs.
//
// Concurrency: Handler's handler is safe for concurrent use; it only reads
// the embedded files.
package webui
