// Package webui is troupe serve's web page: a chat (streaming through
// /v1/chat/completions, conversations kept in the browser's localStorage;
// images pasted, dropped or picked go as image_url parts with data: URLs,
// and a model without a projector answers the server's 400 on the reply;
// the model picked from /v1/models when the server serves several) and a
// live view of the actor runtime (the /v1/live event stream). The
// page is hand-written HTML, CSS and JavaScript embedded in the binary: it
// needs no network, at build time or when it runs.
//
// Concurrency: Handler's handler is safe for concurrent use; it only reads
// the embedded files.
package webui
