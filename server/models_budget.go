package server

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// The manager's memory budget (ManagerConfig.MaxBytes, serve's
// --models-memory): what each model costs, measured before it loads
// (ManagerConfig.Size), and which idle models go to make room.
//
// Accounting, under Manager.mu: a loaded or loading model counts its size
// from the moment acquire makes its instance; a model being unloaded counts
// in Manager.freeing until its runtime has stopped (stop); a busy model
// replaced by a new version (retiring) counts until it is idle and stopped.
// The victims evicted for a load are stopped by the load's goroutine before
// it opens the new model, so the memory in use stays within the budget while
// the accounting, which still counts them, may briefly read above it.

// ModelSize is the memory a loaded model takes, as the budget counts it.
type ModelSize struct {
	Weights  int64 // the model file's bytes (mapped), and its projector's
	KV       int64 // the KV pool: every device's blocks, and the host tier for swap
	Adapters int64 // its LoRA adapter files
}

// Total is the bytes the budget counts.
func (s ModelSize) Total() int64 { return s.Weights + s.KV + s.Adapters }

// String is s for an error message: the total and its parts.
func (s ModelSize) String() string {
	out := fmt.Sprintf("%s (%s weights, %s KV cache", HumanBytes(s.Total()), HumanBytes(s.Weights), HumanBytes(s.KV))
	if s.Adapters > 0 {
		out += ", " + HumanBytes(s.Adapters) + " adapters"
	}
	return out + ")"
}

// ErrOverBudget is NewManager's error when a model given by name (-m), or
// every model, needs more memory than ManagerConfig.MaxBytes.
var ErrOverBudget = errors.New("over the memory budget")

// HumanBytes writes n as Ollama and llama.cpp print sizes: binary units,
// two decimals ("1.50 GiB").
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, i := float64(n)/unit, 0
	for f >= unit && i < 4 {
		f /= unit
		i++
	}
	return fmt.Sprintf("%.2f %ciB", f, "KMGTP"[i])
}

// specKey identifies what spec loads, files' sizes and times included
// (a file replaced by a pull is measured again).
func specKey(spec LoadSpec) string {
	var b strings.Builder
	file := func(p string) {
		fmt.Fprintf(&b, "%q", p)
		if st, err := os.Stat(p); err == nil {
			fmt.Fprintf(&b, ":%d:%d", st.Size(), st.ModTime().UnixNano())
		}
		b.WriteByte(';')
	}
	file(spec.Path)
	if spec.Projector != "" {
		b.WriteString("projector:")
		file(spec.Projector)
	}
	for _, a := range spec.Adapters {
		file(a.Path)
	}
	fmt.Fprintf(&b, "ctx=%d", spec.MaxModelLen)
	return b.String()
}

// measured is spec's size from the cache; ok false when it must be
// measured first (outside the lock: see acquire). With no Size function
// every model is 0 bytes.
func (m *Manager) measured(spec LoadSpec) (ModelSize, bool) {
	if m.cfg.Size == nil {
		return ModelSize{}, true
	}
	s, ok := m.sizes[specKey(spec)]
	return s, ok
}

// measure runs the Size function on spec and caches what it says.
func (m *Manager) measure(spec LoadSpec) (ModelSize, error) {
	key := specKey(spec)
	s, err := m.cfg.Size(spec)
	if err != nil {
		return s, err
	}
	m.mu.Lock()
	m.sizes[key] = s
	m.mu.Unlock()
	return s, nil
}

// tooLarge is the error for a model that alone needs more than the budget.
func (m *Manager) tooLarge(name string, s ModelSize) *apiError {
	e := badRequest("model", "the model %q needs %s, more than the memory budget of %s (--models-memory): it cannot be loaded",
		name, s, HumanBytes(m.cfg.MaxBytes))
	e.Code = strp("model_too_large")
	return e
}

// usedLocked is the memory the budget counts as taken now.
func (m *Manager) usedLocked() int64 {
	n := m.freeing
	for _, in := range m.loaded {
		n += in.size.Total()
	}
	for _, in := range m.retiring {
		n += in.size.Total()
	}
	return n
}

