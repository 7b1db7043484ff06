package actors

// kvWindow is the sliding window behind which every device frees a
// sequence's blocks (WindowBackend), 0 when some device keeps them all.
func (r *Runtime) kvWindow() int {
	w := 0
	for i, be := range r.devices {
		wb, ok := be.(WindowBackend)
		if !ok || wb.KVWindow() == 0 || i > 0 && wb.KVWindow() != w {
			return 0
		}
		w = wb.KVWindow()
	}
	return w
}
