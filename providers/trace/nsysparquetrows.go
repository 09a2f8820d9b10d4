package trace

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// The Nsight Systems analyses on a parquetdir (decision 0057). Each read takes the
// columns it uses, table by table (nsysParquet.scan), and does in Go what the SQL
// readers' queries do over an nsys-sqlite export: the StringIds and
// ENUM_CUDA_MEMCPY_OPER joins, ThreadNames and PROCESSES, the correlation of GPU
// activity with its CUDA API call, the unions and their orders. It yields the records
// of nsysrows.go with the values, and in the order, that the queries yield for the same
// tables. A join resolves an id by the first row that holds it: the export's id columns
// are primary keys, which a Parquet file does not enforce.

// Where a native row's name comes from.
const (
	refNull uint8 = iota // nowhere: the name is the table's default
	refLit               // the literal lit
	refID                // StringIds' value of id, else the table's default
)

// nameRef is a native row's name before StringIds is read.
type nameRef struct {
	lit string
	id  int64
	how uint8
}

// litRef names a row by a literal (null: no name).
func litRef(s optStr) nameRef {
	if !s.ok {
		return nameRef{}
	}
	return nameRef{lit: s.s, how: refLit}
}

// idRef names a row by a StringIds id (null: no name).
func idRef(id optInt) nameRef {
	if !id.ok {
		return nameRef{}
	}
	return nameRef{id: id.n, how: refID}
}

// stringIds are the StringIds rows a read needs: the ids are collected first (need),
// then resolve reads StringIds once and keeps those ids' values.
type stringIds struct {
	want map[int64]struct{}
	// got holds the ids that have a row, with their values (ok false: a null value).
	got map[int64]optStr
}

func newStringIds() *stringIds {
	return &stringIds{want: map[int64]struct{}{}, got: map[int64]optStr{}}
}

func (s *stringIds) need(r nameRef) {
	if r.how == refID {
		s.want[r.id] = struct{}{}
	}
}

// name is coalesce(literal, StringIds value, dflt) for r.
func (s *stringIds) name(r nameRef, dflt optStr) optStr {
	switch r.how {
	case refLit:
		return optStr{s: r.lit, ok: true}
	case refID:
		if v := s.got[r.id]; v.ok {
			return v
		}
	}
	return dflt
}

// resolve reads StringIds for the ids s needs.
func (p *nsysParquet) resolve(s *stringIds) error {
	if len(s.want) == 0 {
		return nil
	}
	_, err := p.scan("StringIds", []pqColumn{intCol("id"), textCol("value")}, func(_ int64, v []pqValue) error {
		if v[0].null {
			return nil
		}
		if _, ok := s.want[v[0].n]; !ok {
			return nil
		}
		if _, ok := s.got[v[0].n]; !ok {
			s.got[v[0].n] = v[1].str()
		}
		return nil
	})
	return err
}

// memcpyEnum is ENUM_CUDA_MEMCPY_OPER by id, and the memcpy names made of it.
type memcpyEnum struct {
	rows   map[int64][2]optStr // name, label
	labels map[int64]string
}

// memcpyEnum reads ENUM_CUDA_MEMCPY_OPER when the parquetdir holds memcpy records: its
// labels, and its names too when names is set.
func (p *nsysParquet) memcpyEnum(names bool) (*memcpyEnum, error) {
	e := &memcpyEnum{rows: map[int64][2]optStr{}, labels: map[int64]string{}}
	if !p.has("CUPTI_ACTIVITY_KIND_MEMCPY") {
		return e, nil
	}
	cols := []pqColumn{intCol("id"), textCol("label")}
	if names {
		cols = append(cols, textCol("name"))
	}
	_, err := p.scan("ENUM_CUDA_MEMCPY_OPER", cols, func(_ int64, v []pqValue) error {
		if v[0].null {
			return nil
		}
		if _, ok := e.rows[v[0].n]; !ok {
			r := [2]optStr{1: v[1].str()}
			if names {
				r[0] = v[2].str()
			}
			e.rows[v[0].n] = r
		}
		return nil
	})
	return e, err
}