// planLocked chooses the idle models to evict, least recently used first,
// so that a model of need bytes fits both bounds (the count and the bytes).
// wait: it does not fit yet, but models being unloaded will free memory
// (retry once one has stopped); neither: every model in the way is busy
// (wait in the queue for one to be idle, models_queue.go).
func (m *Manager) planLocked(need int64) (victims []*instance, wait, ok bool) {
	var idle []*instance
	for _, in := range m.loaded {
		if in.busy == 0 {
			idle = append(idle, in)
		}
	}
	slices.SortFunc(idle, func(a, b *instance) int { return a.used.Compare(b.used) })
	count, used := len(m.loaded), m.usedLocked()
	over := func() bool { return m.cfg.MaxBytes > 0 && used+need > m.cfg.MaxBytes }
	for count >= m.cfg.MaxLoaded || over() {
		if len(idle) == 0 {
			return nil, count < m.cfg.MaxLoaded && m.freeing > 0, false
		}
		v := idle[0]
		idle = idle[1:]
		victims = append(victims, v)
		count--
		used -= v.size.Total()
	}
	return victims, false, true
}

// busyError is acquire's 503 when the models in the way are all busy and
// the queue is off (MaxQueue 0).
func (m *Manager) busyError(name string, need int64) *apiError {
	if m.cfg.MaxBytes > 0 && len(m.loaded) < m.cfg.MaxLoaded {
		return unavailable(fmt.Sprintf("the model %q needs %s; %s of the memory budget of %s (--models-memory) is held by busy models; try again",
			name, HumanBytes(need), HumanBytes(m.usedLocked()), HumanBytes(m.cfg.MaxBytes)))
	}
	return unavailable(fmt.Sprintf("all %d loaded models are busy (--max-loaded-models %d); try again", len(m.loaded), m.cfg.MaxLoaded))
}

// removeLocked takes in out of the loaded models (or the retiring ones):
// its memory counts as being freed until stop has stopped it.
func (m *Manager) removeLocked(in *instance) {
	if m.loaded[in.name] == in {
		delete(m.loaded, in.name)
	}
	if i := slices.Index(m.retiring, in); i >= 0 {
		m.retiring = slices.Delete(m.retiring, i, i+1)
	}
	m.freeing += in.size.Total()
}

// freed ends the accounting of a model stop has unloaded, and wakes the
// queue's head (it may wait for that memory, or that place).
func (m *Manager) freed(in *instance) {
	m.mu.Lock()
	m.freeing -= in.size.Total()
	m.wakeLocked()
	m.mu.Unlock()
}

// checkBudget measures every model at start: a model given by name that
// cannot fit, or a budget too small for any model, is ErrOverBudget; a
// model of the directory that cannot fit is logged (its requests are 400s).
func (m *Manager) checkBudget(entries map[string]*modelEntry) error {
	if m.cfg.MaxBytes <= 0 {
		return nil
	}
	smallest, smallestName := ModelSize{}, ""
	var over []string // the directory's models that cannot fit: logged when others can
	for _, name := range sortedKeys(entries) {
		e := entries[name]
		if e.Alias != "" {
			continue
		}
		s, err := m.measure(m.specOf(e, m.adapterNames(e.Name)))
		if err != nil {
			m.cfg.Server.Log.Warn().Err(err).Str("model", name).Msg("measuring the model's memory; it fails when it loads")
			continue
		}
		if s.Total() > m.cfg.MaxBytes {
			if e.source == "flag" {
				return fmt.Errorf("server: %w: the model %q needs %s, more than --models-memory %s", ErrOverBudget, name, s, HumanBytes(m.cfg.MaxBytes))
			}
			over = append(over, name)
		}
		if smallestName == "" || s.Total() < smallest.Total() {
			smallest, smallestName = s, name
		}
	}
	if smallestName != "" && smallest.Total() > m.cfg.MaxBytes {
		return fmt.Errorf("server: %w: the smallest model, %q, needs %s, more than --models-memory %s", ErrOverBudget,
			smallestName, smallest, HumanBytes(m.cfg.MaxBytes))
	}
	for _, name := range over {
		m.cfg.Server.Log.Warn().Str("model", name).Int64("budget", m.cfg.MaxBytes).
			Msg("the model needs more memory than --models-memory: requests for it are refused")
	}
	return nil
}
