package server

// Busy is how many requests hold the model name (-1: not loaded), for the
// manager's tests.
func (m *Manager) Busy(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if in := m.loaded[name]; in != nil {
		return in.busy
	}
	return -1
}

// Queued is how many requests wait in the queue for their model to load,
// for the manager's tests.
func (m *Manager) Queued() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.queue)
}