// label is a memcpy's name, '[CUDA memcpy ' || coalesce(label, copyKind) || ']'.
func (e *memcpyEnum) label(kind optInt) optStr {
	if !kind.ok {
		return optStr{}
	}
	s, ok := e.labels[kind.n]
	if !ok {
		if l := e.rows[kind.n][1]; l.ok {
			s = "[CUDA memcpy " + l.s + "]"
		} else {
			s = "[CUDA memcpy " + strconv.FormatInt(kind.n, 10) + "]"
		}
		e.labels[kind.n] = s
	}
	return optStr{s: s, ok: true}
}

// kind is a memcpy's copy kind, coalesce(name, CAST(copyKind AS TEXT)).
func (e *memcpyEnum) kind(kind optInt) optStr {
	if !kind.ok {
		return optStr{}
	}
	if n := e.rows[kind.n][0]; n.ok {
		return n
	}
	return optStr{s: strconv.FormatInt(kind.n, 10), ok: true}
}

// memsetName names every memset.
var memsetName = optStr{s: "[CUDA memset]", ok: true}

// nullName is a row whose name is null where the SQL reader scans it into a string: a
// memcpy record without a copyKind.
func (p *nsysParquet) nullName() error {
	return &providers.DecodeError{Source: p.in.Index,
		Message: fmt.Sprintf("source %d: CUPTI_ACTIVITY_KIND_MEMCPY%s holds a record without a copyKind, which names it", p.in.Index, parquetSuffix)}
}

// overflow is a sum past 2^63-1, which SQLite's sum refuses too.
func (p *nsysParquet) overflow(what string) error {
	return &providers.DecodeError{Source: p.in.Index,
		Message: fmt.Sprintf("source %d: the %s sum past 2^63-1", p.in.Index, what)}
}

// sub is b - a, and whether it is exact.
func sub(b, a int64) (int64, bool) {
	d := b - a
	return d, (d < b) == (a > 0)
}

// add is a + b, and whether it is exact.
func add(a, b int64) (int64, bool) {
	s := a + b
	return s, (s > a) == (b > 0)
}

// cmpOpt orders integers as SQLite's ORDER BY does: null first.
func cmpOpt(a, b optInt) int {
	if a.ok != b.ok {
		if !a.ok {
			return -1
		}
		return 1
	}
	return cmp.Compare(a.n, b.n)
}

// sliceColumns are the columns the slice union reads of each of nsysSliceTables.
var sliceColumns = [len(nsysSliceTables)][]pqColumn{
	{intCol("start"), intCol("end"), intCol("shortName"), intCol("globalPid"), intCol("deviceId"), intCol("streamId"), intCol("correlationId")},
	{intCol("start"), intCol("end"), intCol("copyKind"), intCol("globalPid"), intCol("deviceId"), intCol("streamId"), intCol("correlationId")},
	{intCol("start"), intCol("end"), intCol("globalPid"), intCol("deviceId"), intCol("streamId"), intCol("correlationId")},
	{intCol("start"), intCol("end"), intCol("nameId"), intCol("globalTid"), intCol("correlationId")},
	{intCol("start"), intCol("end"), textCol("text"), intCol("textId"), intCol("globalTid")},
}

// sliceDefaults are the union's names of rows without one: coalesce(..., ”) for
// kernels, CUDA API calls and NVTX ranges; a memcpy without a copyKind has none.
var sliceDefaults = [len(nsysSliceTables)]optStr{{ok: true}, {}, memsetName, {ok: true}, {ok: true}}

// The values of a pqSlice.
const (
	sStart = iota
	sStop
	sPid
	sTid
	sDev
	sStream
	sCorr
)

// pqSlice is one row of the slice union as the native reader holds it: its values (v,
// null where the bit of null is set), id, table, and name before StringIds is read.
type pqSlice struct {
	v    [7]int64
	id   int64
	name nameRef
	null uint8
	tab  uint8
}

func (s *pqSlice) get(i int) optInt {
	if s.null&(1<<i) != 0 {
		return optInt{}
	}
	return some(s.v[i])
}

func (s *pqSlice) set(i int, o optInt) {
	s.v[i] = o.n
	if !o.ok {
		s.null |= 1 << i
	}
}

// pqSliceOrder is the union's ORDER BY start, stop DESC, id.
func pqSliceOrder(a, b *pqSlice) int {
	if c := cmpOpt(a.get(sStart), b.get(sStart)); c != 0 {
		return c
	}
	if c := cmpOpt(a.get(sStop), b.get(sStop)); c != 0 {
		return -c
	}
	return cmp.Compare(a.id, b.id)
}

