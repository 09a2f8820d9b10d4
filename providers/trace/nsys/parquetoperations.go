package nsys

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/flameox/flameox/providers"
)

// opColumns are the columns summarize_trace_operations reads of a table of opTables:
// start and end, then the stream (GPU activity) or the thread (calls and ranges), then
// the name's.
func opColumns(kind string) []pqColumn {
	cols := []pqColumn{intCol("start"), intCol("end")}
	switch kind {
	case "kernel":
		return append(cols, intCol("streamId"), intCol("shortName"))
	case "memcpy":
		return append(cols, intCol("streamId"), intCol("copyKind"))
	case "memset":
		return append(cols, intCol("streamId"))
	case "nvtx":
		return append(cols, intCol("globalTid"), textCol("text"), intCol("textId"))
	}
	return append(cols, intCol("globalTid"), intCol("nameId"))
}

// pqOpGroup is one (table, name reference) group of summarize_trace_operations before
// StringIds is read; groups whose names resolve alike are merged.
type pqOpGroup struct {
	calls, timed, total, max int64
	streams                  map[int64]struct{}
}

// merge adds g into m.
func (m *pqOpGroup) merge(g *pqOpGroup) bool {
	var ok bool
	if m.total, ok = add(m.total, g.total); !ok {
		return false
	}
	m.calls += g.calls
	m.timed += g.timed
	m.max = max(m.max, g.max)
	for s := range g.streams {
		if m.streams == nil {
			m.streams = map[int64]struct{}{}
		}
		m.streams[s] = struct{}{}
	}
	return true
}

// pqNest is a call or range of the self-time union as the native reader holds it, its
// name an index in the read's name references.
type pqNest struct {
	tid                OptInt
	start, stop, rowid int64
	ref                int32
	rank               uint8
}

// parquetOperations is Operations' grouping (db.operations) and self time
// (db.selfTime) on a parquetdir.
func parquetOperations(ctx context.Context, in providers.Input, f *Filter, sink OpSink) error {
	p, err := openParquet(ctx, in)
	if err != nil {
		return err
	}
	enum, err := p.memcpyEnum(false)
	if err != nil {
		return err
	}
	refs := map[nameRef]int32{}
	var refList []nameRef
	intern := func(r nameRef) int32 {
		i, ok := refs[r]
		if !ok {
			i = int32(len(refList))
			refs[r] = i
			refList = append(refList, r)
		}
		return i
	}
	type tableGroups struct {
		t        opTable
		all      int64
		excluded bool
		groups   map[int32]*pqOpGroup
	}
	var tables []*tableGroups
	var nest []pqNest
	for _, t := range opTables {
		if !p.has(t.table) {
			continue
		}
		tg := &tableGroups{t: t, groups: map[int32]*pqOpGroup{}}
		tg.excluded = f.excludes(t.kind, t.event)
		tables = append(tables, tg)
		rank := slices.Index(nestedKinds, t.kind)
		_, err := p.scan(t.table, opColumns(t.kind), func(row int64, v []pqValue) error {
			start, stop := v[0].num(), v[1].num()
			if t.kind == "nvtx" && !stop.ok {
				return nil // a mark, not a range
			}
			tg.all++
			var name nameRef
			switch t.kind {
			case "kernel", "runtime", "osrt":
				name = idRef(v[3].num())
			case "memcpy":
				name = litRef(enum.label(v[3].num()))
			case "memset":
				name = litRef(memsetName)
			case "nvtx":
				if !v[3].null {
					name = nameRef{lit: string(v[3].b), how: refLit}
				} else {
					name = idRef(v[4].num())
				}
			}
			ref := intern(name)
			timed := start.ok && stop.ok && stop.n >= start.n
			if rank >= 0 && timed {
				nest = append(nest, pqNest{tid: v[2].num(), start: start.n, stop: stop.n, rowid: row + 1, ref: ref, rank: uint8(rank)})
			}
			if tg.excluded {
				return nil
			}
			if f != nil && f.MinDuration > 0 {
				if !start.ok || !stop.ok {
					return nil
				}
				// end - start >= ?, an overflow compared by its sign as SQLite's REAL.
				if d, ok := sub(stop.n, start.n); (ok && d < f.MinDuration) || (!ok && stop.n < start.n) {
					return nil
				}
			}
			g := tg.groups[ref]
			if g == nil {
				g = &pqOpGroup{}
				tg.groups[ref] = g
			}
			g.calls++
			if timed {
				d, ok := sub(stop.n, start.n)
				if ok {
					g.total, ok = add(g.total, d)
				}
				if !ok {
					return p.overflow("durations of " + t.table + "'s calls")
				}
				g.timed++
				g.max = max(g.max, d)
			}
			if t.stream != "" && !v[2].null {
				if g.streams == nil {
					g.streams = map[int64]struct{}{}
				}
				g.streams[v[2].n] = struct{}{}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	ids := newStringIds()
	for _, r := range refList {
		ids.need(r)
	}
	if err := p.resolve(ids); err != nil {
		return err
	}
	names := make([]OptStr, len(refList))
	for i, r := range refList {
		names[i] = ids.name(r, OptStr{})
	}
	for _, tg := range tables {
		if tg.excluded {
			sink.Excluded(tg.all)
			continue
		}
		merged := map[OptStr]*pqOpGroup{}
		for ref, g := range tg.groups {
			name := names[ref]
			if f != nil && f.Contains != "" && (!name.ok || !strings.Contains(name.s, f.Contains)) {
				continue
			}
			m := merged[name]
			if m == nil {
				m = &pqOpGroup{}
				merged[name] = m
			}
			if !m.merge(g) {
				return p.overflow("durations of " + tg.t.table + "'s calls")
			}
		}
		// GROUP BY's order: null first, then by name.
		keys := make([]OptStr, 0, len(merged))
		for k := range merged {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b OptStr) int {
			if a.ok != b.ok {
				if !a.ok {
					return -1
				}
				return 1
			}
			return strings.Compare(a.s, b.s)
		})
		var n int64
		for _, k := range keys {
			m := merged[k]
			g := OpGroup{Kind: tg.t.kind, Event: tg.t.event, Name: k.s, Calls: m.calls, Timed: m.timed, Total: m.total, Max: m.max}
			if len(m.streams) > 0 {
				g.Streams = make([]int64, 0, len(m.streams))
				for s := range m.streams {
					g.Streams = append(g.Streams, s)
				}
				slices.Sort(g.Streams)
			}
			if err := sink.Group(&g); err != nil {
				return err
			}
			n += m.calls
		}
		sink.Table(tg.t.kind, n, tg.all)
	}
	if !sink.Nested() {
		return nil
	}
	// The union's ORDER BY tid, start, stop DESC, rank, id.
	slices.SortFunc(nest, func(a, b pqNest) int {
		if c := cmpOpt(a.tid, b.tid); c != 0 {
			return c
		}
		if a.start != b.start {
			return cmp.Compare(a.start, b.start)
		}
		if a.stop != b.stop {
			return cmp.Compare(b.stop, a.stop)
		}
		if a.rank != b.rank {
			return cmp.Compare(a.rank, b.rank)
		}
		return cmp.Compare(a.rowid, b.rowid)
	})
	var r NestRow
	for i := range nest {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		x := &nest[i]
		r = NestRow{Kind: nestedKinds[x.rank], Name: names[x.ref].s, Thread: x.tid, Start: x.start, Stop: x.stop}
		sink.Nest(&r)
	}
	return nil
}
