package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/troupe-llm/troupe/server/chat"
)

// Ollama's management routes (/api/copy, /api/delete, /api/pull,
// /api/create) and vLLM's runtime LoRA routes, over the manager's index
// (ManagerConfig.Dir's IndexFile).

// needDir is the error of a route that writes the models directory when
// there is none.
func (m *Manager) needDir(w http.ResponseWriter) bool {
	if m.cfg.Dir == "" {
		writeOllamaError(w, badRequest("", "this server has no --models-dir to keep models in"))
		return false
	}
	return true
}

// checkNames refuses a name a model cannot have; fieldNames are pairs of
// a field and its name, checked in order.
func checkNames(fieldNames ...string) *apiError {
	for i := 0; i+1 < len(fieldNames); i += 2 {
		field, name := fieldNames[i], fieldNames[i+1]
		switch {
		case name == "":
			return badRequest(field, "%s is required", field)
		case len(name) > 256:
			return badRequest(field, "%s: a name of at most 256 bytes", field)
		case strings.ContainsFunc(name, func(r rune) bool { return r < ' ' || r == 0x7f }):
			return badRequest(field, "%s: a name without control characters", field)
		}
	}
	return nil
}

// copyRoute serves POST /api/copy {source, destination}: destination
// becomes another name of source (it loads as the same model).
func (m *Manager) copyRoute(w http.ResponseWriter, r *http.Request) {
	var b struct{ Source, Destination string }
	if !m.needDir(w) || !m.decode(w, r, &b, writeOllamaError) {
		return
	}
	if e := checkNames("source", b.Source, "destination", b.Destination); e != nil {
		writeOllamaError(w, e)
		return
	}
	src, dst := canonical(b.Source), canonical(b.Destination)
	err := m.updateIndex(func(index map[string]*modelEntry) error {
		entries, err := m.entries()
		if err != nil {
			return err
		}
		e, ok := entries[src]
		if !ok {
			return notFound("model_not_found", "model '%s' not found", b.Source)
		}
		if _, taken := entries[dst]; taken {
			return badRequest("destination", "destination: a model %q exists already (delete it first)", b.Destination)
		}
		target := e.Name
		if e.Alias != "" {
			target = e.Alias
		}
		index[dst] = &modelEntry{Alias: target, Modified: time.Now()}
		return nil
	})
	if writeIndexError(w, err) {
		return
	}
	m.mu.Lock()
	if in := m.loaded[m.aliasTarget(dst)]; in != nil {
		in.stale = true // its server learns the new name on its next load
	}
	m.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// aliasTarget is the model name names (itself unless it is a copy).
func (m *Manager) aliasTarget(name string) string {
	if r, ok, _ := m.resolve(name); ok {
		return r.entry.Name
	}
	return name
}

// writeIndexError writes err (an *apiError or another) in Ollama's shape;
// false when err is nil.
func writeIndexError(w http.ResponseWriter, err error) bool {
	if err == nil {
		return false
	}
	var e *apiError
	if errors.As(err, &e) {
		writeOllamaError(w, e)
	} else {
		writeOllamaError(w, internal(err))
	}
	return true
}

// readNamed decodes r's body into b, which names a model, for a route
// that writes the models directory; it returns the model's canonical
// name. On failure it has written the error in Ollama's shape.
func (m *Manager) readNamed(w http.ResponseWriter, r *http.Request, b interface{ model() string }) (string, bool) {
	if !m.needDir(w) || !m.decode(w, r, b, writeOllamaError) {
		return "", false
	}
	name := canonical(b.model())
	if e := checkNames("model", name); e != nil {
		writeOllamaError(w, e)
		return "", false
	}
	return name, true
}

// deleteRoute serves DELETE /api/delete {model}: the model's file (a GGUF
// of the directory) or index entry goes; a model running requests is
// refused (409), an idle loaded one unloaded first.
func (m *Manager) deleteRoute(w http.ResponseWriter, r *http.Request) {
	var b modelBody
	name, ok := m.readNamed(w, r, &b)
	if !ok {
		return
	}
	entries, err := m.entries()
	if writeIndexError(w, err) {
		return
	}
	e, ok := entries[name]
	if !ok {
		writeOllamaError(w, notFound("model_not_found", "model '%s' not found", b.model()))
		return
	}
	for _, o := range entries {
		if o.Alias == name {
			writeOllamaError(w, badRequest("model", "the copy %q names %q: delete it first", o.Name, name))
			return
		}
	}
	if e.source == "flag" {
		writeOllamaError(w, badRequest("model", "%q is given on the command line (-m); it cannot be deleted", name))
		return
	}
	if e.Alias == "" { // a copy shares its model's instance: deleting the copy leaves it loaded
		m.mu.Lock()
		in := m.loaded[name]
		if in != nil && in.busy > 0 {
			m.mu.Unlock()
			writeOllamaError(w, &apiError{Status: http.StatusConflict, Type: "invalid_request_error",
				Message: fmt.Sprintf("the model %q is running %d request(s); delete it once they are done", name, in.busy)})
			return
		}
		if in != nil {
			m.removeLocked(in)
		}
		for a, ad := range m.adapters {
			if ad.Base == name {
				delete(m.adapters, a)
			}
		}
		m.mu.Unlock()
		if in != nil {
			<-in.ready
			m.stop(in)
		}
	}
	switch e.source {
	case "dir":
		err = os.Remove(e.Path)
	case "subdir": // its model and projector go, then the subdirectory if nothing else is left
		err = os.Remove(e.Path)
		if err == nil && e.Projector != "" {
			err = os.Remove(e.Projector)
		}
		if err == nil {
			os.Remove(filepath.Dir(e.Path)) // fails, harmlessly, when not empty
		}
	default:
		err = m.updateIndex(func(index map[string]*modelEntry) error {
			delete(index, name)
			return nil
		})
	}
	if writeIndexError(w, err) {
		return
	}
	w.WriteHeader(http.StatusOK)
}

// ndjson writes Ollama's streamed progress lines (or, when not
// streaming, only the last).
type ndjson struct {
	w      http.ResponseWriter
	stream bool
	mu     sync.Mutex
	last   time.Time
}

// newNDJSON starts the progress lines of a request whose stream is
// stream (nil: true), their headers sent when streaming.
func newNDJSON(w http.ResponseWriter, stream *bool) *ndjson {
	out := &ndjson{w: w, stream: stream == nil || *stream}
	if out.stream {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
	}
	return out
}

func (n *ndjson) send(v map[string]any, force bool) {
	if !n.stream {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !force && time.Since(n.last) < 100*time.Millisecond {
		return // progress at most 10 times a second
	}
	n.last = time.Now()
	b, _ := json.Marshal(v)
	n.w.Write(append(b, '\n'))
	http.NewResponseController(n.w).Flush()
}

// done ends the response: the final status, or the error (a stream
// already begun carries it as a line, as Ollama's).
func (n *ndjson) done(e *apiError) {
	if e == nil {
		if n.stream {
			n.send(map[string]any{"status": "success"}, true)
		} else {
			writeJSON(n.w, http.StatusOK, map[string]string{"status": "success"})
		}
		return
	}
	if n.stream {
		n.send(map[string]any{"error": e.Message}, true)
		return
	}
	writeOllamaError(n.w, e)
}

// pullRoute serves POST /api/pull {model, stream}: the model is fetched
// from the hub (ManagerConfig.Pull) with NDJSON progress, and listed under
// the name pulled.
func (m *Manager) pullRoute(w http.ResponseWriter, r *http.Request) {
	var b struct {
		modelBody
		Stream   *bool `json:"stream"`
		Insecure bool  `json:"insecure"`
	}
	if !m.needDir(w) || !m.decode(w, r, &b, writeOllamaError) {
		return
	}
	name := b.model()
	if e := checkNames("model", name); e != nil {
		writeOllamaError(w, e)
		return
	}
	if m.cfg.Pull == nil {
		writeOllamaError(w, &apiError{Status: http.StatusNotImplemented, Type: "invalid_request_error", Message: "this server pulls no models"})
		return
	}
	out := newNDJSON(w, b.Stream)
	out.send(map[string]any{"status": "pulling manifest"}, true)
	path, projector, err := m.pull(r, name, func(status string) { out.send(map[string]any{"status": status}, true) },
		func(file string, completed, total int64) {
			// Every call: Pull's progress is throttled by bytes already.
			out.send(map[string]any{"status": "pulling " + file, "digest": file, "total": total, "completed": completed}, true)
		})
	if err != nil {
		out.done(badRequest("model", "pull %s: %v", name, err))
		return
	}
	out.send(map[string]any{"status": "verifying sha256 digest"}, true)
	out.send(map[string]any{"status": "writing manifest"}, true)
	var mod time.Time
	if st, err := os.Stat(path); err == nil {
		mod = st.ModTime()
	}
	err = m.updateIndex(func(index map[string]*modelEntry) error {
		index[canonical(name)] = &modelEntry{Path: path, Projector: projector, Modified: mod}
		return nil
	})
	if err != nil {
		out.done(internal(err))
		return
	}
	out.done(nil)
}

// pull fetches name from the hub and returns its local path. Names, as
// Ollama takes them (hf.co/, huggingface.co/ or hf://, then):
// OWNER/REPO/FILE.gguf, one file; OWNER/REPO[:QUANT], the repository's
// GGUF of that quant (chooseGGUF; no tag: Q4_K_M, else the first of
// defaultQuants it has). A revision may follow the repository
// (OWNER/REPO@REV[:QUANT]). status reports what was chosen; progress the
// bytes of each file as they arrive (the hub verifies the sha256 before Pull
// returns). When the repository has a projector (an mmproj GGUF; several:
// the F16 one, else the first by name) it is pulled too, as llama-server's
// -hf does, and its local path returned with the model's (listing the
// repository needs ListRepo; without it a named file is pulled alone).
func (m *Manager) pull(r *http.Request, name string, status func(string), progress func(file string, completed, total int64)) (path, projector string, err error) {
	uri, file, proj, err := m.pullURIs(r, name, status)
	if err != nil {
		return "", "", err
	}
	if path, err = m.cfg.Pull(r.Context(), uri, func(completed, total int64) { progress(file, completed, total) }); err != nil {
		return "", "", err
	}
	if proj == "" {
		return path, "", nil
	}
	pfile := proj[strings.LastIndex(proj, "/")+1:]
	projector, err = m.cfg.Pull(r.Context(), proj, func(completed, total int64) { progress(pfile, completed, total) })
	if err != nil {
		return "", "", fmt.Errorf("its projector %s: %w", pfile, err)
	}
	return path, projector, nil
}

// pullURIs resolves name (as pull takes it) to the hf:// URI of its GGUF
// file and of the repository's projector ("" when it has none).
func (m *Manager) pullURIs(r *http.Request, name string, status func(string)) (uri, file, projector string, err error) {
	return HubURIs(r.Context(), name, m.cfg.ListRepo, status)
}

// HubURIs is pull's resolution of name (hf.co/OWNER/REPO[:QUANT], hf.co/
// OWNER/REPO/FILE.gguf; huggingface.co/ or hf:// for hf.co/) for troupe
// run too: the hf:// URI of its GGUF file, the file, and the hf:// URI of
// the repository's projector ("" when it has none). list lists a
// repository (as Config.ListRepo; nil: quant tags are not resolved).
func HubURIs(ctx context.Context, name string, list func(ctx context.Context, uri string) ([]string, error), status func(string)) (uri, file, projector string, err error) {
	rest, ok := "", false
	for _, p := range []string{"hf://", "hf.co/", "huggingface.co/", "https://huggingface.co/", "https://hf.co/"} {
		if rest, ok = strings.CutPrefix(name, p); ok {
			break
		}
	}
	if !ok {
		return "", "", "", fmt.Errorf("want hf.co/OWNER/REPO[:QUANT] or hf.co/OWNER/REPO/FILE.gguf (Ollama's registry is not reached)")
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return "", "", "", fmt.Errorf("want hf.co/OWNER/REPO[:QUANT] or hf.co/OWNER/REPO/FILE.gguf")
	}
	repo, tag, _ := strings.Cut(parts[1], ":")
	repoURI := "hf://" + parts[0] + "/" + repo // hub.ParseURI takes OWNER/REPO@REV/FILE
	id, _, _ := strings.Cut(parts[0]+"/"+repo, "@")
	var files []string
	if len(parts) == 3 { // OWNER/REPO[@REV]/FILE.gguf[@REV]
		file, _, _ = strings.Cut(parts[2], "@")
		if !strings.HasSuffix(strings.ToLower(file), ".gguf") {
			return "", "", "", fmt.Errorf("%s is not a .gguf file: name a GGUF file, or the repository with a quant (hf.co/OWNER/REPO:Q4_K_M)", file)
		}
		uri, repoURI = "hf://"+rest, "hf://"+parts[0]+"/"+parts[1]
		if list != nil { // for its projector
			if files, err = list(ctx, repoURI); err != nil {
				status(fmt.Sprintf("the repository's files are not listed (%v): its projector, if any, is not pulled", err))
				files = nil
			}
		}
	} else { // OWNER/REPO[@REV][:QUANT]
		if list == nil {
			return "", "", "", fmt.Errorf("this server resolves no quant tags: name the file, hf.co/OWNER/REPO/FILE.gguf")
		}
		if files, err = list(ctx, repoURI); err != nil {
			return "", "", "", err
		}
		if file, err = chooseGGUF(id, files, tag); err != nil {
			return "", "", "", err
		}
		uri = repoURI + "/" + file
	}
	if _, proj := ggufFiles(files); len(proj) > 0 && !strings.Contains(strings.ToLower(path.Base(file)), "mmproj") {
		p := chooseProjector(proj)
		status(fmt.Sprintf("the repository has a projector: pulling %s too (images)", p))
		projector = repoURI + "/" + p
	}
	return uri, file, projector, nil
}

// createRequest is Ollama's /api/create body: the current fields (from,
// template, system, parameters, adapters) and the older modelfile.
type createRequest struct {
	modelBody
	From       string            `json:"from"`
	Modelfile  string            `json:"modelfile"`
	Template   string            `json:"template"`
	System     string            `json:"system"`
	Parameters map[string]any    `json:"parameters"`
	Adapters   map[string]string `json:"adapters"`
	Files      map[string]string `json:"files"`
	Quantize   string            `json:"quantize"`
	License    any               `json:"license"`
	Messages   []any             `json:"messages"`
	Stream     *bool             `json:"stream"`
	Path       string            `json:"path"`
}

// createRoute serves POST /api/create: a new model from an existing one or
// a GGUF path, with a Modelfile's TEMPLATE (a Jinja chat template), SYSTEM,
// PARAMETERs that map onto the sampling defaults and num_ctx, and ADAPTERs
// (LoRA files applied to every request). Anything else is a 400 naming it.
func (m *Manager) createRoute(w http.ResponseWriter, r *http.Request) {
	var b createRequest
	name, ok := m.readNamed(w, r, &b)
	if !ok {
		return
	}
	for field, set := range map[string]bool{"files": len(b.Files) > 0, "quantize": b.Quantize != "", "license": b.License != nil,
		"messages": len(b.Messages) > 0, "path": b.Path != ""} {
		if set {
			writeOllamaError(w, badRequest(field, "%s is not supported by this server's /api/create (from, modelfile, template, system, parameters and adapters are)", field))
			return
		}
	}
	mf := modelfile{From: b.From, Template: b.Template, System: b.System, Params: map[string][]string{}}
	if b.Modelfile != "" {
		parsed, e := parseModelfile(b.Modelfile)
		if e != nil {
			writeOllamaError(w, e)
			return
		}
		if mf.From == "" {
			mf.From = parsed.From
		}
		if mf.Template == "" {
			mf.Template = parsed.Template
		}
		if mf.System == "" {
			mf.System = parsed.System
		}
		mf.Adapters, mf.Params = parsed.Adapters, parsed.Params
	}
	for k, v := range b.Parameters {
		switch v := v.(type) {
		case []any:
			for _, x := range v {
				mf.Params[k] = append(mf.Params[k], fmt.Sprint(x))
			}
		default:
			mf.Params[k] = append(mf.Params[k], fmt.Sprint(v))
		}
	}
	for _, p := range b.Adapters {
		mf.Adapters = append(mf.Adapters, p)
	}
	entry, e := m.entryFrom(mf)
	if e != nil {
		writeOllamaError(w, e)
		return
	}
	err := m.updateIndex(func(index map[string]*modelEntry) error {
		entries, err := m.entries()
		if err != nil {
			return err
		}
		if old, ok := entries[name]; ok && old.source != "index" {
			return badRequest("model", "a model %q exists already and is not one /api/create made", name)
		}
		index[name] = entry
		return nil
	})
	if writeIndexError(w, err) {
		return
	}
	m.mu.Lock()
	if in := m.loaded[name]; in != nil {
		in.stale = true // replaced: the next request loads the new one
	}
	m.mu.Unlock()
	out := newNDJSON(w, b.Stream)
	out.send(map[string]any{"status": "writing manifest"}, true) // streamed only
	out.done(nil)
}

// modelfile is what parseModelfile reads.
type modelfile struct {
	From, Template, System string
	Adapters               []string
	Params                 map[string][]string
}

// parseModelfile reads Ollama's Modelfile: FROM, ADAPTER, TEMPLATE, SYSTEM
// and PARAMETER lines (quoted """...""" values over several lines); another
// instruction is a 400 naming it.
func parseModelfile(src string) (modelfile, *apiError) {
	mf := modelfile{Params: map[string][]string{}}
	sc := bufio.NewScanner(strings.NewReader(src))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		instr, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		if strings.HasPrefix(rest, `"""`) {
			body := strings.TrimPrefix(rest, `"""`)
			for !strings.Contains(body, `"""`) && sc.Scan() {
				body += "\n" + sc.Text()
			}
			v, _, ok := strings.Cut(body, `"""`)
			if !ok {
				return mf, badRequest("modelfile", "modelfile: %s: an unterminated \"\"\"", instr)
			}
			rest = v
		} else if len(rest) >= 2 && rest[0] == '"' && rest[len(rest)-1] == '"' {
			rest = rest[1 : len(rest)-1]
		}
		switch strings.ToUpper(instr) {
		case "FROM":
			mf.From = rest
		case "ADAPTER":
			mf.Adapters = append(mf.Adapters, rest)
		case "TEMPLATE":
			mf.Template = rest
		case "SYSTEM":
			mf.System = rest
		case "PARAMETER":
			k, v, _ := strings.Cut(rest, " ")
			mf.Params[strings.ToLower(k)] = append(mf.Params[strings.ToLower(k)], strings.Trim(strings.TrimSpace(v), `"`))
		default:
			return mf, badRequest("modelfile", "modelfile: the instruction %s is not supported (FROM, ADAPTER, TEMPLATE, SYSTEM and PARAMETER are)", strings.ToUpper(instr))
		}
	}
	if err := sc.Err(); err != nil {
		return mf, badRequest("modelfile", "modelfile: %v", err)
	}
	return mf, nil
}

// entryFrom makes an entry of mf: FROM an existing model (its settings
// are the base) or a GGUF path; parameters checked as serve's flags are.
func (m *Manager) entryFrom(mf modelfile) (*modelEntry, *apiError) {
	if mf.From == "" {
		return nil, badRequest("from", "from (a model name or a GGUF path) is required")
	}
	entries, err := m.entries()
	if err != nil {
		return nil, internal(err)
	}
	var e modelEntry
	if base, ok := entries[canonical(mf.From)]; ok {
		if base.Alias != "" {
			base = entries[base.Alias]
		}
		if base == nil {
			return nil, badRequest("from", "from %q names a copy of a missing model", mf.From)
		}
		e = *base
		e.Adapters = append([]string(nil), base.Adapters...)
	} else {
		if strings.HasPrefix(mf.From, "@") || strings.HasPrefix(mf.From, "sha256") {
			return nil, badRequest("from", "from %q: blobs are not supported; give a model name or a GGUF path", mf.From)
		}
		path, ok := m.localPath(mf.From)
		if !ok {
			return nil, badRequest("from", "from %q is neither a model of this server nor a GGUF file of --models-dir (or one given with -m)", mf.From)
		}
		st, err := os.Stat(path)
		if err != nil || st.IsDir() || !strings.HasSuffix(path, ".gguf") {
			return nil, badRequest("from", "from %q is neither a model of this server nor a GGUF file", mf.From)
		}
		e = modelEntry{Path: path}
	}
	e.Alias, e.Modified = "", time.Now()
	if mf.Template != "" {
		if _, err := chat.Parse(mf.Template); err != nil {
			return nil, badRequest("template", "template: not a Jinja chat template (Ollama's Go templates are not supported): %v", err)
		}
		e.Template = mf.Template
	}
	if mf.System != "" {
		if strings.ContainsFunc(mf.System, func(r rune) bool { return r < ' ' && r != '\n' && r != '\r' && r != '\t' }) {
			return nil, badRequest("system", "system: control characters other than newlines and tabs are not supported")
		}
		e.System = mf.System
	}
	for _, a := range mf.Adapters {
		path, ok := m.localPath(a)
		if !ok {
			return nil, badRequest("adapters", "adapter %q is not a file of --models-dir", a)
		}
		if _, err := os.Stat(path); err != nil {
			return nil, badRequest("adapters", "adapter %q: %v", a, err)
		}
		e.Adapters = append(e.Adapters, path)
	}
	if e := setParams(&e, mf.Params); e != nil {
		return nil, e
	}
	return &e, nil
}

// localPath is the file a Modelfile's path names (relative to the models
// directory), when /api/create may read it: a file inside --models-dir once
// every symlink is resolved (no way out by ".." or by a linked directory),
// a GGUF entry of the directory itself (it may be a link to its model
// elsewhere), or a file given with -m. Anything else is false: a client
// names no other file of the server's machine.
func (m *Manager) localPath(p string) (string, bool) {
	if m.cfg.Dir == "" || p == "" {
		return "", false
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(m.cfg.Dir, p)
	}
	p = filepath.Clean(p)
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", false
	}
	dir, err := filepath.EvalSymlinks(m.cfg.Dir)
	if err != nil {
		return "", false
	}
	if rel, err := filepath.Rel(dir, real); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return real, true
	}
	var allowed []string // the directory's own entries and -m's files
	if files, err := os.ReadDir(m.cfg.Dir); err == nil {
		for _, f := range files {
			allowed = append(allowed, filepath.Join(m.cfg.Dir, f.Name()))
		}
	}
	for _, s := range m.cfg.Models {
		allowed = append(allowed, s.Path)
	}
	for _, a := range allowed {
		if r, err := filepath.EvalSymlinks(a); err == nil && r == real {
			return real, true
		}
	}
	return "", false
}