// threadOf is a serialized global thread id's process part (globalTid & ~16777215).
func threadOf(gtid optInt) optInt {
	if !gtid.ok {
		return optInt{}
	}
	return some(gtid.n &^ 0xFFFFFF)
}

// sliceUnion reads the slice union's tables in nsysSliceTables' order and calls each
// with every row of the union (NVTX events without a start or an end are marks, not in
// it); each must copy a row it keeps. It returns the tables' id bases, -1 where the
// parquetdir lacks the table (nsysSliceUnion's). Without enum the rows have no names.
func (p *nsysParquet) sliceUnion(enum *memcpyEnum, each func(s *pqSlice) error) ([len(nsysSliceTables)]int64, error) {
	var bases [len(nsysSliceTables)]int64
	var base int64
	for tab, table := range nsysSliceTables {
		bases[tab] = -1
		if !p.has(table) {
			continue
		}
		bases[tab] = base
		var s pqSlice
		n, err := p.scan(table, sliceColumns[tab], func(row int64, v []pqValue) error {
			s = pqSlice{id: base + row, tab: uint8(tab)}
			s.set(sStart, v[0].num())
			s.set(sStop, v[1].num())
			switch tab {
			case 0, 1, 2:
				o := 2 // the first column after the name's
				switch tab {
				case 0:
					s.name = idRef(v[2].num())
					o = 3
				case 1:
					if enum != nil {
						s.name = litRef(enum.label(v[2].num()))
					}
					o = 3
				case 2:
					s.name = litRef(memsetName)
				}
				s.set(sPid, v[o].num())
				s.set(sTid, optInt{})
				s.set(sDev, v[o+1].num())
				s.set(sStream, v[o+2].num())
				s.set(sCorr, v[o+3].num())
			case 3:
				s.name = idRef(v[2].num())
				gtid := v[3].num()
				s.set(sPid, threadOf(gtid))
				s.set(sTid, gtid)
				s.set(sDev, optInt{})
				s.set(sStream, optInt{})
				s.set(sCorr, v[4].num())
			case 4:
				if v[0].null || v[1].null {
					return nil
				}
				if !v[2].null {
					s.name = nameRef{lit: string(v[2].b), how: refLit}
				} else {
					s.name = idRef(v[3].num())
				}
				gtid := v[4].num()
				s.set(sPid, threadOf(gtid))
				s.set(sTid, some(gtid.n)) // coalesce(globalTid, 0)
				s.set(sDev, optInt{})
				s.set(sStream, optInt{})
				s.set(sCorr, optInt{})
			}
			if enum == nil {
				s.name = nameRef{}
			}
			return each(&s)
		})
		if err != nil {
			return bases, err
		}
		base += n
	}
	return bases, nil
}

// parquetSlices is decodeNsys on a parquetdir: the thread and process names, then the
// slice union in its order.
func parquetSlices(ctx context.Context, in providers.Input, meta tracemodel.MetaSink, add func(*nsysSlice) error) error {
	p, err := openNsysParquet(ctx, in)
	if err != nil {
		return err
	}
	enum, err := p.memcpyEnum(false)
	if err != nil {
		return err
	}
	ids := newStringIds()
	type thread struct{ name, gtid optInt }
	var threads []thread
	// ThreadNames JOIN StringIds: a row without a nameId joins nothing.
	if _, err := p.scan("ThreadNames", []pqColumn{intCol("nameId"), intCol("globalTid")}, func(_ int64, v []pqValue) error {
		if !v[0].null {
			threads = append(threads, thread{v[0].num(), v[1].num()})
			ids.need(idRef(v[0].num()))
		}
		return nil
	}); err != nil {
		return err
	}
	var all []pqSlice
	if _, err := p.sliceUnion(enum, func(s *pqSlice) error {
		all = append(all, *s)
		ids.need(s.name)
		return nil
	}); err != nil {
		return err
	}
	if err := p.resolve(ids); err != nil {
		return err
	}
	n := 0
	for _, t := range threads {
		name, found := ids.got[t.name.n]
		if !found {
			continue
		}
		if n >= maxNsysNames {
			break
		}
		n++
		if t.gtid.ok && name.ok {
			meta.ThreadName(t.gtid.n&^0xFFFFFF, t.gtid.n&0xFFFFFF, name.s)
		}
	}
	n = 0
	if _, err := p.scan("PROCESSES", []pqColumn{intCol("globalPid"), textCol("name")}, func(_ int64, v []pqValue) error {
		if n >= maxNsysNames {
			return errStop
		}
		n++
		if !v[0].null && !v[1].null {
			meta.ProcessName(v[0].n, string(v[1].b))
		}
		return nil
	}); err != nil {
		return err
	}
	slices.SortFunc(all, func(a, b pqSlice) int { return pqSliceOrder(&a, &b) })
	var r nsysSlice
	for i := range all {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		s := &all[i]
		name := ids.name(s.name, sliceDefaults[s.tab])
		if !name.ok {
			return p.nullName()
		}
		r = nsysSlice{tab: int64(s.tab), id: s.id, start: s.get(sStart), stop: s.get(sStop), pid: s.get(sPid), tid: s.get(sTid),
			dev: s.get(sDev), stream: s.get(sStream), corr: s.get(sCorr), name: name.s}
		if err := add(&r); err != nil {
			return err
		}
	}
	return nil
}

