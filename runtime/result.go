package runtime

import (
	"container/list"
	"encoding/json"

	gen "github.com/flameox/flameox/generated/contracts"
)

// Result is the success envelope of an analysis tool, in the field order of the contract.
type Result struct {
	Status       string          `json:"status"`
	AnalysisID   string          `json:"analysis_id,omitempty"`
	Operation    string          `json:"operation"`
	Provider     gen.Provider    `json:"provider"`
	Inputs       []gen.Input     `json:"inputs"`
	Blocks       []any           `json:"blocks"`
	Coverage     gen.Coverage    `json:"coverage"`
	Truncation   *gen.Truncation `json:"truncation"`
	Limitations  []string        `json:"limitations"`
	Continuation *string         `json:"continuation"`
	NextPage     *gen.NextPage   `json:"next_page"`
	Preserved    *gen.Preserved  `json:"preserved,omitempty"`

	// Token is the continuation for the next page ("" when complete). Transports decide
	// where it appears: MCP keeps it only inside next_page.arguments.
	Token string `json:"-"`
}

// MetricsBlock holds operation-level figures.
type MetricsBlock struct {
	Type   string         `json:"type"`
	Values map[string]any `json:"values"`
}

// TableBlock holds the page of rows.
type TableBlock struct {
	Type string            `json:"type"`
	Rows []json.RawMessage `json:"rows"`
}

// tableBlock is the table of a page: a page without rows has "rows": [] (the contract's
// rows is a list: an empty page is an empty list, never null).
func tableBlock(rows []json.RawMessage) TableBlock {
	if rows == nil {
		rows = []json.RawMessage{}
	}
	return TableBlock{Type: "table", Rows: rows}
}

// lru is a bounded least-recently-used map of session analyses.
type lru struct {
	max   int
	order *list.List
	items map[string]*list.Element
}

type lruEntry struct {
	key string
	val *record
}

func newLRU(max int) *lru {
	return &lru{max: max, order: list.New(), items: map[string]*list.Element{}}
}

// put stores val under key and returns the records it evicted.
func (l *lru) put(key string, val *record) []*record {
	if e, ok := l.items[key]; ok {
		e.Value.(*lruEntry).val = val
		l.order.MoveToFront(e)
		return nil
	}
	l.items[key] = l.order.PushFront(&lruEntry{key, val})
	var evicted []*record
	for l.order.Len() > l.max {
		evicted = append(evicted, l.removeBack())
	}
	return evicted
}

func (l *lru) removeBack() *record {
	old := l.order.Back()
	l.order.Remove(old)
	delete(l.items, old.Value.(*lruEntry).key)
	return old.Value.(*lruEntry).val
}

// evictUsing removes least-recently-used records that hold scratch until enough reports
// true, and returns them.
func (l *lru) evictUsing(holds func(*record) bool, enough func() bool) []*record {
	var out []*record
	for e := l.order.Back(); e != nil && !enough(); {
		prev := e.Prev()
		if r := e.Value.(*lruEntry).val; holds(r) {
			l.order.Remove(e)
			delete(l.items, e.Value.(*lruEntry).key)
			out = append(out, r)
		}
		e = prev
	}
	return out
}

func (l *lru) get(key string) (*record, bool) {
	e, ok := l.items[key]
	if !ok {
		return nil, false
	}
	l.order.MoveToFront(e)
	return e.Value.(*lruEntry).val, true
}

// rescueKey identifies a rescue request.
type rescueKey struct{ analysisID, destination string }

// rescueMemo remembers rescue handoffs in insertion order, oldest dropped first.
type rescueMemo struct {
	max   int
	order []rescueKey
	items map[rescueKey]*gen.RescueResult
}

func newRescueMemo(max int) *rescueMemo {
	return &rescueMemo{max: max, items: map[rescueKey]*gen.RescueResult{}}
}

func (m *rescueMemo) put(k rescueKey, v *gen.RescueResult) {
	if _, ok := m.items[k]; !ok {
		m.order = append(m.order, k)
	}
	m.items[k] = v
	for len(m.order) > m.max {
		delete(m.items, m.order[0])
		m.order = m.order[1:]
	}
}

// all returns the cached records, most recently used first, without changing recency.
func (l *lru) all() []*record {
	out := make([]*record, 0, l.order.Len())
	for e := l.order.Front(); e != nil; e = e.Next() {
		out = append(out, e.Value.(*lruEntry).val)
	}
	return out
}
