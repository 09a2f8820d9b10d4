package nsys

import (
	"context"
	"slices"

	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

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
var launchDefaults = [len(launchKinds)]OptStr{{s: "<unnamed>", ok: true}, {}, memsetName}

// pqLaunch is a row of the launch query as the native reader holds it: the row without
// its names and API call, its name and demangled name before StringIds is read, and
// its process (globalPid).
type pqLaunch struct {
	l         Launch
	name      nameRef
	demangled OptInt
	pid       OptInt
}

// launchRecords reads the launch query's tables and calls each with every record that
// launchValid admits (each must copy one it keeps); records counts every row of the
// tables. Without enum the rows have no names.
func (p *parquetRead) launchRecords(enum *memcpyEnum, each func(l *pqLaunch) error) (records int64, err error) {
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
			l = pqLaunch{l: Launch{ord: int64(ord), Start: start.n, Stop: stop.n, Device: dev.n, Context: ctx.n, Stream: stream.n, rid: row + 1,
				Correlation: v[5].num()}, pid: v[6].num()}
			switch ord {
			case 0:
				l.name, l.demangled = idRef(v[7].num()), v[8].num()
				l.l.GridX, l.l.GridY, l.l.GridZ, l.l.BlockX, l.l.BlockY, l.l.BlockZ = v[9].num(), v[10].num(), v[11].num(), v[12].num(), v[13].num(), v[14].num()
				l.l.Registers = v[15].num()
				if st, dy := v[16].num(), v[17].num(); st.ok && dy.ok {
					smem, ok := add(st.n, dy.n)
					if !ok {
						return p.overflow("static and dynamic shared memory of a kernel")
					}
					l.l.SharedMemory = some(smem)
				}
			case 1:
				if enum != nil {
					l.name, l.l.CopyKind = litRef(enum.label(v[7].num())), enum.kind(v[7].num())
				}
				l.l.Bytes = v[8].num()
			case 2:
				l.name, l.l.Bytes = litRef(memsetName), v[7].num()
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

// parquetLaunches is db.launchFigures on a parquetdir.
func parquetLaunches(ctx context.Context, in providers.Input) (LaunchFigures, error) {
	var fig LaunchFigures
	p, err := openParquet(ctx, in)
	if err != nil {
		return fig, err
	}
	if slices.ContainsFunc(launchTables[:], p.has) {
		var calls map[apiKey]apiCall
		if p.has("CUPTI_ACTIVITY_KIND_RUNTIME") {
			if calls, err = p.apiCalls(0, nil); err != nil {
				return LaunchFigures{}, err
			}
		}
		var counts [len(launchKinds)]int64
		var kernelTime, unmatched int64
		devices := map[int64]struct{}{}
		records, err := p.launchRecords(nil, func(l *pqLaunch) error {
			fig.Launches++
			counts[l.l.ord]++
			devices[l.l.Device] = struct{}{}
			if l.l.ord == 0 {
				d, ok := sub(l.l.Stop, l.l.Start)
				if ok {
					kernelTime, ok = add(kernelTime, d)
				}
				if !ok {
					return p.overflow("durations of the kernels")
				}
			}
			k, ok := gpuKey(l.l.Correlation, l.pid)
			if c, found := calls[k]; !ok || !found || !c.start.ok {
				unmatched++
			}
			return nil
		})
		if err != nil {
			return LaunchFigures{}, err
		}
		fig.Kernels, fig.Memcpys, fig.Memsets = counts[0], counts[1], counts[2]
		fig.Devices, fig.KernelTime, fig.Unmatched, fig.Records = int64(len(devices)), kernelTime, unmatched, records
	}
	return fig, nil
}

// launches is the launch query's rows from offset up to end, in its order (start, kind,
// table rowid).
func (p *parquetRead) launches(offset, end int64) ([]Launch, error) {
	enum, err := p.memcpyEnum(true)
	if err != nil {
		return nil, err
	}
	h := &tracemodel.TopK[pqLaunch]{K: int(end), Less: func(a, b *pqLaunch) bool {
		if a.l.Start != b.l.Start {
			return a.l.Start < b.l.Start
		}
		if a.l.ord != b.l.ord {
			return a.l.ord < b.l.ord
		}
		return a.l.rid < b.l.rid
	}}
	if _, err := p.launchRecords(enum, func(l *pqLaunch) error { h.Offer(l); return nil }); err != nil {
		return nil, err
	}
	kept := h.Sorted()
	if int64(len(kept)) <= offset {
		return nil, nil
	}
	kept = kept[offset:]
	var calls map[apiKey]apiCall
	if p.has("CUPTI_ACTIVITY_KIND_RUNTIME") {
		keys := map[apiKey]bool{}
		for i := range kept {
			if k, ok := gpuKey(kept[i].l.Correlation, kept[i].pid); ok {
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
		if k, ok := gpuKey(l.l.Correlation, l.pid); ok {
			api[i], matched[i] = calls[k]
			if matched[i] {
				ids.need(idRef(api[i].name))
			}
		}
	}
	if err := p.resolve(ids); err != nil {
		return nil, err
	}
	out := make([]Launch, len(kept))
	for i := range kept {
		l := &kept[i]
		name := ids.name(l.name, launchDefaults[l.l.ord])
		if !name.ok {
			return nil, p.nullName()
		}
		out[i] = l.l
		out[i].Kind = launchKinds[l.l.ord]
		out[i].Name = name.s
		out[i].Demangled = ids.name(idRef(l.demangled), OptStr{})
		if matched[i] {
			out[i].APIName = ids.name(idRef(api[i].name), OptStr{})
			out[i].APIStart, out[i].APIThread = api[i].start, api[i].tid
		}
	}
	return out, nil
}
