// Package hub downloads models from the Hugging Face hub into a local cache,
// for `troupe serve -m hf://OWNER/REPO/FILE` (one file, typically a GGUF) and
// `hf://OWNER/REPO` (a safetensors directory).
//
// URLs follow huggingface_hub: a file is fetched from
// {endpoint}/{owner}/{repo}/resolve/{revision}/{file}. The hub answers that
// URL for a large (LFS) file with a redirect to a CDN and the headers
// X-Linked-Etag (the file's sha256) and X-Linked-Size; a small file is served
// directly with an ETag (its git blob id). Every resolve answer carries
// X-Repo-Commit. Download first asks with HEAD (following only relative
// redirects, which the hub uses for renamed repositories), then GETs the
// bytes; the token is sent to the endpoint's host only, never to the CDN.
// The directory form lists the repository with
// GET {endpoint}/api/models/{owner}/{repo}/revision/{revision} and fetches
// config.json, tokenizer.json, tokenizer_config.json, generation_config.json
// and chat_template.jinja when present, and the weights: the shards named by
// model.safetensors.index.json when there is one, else model.safetensors,
// else every *.safetensors file at the repository's root. ListFiles returns
// that listing (for a caller choosing a file, as /api/pull does for
// hf.co/OWNER/REPO:QUANT). Options.Progress draws a terminal bar per file;
// Options.OnProgress gives a caller the byte counts, every 1% of the file.
//
// # Cache layout
//
// The cache is huggingface_hub's, so a Hugging Face cache directory can be
// shared (TROUPE_CACHE=~/.cache/huggingface/hub):
//
//	{cache}/models--{owner}--{repo}/
//	    blobs/{etag}                     file contents, named by sha256 (LFS) or git blob id
//	    blobs/{etag}.incomplete          a download in progress, resumed with a Range request
//	    refs/{revision}                  the commit a branch or tag resolved to
//	    snapshots/{commit}/{file}        relative symlink to ../../blobs/{etag} (hard link where symlinks fail)
//	    .troupe/{commit}.json            troupe's own: the files a directory download completed
//
// A file found complete in the cache is returned without any network access:
// a branch such as "main" is resolved through refs/ once and not checked for
// new commits afterwards. To follow a branch, remove refs/{branch} (or the
// repository's directory); to pin, name a commit.
//
// Integrity: the bytes of a file whose etag is a sha256 are hashed as they
// arrive (and the kept part of a resumed download is hashed first); a
// mismatch, or a size other than the announced one, deletes the partial file
// and is an error wrapping ErrChecksum. Small files without a sha256 are
// checked for size only.
//
// Concurrency: Download is safe to call from several goroutines, for
// different files. Two downloads of the same file into the same cache at the
// same time (in one process or several) are not coordinated and may spoil
// each other's partial file; the checksum then fails and a rerun fixes it.
package hub
