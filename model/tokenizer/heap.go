package tokenizer

// heapPush adds x to q, a binary min-heap ordered by less (the merge queues
// of bpe.go and spm.go), and returns the grown heap.
func heapPush[T any](q []T, x T, less func(a, b T) bool) []T {
	q = append(q, x)
	for i := len(q) - 1; i > 0; { // sift up
		p := (i - 1) / 2
		if !less(q[i], q[p]) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
	return q
}

// heapPop removes the least element of the non-empty heap q; it returns that
// element and the shrunk heap.
func heapPop[T any](q []T, less func(a, b T) bool) (T, []T) {
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q = q[:last]
	for i := 0; ; { // sift down
		c := 2*i + 1
		if c >= len(q) {
			break
		}
		if c+1 < len(q) && less(q[c+1], q[c]) {
			c++
		}
		if !less(q[c], q[i]) {
			break
		}
		q[i], q[c] = q[c], q[i]
		i = c
	}
	return top, q
}
