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

func (l *lru) put(key string, val *record) {
	if e, ok := l.items[key]; ok {
		e.Value.(*lruEntry).val = val
		l.order.MoveToFront(e)
		return
	}
	l.items[key] = l.order.PushFront(&lruEntry{key, val})
	for l.order.Len() > l.max {
		old := l.order.Back()
		l.order.Remove(old)
		delete(l.items, old.Value.(*lruEntry).key)
	}
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