// sessionStart is nsysSessionStart on a parquetdir: the first row's utcEpochNs.
func (p *nsysParquet) sessionStart() (int64, bool, error) {
	var start optInt
	_, err := p.scan("TARGET_INFO_SESSION_START_TIME", []pqColumn{intCol("utcEpochNs")}, func(_ int64, v []pqValue) error {
		start = v[0].num()
		return errStop
	})
	return start.n, start.ok, err
}

// parquetLifecycleFigures is nsysLifecycleFigures on a parquetdir.
func parquetLifecycleFigures(ctx context.Context, in providers.Input) (nsysLifeFigures, error) {
	var fig nsysLifeFigures
	p, err := openNsysParquet(ctx, in)
	if err != nil {
		return fig, err
	}
	if fig.epoch, fig.utc, err = p.sessionStart(); err != nil {
		return fig, err
	}
	_, err = p.sliceUnion(nil, func(s *pqSlice) error {
		t := &fig.tabs[s.tab]
		t.rows++
		if start, stop := s.get(sStart), s.get(sStop); start.ok && stop.ok && stop.n >= start.n {
			t.valid++
		}
		return nil
	})
	return fig, err
}

// apiKey is a CUDA API call's correlation id and process (globalTid >> 24; GPU
// activity's globalPid >> 24).
type apiKey struct{ corr, proc int64 }

// apiCall is the first CUDA API call (by rowid) of an apiKey: its slice id (its
// table's id base plus its rowid - 1), start, global thread id and name's StringIds id.
type apiCall struct {
	id               int64
	start, tid, name optInt
}

// apiCalls reads CUPTI_ACTIVITY_KIND_RUNTIME's first call of each apiKey that keep
// accepts (nil: every key), the api table of the launch and lifecycle queries; base is
// the table's id base.
func (p *nsysParquet) apiCalls(base int64, keep func(apiKey) bool) (map[apiKey]apiCall, error) {
	calls := map[apiKey]apiCall{}
	_, err := p.scan("CUPTI_ACTIVITY_KIND_RUNTIME", []pqColumn{intCol("correlationId"), intCol("globalTid"), intCol("start"), intCol("nameId")},
		func(row int64, v []pqValue) error {
			if v[0].null || v[1].null {
				return nil
			}
			k := apiKey{v[0].n, v[1].n >> 24}
			if _, ok := calls[k]; ok || (keep != nil && !keep(k)) {
				return nil
			}
			calls[k] = apiCall{id: base + row, start: v[2].num(), tid: v[1].num(), name: v[3].num()}
			return nil
		})
	return calls, err
}

// gpuKey is the apiKey a kernel, memcpy or memset record joins on.
func gpuKey(corr, pid optInt) (apiKey, bool) {
	return apiKey{corr.n, pid.n >> 24}, corr.ok && pid.ok
}

// pqTransition is a lifecycle transition as the native reader holds it.
type pqTransition struct {
	s     pqSlice
	t, tr int64
}

