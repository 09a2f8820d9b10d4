package nsys

import (
	"cmp"
	"context"
	"slices"

	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// sliceColumns are the columns the slice union reads of each of sliceTables.
var sliceColumns = [len(sliceTables)][]pqColumn{
	{intCol("start"), intCol("end"), intCol("shortName"), intCol("globalPid"), intCol("deviceId"), intCol("streamId"), intCol("correlationId")},
	{intCol("start"), intCol("end"), intCol("copyKind"), intCol("globalPid"), intCol("deviceId"), intCol("streamId"), intCol("correlationId")},
	{intCol("start"), intCol("end"), intCol("globalPid"), intCol("deviceId"), intCol("streamId"), intCol("correlationId")},
	{intCol("start"), intCol("end"), intCol("nameId"), intCol("globalTid"), intCol("correlationId")},
	{intCol("start"), intCol("end"), textCol("text"), intCol("textId"), intCol("globalTid")},
}

// sliceDefaults are the union's names of rows without one: coalesce(..., ”) for
// kernels, CUDA API calls and NVTX ranges; a memcpy without a copyKind has none.
var sliceDefaults = [len(sliceTables)]OptStr{{ok: true}, {}, memsetName, {ok: true}, {ok: true}}

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

func (s *pqSlice) get(i int) OptInt {
	if s.null&(1<<i) != 0 {
		return OptInt{}
	}
	return some(s.v[i])
}

func (s *pqSlice) set(i int, o OptInt) {
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

// sliceUnion reads the slice union's tables in sliceTables' order and calls each
// with every row of the union (NVTX events without a start or an end are marks, not in
// it); each must copy a row it keeps. It returns the tables' id bases, -1 where the
// parquetdir lacks the table (db.sliceUnion's). Without enum the rows have no names.
func (p *parquetRead) sliceUnion(enum *memcpyEnum, each func(s *pqSlice) error) ([len(sliceTables)]int64, error) {
	var bases [len(sliceTables)]int64
	var base int64
	for tab, table := range sliceTables {
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
				s.set(sTid, OptInt{})
				s.set(sDev, v[o+1].num())
				s.set(sStream, v[o+2].num())
				s.set(sCorr, v[o+3].num())
			case 3:
				s.name = idRef(v[2].num())
				gtid := v[3].num()
				s.set(sPid, threadOf(gtid))
				s.set(sTid, gtid)
				s.set(sDev, OptInt{})
				s.set(sStream, OptInt{})
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
				s.set(sDev, OptInt{})
				s.set(sStream, OptInt{})
				s.set(sCorr, OptInt{})
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

// parquetSlices is Decode on a parquetdir: the thread and process names, then the
// slice union in its order.
func parquetSlices(ctx context.Context, in providers.Input, meta tracemodel.MetaSink, add func(*sliceRow) error) error {
	p, err := openParquet(ctx, in)
	if err != nil {
		return err
	}
	enum, err := p.memcpyEnum(false)
	if err != nil {
		return err
	}
	ids := newStringIds()
	type thread struct{ name, gtid OptInt }
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
		if n >= maxNames {
			break
		}
		n++
		if t.gtid.ok && name.ok {
			meta.ThreadName(t.gtid.n&^0xFFFFFF, t.gtid.n&0xFFFFFF, name.s)
		}
	}
	n = 0
	if _, err := p.scan("PROCESSES", []pqColumn{intCol("globalPid"), textCol("name")}, func(_ int64, v []pqValue) error {
		if n >= maxNames {
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
	var r sliceRow
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
		r = sliceRow{tab: int64(s.tab), id: s.id, start: s.get(sStart), stop: s.get(sStop), pid: s.get(sPid), tid: s.get(sTid),
			dev: s.get(sDev), stream: s.get(sStream), corr: s.get(sCorr), name: name.s}
		if err := add(&r); err != nil {
			return err
		}
	}
	return nil
}
