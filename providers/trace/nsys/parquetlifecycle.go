package nsys

import (
	"context"

	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// sessionStart is db.sessionStart on a parquetdir: the first row's utcEpochNs.
func (p *parquetRead) sessionStart() (int64, bool, error) {
	var start OptInt
	_, err := p.scan("TARGET_INFO_SESSION_START_TIME", []pqColumn{intCol("utcEpochNs")}, func(_ int64, v []pqValue) error {
		start = v[0].num()
		return errStop
	})
	return start.n, start.ok, err
}

// parquetLifecycleFigures is db.lifecycleFigures on a parquetdir.
func parquetLifecycleFigures(ctx context.Context, in providers.Input) (LifecycleFigures, error) {
	var fig LifecycleFigures
	p, err := openParquet(ctx, in)
	if err != nil {
		return fig, err
	}
	if fig.Epoch, fig.UTC, err = p.sessionStart(); err != nil {
		return fig, err
	}
	_, err = p.sliceUnion(nil, func(s *pqSlice) error {
		t := &fig.Tables[s.tab]
		t.Rows++
		if start, stop := s.get(sStart), s.get(sStop); start.ok && stop.ok && stop.n >= start.n {
			t.Valid++
		}
		return nil
	})
	return fig, err
}

// pqTransition is a lifecycle transition as the native reader holds it.
type pqTransition struct {
	s     pqSlice
	t, tr int64
}

// lifecycle is the lifecycle query's rows from offset up to end, in its order (time,
// span id, transition).
func (p *parquetRead) lifecycle(offset, end int64) ([]Transition, error) {
	enum, err := p.memcpyEnum(false)
	if err != nil {
		return nil, err
	}
	h := &tracemodel.TopK[pqTransition]{K: int(end), Less: func(a, b *pqTransition) bool {
		if a.t != b.t {
			return a.t < b.t
		}
		if a.s.id != b.s.id {
			return a.s.id < b.s.id
		}
		return a.tr < b.tr
	}}
	bases, err := p.sliceUnion(enum, func(s *pqSlice) error {
		start, stop := s.get(sStart), s.get(sStop)
		if start.ok && stop.ok && stop.n >= start.n {
			h.Offer(&pqTransition{s: *s, t: start.n})
			h.Offer(&pqTransition{s: *s, t: stop.n, tr: 1})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	kept := h.Sorted()
	if int64(len(kept)) <= offset {
		return nil, nil
	}
	kept = kept[offset:]
	// The parent of GPU activity: its CUDA API call's slice id.
	var calls map[apiKey]apiCall
	if rt := bases[3]; rt >= 0 {
		keys := map[apiKey]bool{}
		for i := range kept {
			if s := &kept[i].s; s.tab < 3 {
				if k, ok := gpuKey(s.get(sCorr), s.get(sPid)); ok {
					keys[k] = true
				}
			}
		}
		if len(keys) > 0 {
			if calls, err = p.apiCalls(rt, func(k apiKey) bool { return keys[k] }); err != nil {
				return nil, err
			}
		}
	}
	ids := newStringIds()
	for i := range kept {
		ids.need(kept[i].s.name)
	}
	if err := p.resolve(ids); err != nil {
		return nil, err
	}
	out := make([]Transition, len(kept))
	for i := range kept {
		k := &kept[i]
		name := ids.name(k.s.name, sliceDefaults[k.s.tab])
		if !name.ok {
			return nil, p.nullName()
		}
		pid := k.s.get(sPid)
		out[i] = Transition{Time: k.t, Kind: k.tr, ID: k.s.id, Process: (pid.n >> 24) & 0xFFFFFF, Name: name.s}
		if k.s.tab < 3 {
			if key, ok := gpuKey(k.s.get(sCorr), pid); ok {
				if c, ok := calls[key]; ok {
					out[i].Parent = some(c.id)
				}
			}
		}
	}
	return out, nil
}