// lifecycle is the lifecycle query's rows from offset up to end, in its order (time,
// span id, transition).
func (p *nsysParquet) lifecycle(offset, end int64) ([]nsysTransition, error) {
	enum, err := p.memcpyEnum(false)
	if err != nil {
		return nil, err
	}
	h := &topK[pqTransition]{k: int(end), less: func(a, b *pqTransition) bool {
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
			h.offer(&pqTransition{s: *s, t: start.n})
			h.offer(&pqTransition{s: *s, t: stop.n, tr: 1})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	kept := h.sorted()
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
	out := make([]nsysTransition, len(kept))
	for i := range kept {
		k := &kept[i]
		name := ids.name(k.s.name, sliceDefaults[k.s.tab])
		if !name.ok {
			return nil, p.nullName()
		}
		pid := k.s.get(sPid)
		out[i] = nsysTransition{t: k.t, tr: k.tr, id: k.s.id, proc: (pid.n >> 24) & 0xFFFFFF, name: name.s}
		if k.s.tab < 3 {
			if key, ok := gpuKey(k.s.get(sCorr), pid); ok {
				if c, ok := calls[key]; ok {
					out[i].parent = some(c.id)
				}
			}
		}
	}
	return out, nil
}

// launchTables are the tables of the launch query, by its ord.
var launchTables = [len(launchKinds)]string{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"}

// launchColumnsOf are the columns the launch query reads of each of launchTables: the
// first seven alike.
var launchColumnsOf = [len(launchKinds)][]pqColumn{
	{intCol("start"), intCol("end"), intCol("deviceId"), intCol("contextId"), intCol("streamId"), intCol("correlationId"), intCol("globalPid"),
		intCol("shortName"), intCol("demangledName"), intCol("gridX"), intCol("gridY"), intCol("gridZ"), intCol("blockX"), intCol("blockY"), intCol("blockZ"),
		intCol("registersPerThread"), intCol("staticSharedMemory"), intCol("dynamicSharedMemory")},
	{intCol("start"), intCol("end"), intCol("deviceId"), intCol("contextId"), intCol("streamId"), intCol("correlationId"), intCol("globalPid"),
		intCol("copyKind"), intCol("bytes")},
	{intCol("start"), intCol("end"), intCol("deviceId"), intCol("contextId"), intCol("streamId"), intCol("correlationId"), intCol("globalPid"),
		intCol("bytes")},
}

// launchDefaults are the launch query's names of rows without one: a kernel without a
// short name is '<unnamed>'; a memcpy without a copyKind has none.
var launchDefaults = [len(launchKinds)]optStr{{s: "<unnamed>", ok: true}, {}, memsetName}

// pqLaunch is a row of the launch query as the native reader holds it: the row without
// its names and API call, its name and demangled name before StringIds is read, and
// its process (globalPid).
type pqLaunch struct {
	l         nsysLaunch
	name      nameRef
	demangled optInt
	pid       optInt
}

// launchRecords reads the launch query's tables and calls each with every record that
// launchValid admits (each must copy one it keeps); records counts every row of the
// tables. Without enum the rows have no names.
func (p *nsysParquet) launchRecords(enum *memcpyEnum, each func(l *pqLaunch) error) (records int64, err error) {
	for ord, table := range launchTables {
		if !p.has(table) {
			continue
		}
		var l pqLaunch
		n, err := p.scan(table, launchColumnsOf[ord], func(row int64, v []pqValue) error {
			start, stop, dev, ctx, stream := v[0].num(), v[1].num(), v[2].num(), v[3].num(), v[4].num()
			if !start.ok || !stop.ok || stop.n < start.n || !dev.ok || !ctx.ok || !stream.ok {
				return nil
			}
			l = pqLaunch{l: nsysLaunch{ord: int64(ord), start: start.n, stop: stop.n, dev: dev.n, ctx: ctx.n, stream: stream.n, rid: row + 1,
				corr: v[5].num()}, pid: v[6].num()}
			switch ord {
			case 0:
				l.name, l.demangled = idRef(v[7].num()), v[8].num()
				l.l.gx, l.l.gy, l.l.gz, l.l.bx, l.l.by, l.l.bz = v[9].num(), v[10].num(), v[11].num(), v[12].num(), v[13].num(), v[14].num()
				l.l.regs = v[15].num()
				if st, dy := v[16].num(), v[17].num(); st.ok && dy.ok {
					smem, ok := add(st.n, dy.n)
					if !ok {
						return p.overflow("static and dynamic shared memory of a kernel")
					}
					l.l.smem = some(smem)
				}
			case 1:
				if enum != nil {
					l.name, l.l.copyKind = litRef(enum.label(v[7].num())), enum.kind(v[7].num())
				}
				l.l.bytes = v[8].num()
			case 2:
				l.name, l.l.bytes = litRef(memsetName), v[7].num()
			}
			return each(&l)
		})
		if err != nil {
			return 0, err
		}
		records += n
	}
	return records, nil
}

// parquetLaunchFigures is launchFigures on a parquetdir.
func parquetLaunchFigures(ctx context.Context, in providers.Input) (map[string]any, int64, error) {
	m := map[string]any{"kernel_count": int64(0), "memcpy_count": int64(0), "memset_count": int64(0), "device_count": int64(0),
		"total_kernel_time_ns": int64(0), "unmatched_api_count": int64(0)}
	p, err := openNsysParquet(ctx, in)
	if err != nil {
		return nil, 0, err
	}
	var total int64
	if slices.ContainsFunc(launchTables[:], p.has) {
		var calls map[apiKey]apiCall
		if p.has("CUPTI_ACTIVITY_KIND_RUNTIME") {
			if calls, err = p.apiCalls(0, nil); err != nil {
				return nil, 0, err
			}
		}
		var counts [len(launchKinds)]int64
		var kernelTime, unmatched int64
		devices := map[int64]struct{}{}
		records, err := p.launchRecords(nil, func(l *pqLaunch) error {
			total++
			counts[l.l.ord]++
			devices[l.l.dev] = struct{}{}
			if l.l.ord == 0 {
				d, ok := sub(l.l.stop, l.l.start)
				if ok {
					kernelTime, ok = add(kernelTime, d)
				}
				if !ok {
					return p.overflow("durations of the kernels")
				}
			}
			k, ok := gpuKey(l.l.corr, l.pid)
			if c, found := calls[k]; !ok || !found || !c.start.ok {
				unmatched++
			}
			return nil
		})
		if err != nil {
			return nil, 0, err
		}
		m["kernel_count"], m["memcpy_count"], m["memset_count"] = counts[0], counts[1], counts[2]
		m["device_count"], m["total_kernel_time_ns"], m["unmatched_api_count"] = int64(len(devices)), nanos(kernelTime), unmatched
		if records > total {
			m["invalid_record_count"] = records - total
		}
	}
	m["launch_count"] = total
	m["accelerator_activity_observed"] = total > 0
	return m, total, nil
}

// launches is the launch query's rows from offset up to end, in its order (start, kind,
// table rowid).
func (p *nsysParquet) launches(offset, end int64) ([]nsysLaunch, error) {
	enum, err := p.memcpyEnum(true)
	if err != nil {
		return nil, err
	}
	h := &topK[pqLaunch]{k: int(end), less: func(a, b *pqLaunch) bool {
		if a.l.start != b.l.start {
			return a.l.start < b.l.start
		}
		if a.l.ord != b.l.ord {
			return a.l.ord < b.l.ord
		}
		return a.l.rid < b.l.rid
	}}
	if _, err := p.launchRecords(enum, func(l *pqLaunch) error { h.offer(l); return nil }); err != nil {
		return nil, err
	}
	kept := h.sorted()
	if int64(len(kept)) <= offset {
		return nil, nil
	}
	kept = kept[offset:]
	var calls map[apiKey]apiCall
	if p.has("CUPTI_ACTIVITY_KIND_RUNTIME") {
		keys := map[apiKey]bool{}
		for i := range kept {
			if k, ok := gpuKey(kept[i].l.corr, kept[i].pid); ok {
				keys[k] = true
			}
		}
		if len(keys) > 0 {
			if calls, err = p.apiCalls(0, func(k apiKey) bool { return keys[k] }); err != nil {
				return nil, err
			}
		}
	}
	ids := newStringIds()
	api := make([]apiCall, len(kept))
	matched := make([]bool, len(kept))
	for i := range kept {
		l := &kept[i]
		ids.need(l.name)
		ids.need(idRef(l.demangled))
		if k, ok := gpuKey(l.l.corr, l.pid); ok {
			api[i], matched[i] = calls[k]
			if matched[i] {
				ids.need(idRef(api[i].name))
			}
		}
	}
	if err := p.resolve(ids); err != nil {
		return nil, err
	}
	out := make([]nsysLaunch, len(kept))
	for i := range kept {
		l := &kept[i]
		name := ids.name(l.name, launchDefaults[l.l.ord])
		if !name.ok {
			return nil, p.nullName()
		}
		out[i] = l.l
		out[i].name = name.s
		out[i].demangled = ids.name(idRef(l.demangled), optStr{})
		if matched[i] {
			out[i].apiName = ids.name(idRef(api[i].name), optStr{})
			out[i].apiStart, out[i].apiTid = api[i].start, api[i].tid
		}
	}
	return out, nil
}

// opColumns are the columns summarize_trace_operations reads of a table of
// nsysOpTables: start and end, then the stream (GPU activity) or the thread (calls and
// ranges), then the name's.
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
	tid                optInt
	start, stop, rowid int64
	ref                int32
	rank               uint8
}

// parquetOperations is summarize_trace_operations' grouping (nsysDB.nsysOperations) and
// self time (nsysSelfTime) on a parquetdir, into c.
func parquetOperations(ctx context.Context, in providers.Input, c *nsysOpTally) error {
	p, err := openNsysParquet(ctx, in)
	if err != nil {
		return err
	}
	f := c.f
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
		t        nsysOpTable
		all      int64
		excluded bool
		groups   map[int32]*pqOpGroup
	}
	var tables []*tableGroups
	var nest []pqNest
	for _, t := range nsysOpTables {
		if !p.has(t.table) {
			continue
		}
		tg := &tableGroups{t: t, groups: map[int32]*pqOpGroup{}}
		tg.excluded = f != nil && ((len(f.kinds) > 0 && !slices.Contains(f.kinds, t.event)) || (len(f.cats) > 0 && !slices.Contains(f.cats, t.kind)))
		tables = append(tables, tg)
		rank := slices.Index(nsysNested, t.kind)
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
			if f != nil && f.minDur > 0 {
				if !start.ok || !stop.ok {
					return nil
				}
				// end - start >= ?, an overflow compared by its sign as SQLite's REAL.
				if d, ok := sub(stop.n, start.n); (ok && d < f.minDur) || (!ok && stop.n < start.n) {
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
	names := make([]optStr, len(refList))
	for i, r := range refList {
		names[i] = ids.name(r, optStr{})
	}
	for _, tg := range tables {
		if tg.excluded {
			c.excluded += tg.all
			continue
		}
		merged := map[optStr]*pqOpGroup{}
		for ref, g := range tg.groups {
			name := names[ref]
			if f != nil && f.contains != "" && (!name.ok || !strings.Contains(name.s, f.contains)) {
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
		keys := make([]optStr, 0, len(merged))
		for k := range merged {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b optStr) int {
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
			g := nsysOpGroup{name: k, calls: m.calls, timed: some(m.timed), total: some(m.total), max: some(m.max)}
			if len(m.streams) > 0 {
				g.streams = make([]int64, 0, len(m.streams))
				for s := range m.streams {
					g.streams = append(g.streams, s)
				}
				slices.Sort(g.streams)
				if len(g.streams) > maxStreams {
					g.streams = g.streams[:maxStreams]
				}
			}
			if err := c.group(tg.t, g); err != nil {
				return err
			}
			n += m.calls
		}
		c.table(tg.t, n, tg.all)
	}
	nester := newNsysNester(c.ops)
	if nester == nil {
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
	var r nsysNestRow
	for i := range nest {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		x := &nest[i]
		r = nsysNestRow{rank: int(x.rank), id: x.rowid, name: names[x.ref].s, tid: x.tid, start: x.start, stop: x.stop}
		nester.add(&r)
	}
	nester.done()
	return nil
}

// parquetPages pages a population that the native reader orders anew for each page (a
// parquetdir's lifecycle transitions or GPU launches): rows reads the population's rows
// from offset up to end in one read of the parquetdir.
type parquetPages struct {
	in    providers.Input
	total int64
	rows  func(p *nsysParquet, offset, end int64) ([]any, error)
}

func (r *parquetPages) Page(ctx context.Context, offset, limit int64, fits func(json.RawMessage) bool) (*providers.Page, error) {
	return pageOf(r.total, offset, limit, func(end int64, page *providers.Page) error {
		p, err := openNsysParquet(ctx, r.in)
		if err != nil {
			return err
		}
		rows, err := r.rows(p, offset, end)
		if err != nil {
			return err
		}
		for _, row := range rows {
			b, err := providers.EncodeRow(row)
			if err != nil {
				return err
			}
			if fits != nil && !fits(b) {
				break
			}
			page.Rows = append(page.Rows, b)
		}
		return nil
	})
}