// setParams maps a Modelfile's PARAMETERs onto e: the sampling defaults
// and num_ctx; another is a 400 naming it.
func setParams(e *modelEntry, params map[string][]string) *apiError {
	for k, vs := range params {
		v := vs[len(vs)-1]
		bad := func() *apiError { return badRequest("parameters", "parameter %s %q: want a number", k, v) }
		f, ferr := strconv.ParseFloat(v, 64)
		switch k {
		case "temperature", "top_p", "min_p", "repeat_penalty":
			if ferr != nil {
				return bad()
			}
			ptr := map[string]**float64{"temperature": &e.Defaults.Temperature, "top_p": &e.Defaults.TopP,
				"min_p": &e.Defaults.MinP, "repeat_penalty": &e.Defaults.RepetitionPenalty}[k]
			*ptr = &f
		case "top_k", "num_ctx":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return badRequest("parameters", "parameter %s %q: want a whole number", k, v)
			}
			if k == "top_k" {
				e.Defaults.TopK = &n
			} else {
				e.NumCtx = n
			}
		case "seed":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return bad()
			}
			e.Defaults.Seed = &n
		default:
			return badRequest("parameters", "parameter %s is not supported (temperature, top_k, top_p, min_p, repeat_penalty, seed and num_ctx are)", k)
		}
	}
	d := &e.Defaults
	if d.Seed != nil && *d.Seed < 0 {
		d.Seed = nil // -1: random
	}
	for _, c := range []struct {
		name    string
		v       *float64
		lo, hi  float64
		openLow bool
	}{{"temperature", d.Temperature, 0, 2, false}, {"top_p", d.TopP, 0, 1, true}, {"min_p", d.MinP, 0, 1, false},
		{"repeat_penalty", d.RepetitionPenalty, 0, 10, true}} {
		if c.v != nil && !((*c.v > c.lo || !c.openLow && *c.v == c.lo) && *c.v <= c.hi) {
			return badRequest("parameters", "parameter %s %v is out of range (at most %v)", c.name, *c.v, c.hi)
		}
	}
	return nil
}
