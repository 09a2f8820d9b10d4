package tracemodel

import "sort"

// TopK keeps the K smallest items under Less, in bounded memory: a max-heap whose root
// is the largest kept item. The trace family's ranked pages and the Nsight Systems
// reader's native pages of a parquetdir select with it.
type TopK[T any] struct {
	K    int
	Less func(a, b *T) bool
	// Own makes a kept item independent of the reader's reused buffers (nil: items own
	// what they hold).
	Own   func(*T)
	items []T
}

// Offer keeps v when it is among the K smallest seen; only a kept item is owned, so
// rejected candidates cost no copy.
func (h *TopK[T]) Offer(v *T) {
	if h.K <= 0 {
		return
	}
	if len(h.items) < h.K {
		if h.Own != nil {
			h.Own(v)
		}
		h.items = append(h.items, *v)
		h.up(len(h.items) - 1)
		return
	}
	if h.Less(v, &h.items[0]) {
		if h.Own != nil {
			h.Own(v)
		}
		h.items[0] = *v
		h.down(0)
	}
}

// up and down restore the max-heap order (the root is the largest item) after item j
// changed.
func (h *TopK[T]) up(j int) {
	for j > 0 {
		p := (j - 1) / 2
		if !h.Less(&h.items[p], &h.items[j]) {
			break
		}
		h.items[p], h.items[j] = h.items[j], h.items[p]
		j = p
	}
}

func (h *TopK[T]) down(j int) {
	n := len(h.items)
	for {
		l := 2*j + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && h.Less(&h.items[l], &h.items[r]) {
			c = r
		}
		if !h.Less(&h.items[j], &h.items[c]) {
			return
		}
		h.items[j], h.items[c] = h.items[c], h.items[j]
		j = c
	}
}

// Sorted returns the kept items in ascending order.
func (h *TopK[T]) Sorted() []T {
	out := append([]T(nil), h.items...)
	sort.Slice(out, func(i, j int) bool { return h.Less(&out[i], &out[j]) })
	return out
}
