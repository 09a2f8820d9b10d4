package xctrace

import (
	"encoding/xml"
	"math"

	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// cell is one column value of the row being read: null, or an interned value.
type cell struct {
	null bool
	v    xval
}

// row reads one row's column values and delivers it.
func (x *reader) row(t *xtable, bytag bool) error {
	x.rowCells, x.tags = x.rowCells[:0], x.tags[:0]
	err := x.children(func(s xml.StartElement) error {
		x.tags = append(x.tags, s.Name.Local)
		if s.Name.Local == "sentinel" {
			x.rowCells = append(x.rowCells, cell{null: true})
			return x.skip()
		}
		v, err := x.value(s, false)
		if err != nil {
			return err
		}
		x.rowCells = append(x.rowCells, cell{v: v})
		return nil
	})
	if err != nil {
		return err
	}
	return x.deliver(t, bytag)
}

// deliver counts the row just read and, in an interval table, delivers its slice.
func (x *reader) deliver(t *xtable, bytag bool) error {
	id := x.rowID
	x.rowID++
	x.stats.Events++
	t.info.Rows++
	if bytag {
		t.rowRoles(x.tags)
	}
	get := func(i int) (xval, bool) {
		if i < 0 || i >= len(x.rowCells) || x.rowCells[i].null {
			return xval{}, false
		}
		return x.rowCells[i].v, true
	}
	switch t.info.Kind {
	case Points:
		x.stats.Instants++
		return nil
	case Other:
		x.stats.Ignored++
		return nil
	}
	start, okS := get(t.start)
	dur, okD := get(t.dur)
	if !okS || !okD || start.flags&xvNum == 0 || dur.flags&xvNum == 0 || start.num < 0 || dur.num < 0 || start.num > math.MaxInt64-dur.num {
		x.stats.InvalidIntervals++
		t.info.Invalid++
		return nil
	}
	name := t.fallbackName
	if t.name >= 0 {
		name = ""
		if v, ok := get(t.name); ok {
			name = v.label
		}
	}
	track, err := x.track(t, get)
	if err != nil {
		return err
	}
	x.ev = tracemodel.Event{ID: id, TS: start.num, Dur: dur.num, Track: track, Name: name, Category: t.info.Schema, Phase: "X"}
	x.stats.Slices++
	t.info.Slices++
	return x.sink.Slice(&x.ev)
}

// track is the row's track: its thread's on this table of this run, else its process's,
// else the table's; announced to the sink with its names the first time.
func (x *reader) track(t *xtable, get func(int) (xval, bool)) (int64, error) {
	var th, pr *xthread
	if v, ok := get(t.thr); ok && v.thread >= 0 {
		th = &x.threads[v.thread]
	}
	if v, ok := get(t.proc); ok && v.thread >= 0 {
		pr = &x.threads[v.thread]
	}
	table := int64(len(x.info.Tables) - 1)
	key := [4]int64{table, -1, -1, 0}
	tr := tracemodel.Track{PID: -1, TID: -1, Async: true}
	switch {
	case th != nil && th.hasTID:
		pid := int64(-1)
		switch {
		case th.hasPID:
			pid = th.pid
		case pr != nil && pr.hasPID:
			pid = pr.pid
		}
		key = [4]int64{table, pid, th.tid, 1}
		tr = tracemodel.Track{PID: pid, TID: th.tid}
		if !x.names[[2]int64{pid, th.tid}] && th.label != "" {
			x.names[[2]int64{pid, th.tid}] = true
			x.sink.ThreadName(pid, th.tid, th.label)
		}
		if th.process != "" && pid >= 0 && !x.procs[pid] {
			x.procs[pid] = true
			x.sink.ProcessName(pid, th.process)
		}
	case pr != nil && pr.hasPID:
		key = [4]int64{table, pr.pid, -1, 2}
		tr = tracemodel.Track{PID: pr.pid, TID: -1, Async: true}
	}
	if pr != nil && pr.hasPID && pr.process != "" && !x.procs[pr.pid] {
		x.procs[pr.pid] = true
		x.sink.ProcessName(pr.pid, pr.process)
	}
	if id, ok := x.tracks[key]; ok {
		return id, nil
	}
	if len(x.tracks) >= x.lim.MaxTracks {
		return 0, x.limit("tracks (threads and processes of each table)", int64(x.lim.MaxTracks), "tracks")
	}
	tr.ID = int64(len(x.tracks) + 1)
	if tr.Async {
		tr.Name = t.info.Schema
	}
	x.tracks[key] = tr.ID
	x.sink.Track(tr)
	return tr.ID, nil
}
