package perfetto

import (
	"github.com/flameox/flameox/providers/internal/protowalk"
	"github.com/flameox/flameox/providers/internal/protowire"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// descriptor is what a TrackDescriptor says of its track.
type descriptor struct {
	parent   uint64
	name     string
	pid, tid int64
	thread   bool
	process  bool
}

// trackKey is what a track was made from: a descriptor's uuid, or a (pid, tid) with none.
type trackKey struct {
	uuid     uint64
	thread   bool // a (pid, tid) track without a descriptor
	pid, tid int64
}

func (d *decoder) trackDescriptor(b []byte) error {
	var uuid uint64
	desc := &descriptor{}
	var lerr error
	ok, _ := eachField(b, func(f protowalk.Field) error {
		switch f.Num {
		case 1:
			uuid = f.Value
		case 5:
			desc.parent = f.Value
		case 2, 10, 13:
			if f.Type == protowire.BytesType {
				s, err := d.str(f.Bytes)
				if err != nil {
					lerr = err
					return err
				}
				desc.name = s
			}
		case 3:
			if f.Type != protowire.BytesType {
				return errBadWire
			}
			pid, name, err := d.processDescriptor(f.Bytes)
			if err != nil {
				lerr = err
				return err
			}
			desc.process, desc.pid = true, pid
			if name != "" {
				d.processName(pid, name)
			}
		case 4:
			if f.Type != protowire.BytesType {
				return errBadWire
			}
			pid, tid, name, _, err := d.threadDescriptor(f.Bytes)
			if err != nil {
				lerr = err
				return err
			}
			desc.thread, desc.pid, desc.tid = true, pid, tid
			if name != "" {
				d.threadName(pid, tid, name)
				if desc.name == "" {
					desc.name = name
				}
			}
		}
		return nil
	})
	if lerr != nil {
		return lerr
	}
	if !ok {
		return d.malformed("track_descriptor")
	}
	if _, seen := d.descs[uuid]; !seen && len(d.descs) >= d.lim.MaxTracks {
		return d.limit("max_tracks", int64(d.lim.MaxTracks), "tracks",
			"the Perfetto trace describes more than %d tracks", d.lim.MaxTracks)
	}
	if old := d.descs[uuid]; old != nil && desc.name == "" {
		desc.name = old.name
	}
	d.descs[uuid] = desc
	id, seen := d.uuidID[uuid]
	if desc.thread && seen {
		if _, ok := d.thrID[[2]int64{desc.pid, desc.tid}]; !ok {
			d.thrID[[2]int64{desc.pid, desc.tid}] = id
		}
	}
	// A descriptor after a track's first slice (trace_processor reads descriptors
	// before the sorted events) announces what it changes: its own track, and the
	// tracks whose parent chain stopped at it.
	if _, ok := d.named[id]; seen && ok {
		d.send(id)
	}
	if children, ok := d.orphans[uuid]; ok {
		delete(d.orphans, uuid)
		for _, c := range children {
			delete(d.waiting, c)
			d.send(c)
		}
	}
	return nil
}

// threadDescriptor reads a ThreadDescriptor; ref is its reference_timestamp_us (0 when
// absent, as trace_processor takes it).
func (d *decoder) threadDescriptor(b []byte) (pid, tid int64, name string, ref int64, err error) {
	ok, _ := eachField(b, func(f protowalk.Field) error {
		switch f.Num {
		case 1:
			pid = int64(int32(f.Value))
		case 2:
			tid = int64(f.Value)
		case 5:
			if f.Type == protowire.BytesType {
				name, err = d.str(f.Bytes)
				return err
			}
		case 6:
			ref = int64(f.Value)
		}
		return nil
	})
	if err != nil {
		return
	}
	if !ok {
		err = d.malformed("thread descriptor")
	}
	return
}

func (d *decoder) processDescriptor(b []byte) (pid int64, name string, err error) {
	ok, _ := eachField(b, func(f protowalk.Field) error {
		switch f.Num {
		case 1:
			pid = int64(int32(f.Value))
		case 6:
			if f.Type == protowire.BytesType {
				name, err = d.str(f.Bytes)
				return err
			}
		}
		return nil
	})
	if err != nil {
		return
	}
	if !ok {
		err = d.malformed("process descriptor")
	}
	return
}

func (d *decoder) processTreePacket(b []byte) error {
	var lerr error
	ok, _ := eachField(b, func(f protowalk.Field) error {
		if (f.Num != 1 && f.Num != 2) || f.Type != protowire.BytesType {
			return nil
		}
		var pid, tid, tgid int64
		var name string
		cmd := false
		ok, _ := eachField(f.Bytes, func(g protowalk.Field) error {
			switch {
			case g.Num == 1:
				pid, tid = int64(int32(g.Value)), int64(int32(g.Value))
			case g.Num == 3 && f.Num == 2:
				tgid = int64(int32(g.Value))
			case (f.Num == 2 && g.Num == 2) || (f.Num == 1 && g.Num == 3 && !cmd):
				if g.Type == protowire.BytesType {
					s, err := d.str(g.Bytes)
					if err != nil {
						lerr = err
						return err
					}
					name, cmd = s, true
				}
			}
			return nil
		})
		if lerr != nil {
			return lerr
		}
		if !ok {
			return errBadWire
		}
		if name == "" {
			return nil
		}
		if f.Num == 1 {
			d.processName(pid, name)
		} else {
			d.threadName(tgid, tid, name)
		}
		return nil
	})
	if lerr != nil {
		return lerr
	}
	if !ok {
		return d.malformed("process_tree")
	}
	return nil
}

func (d *decoder) threadName(pid, tid int64, name string) {
	k := [2]int64{pid, tid}
	if d.thrNamed[k] == name {
		return
	}
	if _, seen := d.thrNamed[k]; !seen && len(d.thrNamed) >= d.lim.MaxTracks {
		return
	}
	d.thrNamed[k] = name
	d.sink.ThreadName(pid, tid, name)
}

// processName sends a process's first name: Chromium names a renderer "Renderer" on its
// own sequence and again by its command line on others; the first is the better name.
func (d *decoder) processName(pid int64, name string) {
	if _, seen := d.procNamed[pid]; seen || len(d.procNamed) >= d.lim.MaxTracks {
		return
	}
	d.procNamed[pid] = name
	d.sink.ProcessName(pid, name)
}

// trackFor resolves the track of an event: legacy pid/tid overrides, else its track uuid
// (or the sequence default), else the thread of the sequence's ThreadDescriptor, else
// the trace's default track (uuid 0).
func (d *decoder) trackFor(seq *sequence, e *event) (int64, error) {
	if e.hasTID || e.hasPID {
		pid, tid := seq.pid, seq.tid
		if e.hasPID {
			pid = e.pidOverride
		}
		if e.hasTID {
			tid = e.tidOverrid
		}
		return d.threadTrack(pid, tid)
	}
	uuid, has := e.track, e.hasTrack
	if !has && seq.hasDefTrack {
		uuid, has = seq.defTrack, true
	}
	if (!has || uuid == 0) && seq.hasThread {
		return d.threadTrack(seq.pid, seq.tid)
	}
	if id, ok := d.uuidID[uuid]; ok {
		return id, nil
	}
	if desc := d.descs[uuid]; desc != nil && desc.thread {
		if id, ok := d.thrID[[2]int64{desc.pid, desc.tid}]; ok {
			d.uuidID[uuid] = id
			return id, nil
		}
	}
	id, err := d.newTrack()
	if err != nil {
		return 0, err
	}
	d.uuidID[uuid] = id
	d.keys[id] = trackKey{uuid: uuid}
	if desc := d.descs[uuid]; desc != nil && desc.thread {
		d.thrID[[2]int64{desc.pid, desc.tid}] = id
	}
	return id, nil
}

func (d *decoder) threadTrack(pid, tid int64) (int64, error) {
	k := [2]int64{pid, tid}
	if id, ok := d.thrID[k]; ok {
		return id, nil
	}
	id, err := d.newTrack()
	if err != nil {
		return 0, err
	}
	d.thrID[k] = id
	d.keys[id] = trackKey{thread: true, pid: pid, tid: tid}
	return id, nil
}

func (d *decoder) newTrack() (int64, error) {
	if d.nextID >= int64(d.lim.MaxTracks) {
		return 0, d.limit("max_tracks", int64(d.lim.MaxTracks), "tracks",
			"the Perfetto trace has more than %d tracks", d.lim.MaxTracks)
	}
	d.nextID++
	return d.nextID, nil
}

// announce sends a track to the sink before its first slice.
func (d *decoder) announce(id int64) {
	if _, ok := d.named[id]; !ok {
		d.send(id)
	}
}

// send announces track id with what the trace says of it so far, unless that is what
// was announced; a track whose parent chain reaches a uuid not described yet waits for
// that descriptor in orphans.
func (d *decoder) send(id int64) {
	t, missing := d.track(id)
	if missing != 0 && !d.waiting[id] {
		d.waiting[id] = true
		d.orphans[missing] = append(d.orphans[missing], id)
	}
	if last, ok := d.named[id]; !ok || last != t {
		d.named[id] = t
		d.sink.Track(t)
	}
}

// track is what the trace says of track id so far: its descriptor, or the thread it was
// derived from; missing is a parent uuid its descriptor's chain reaches undescribed.
func (d *decoder) track(id int64) (t tracemodel.Track, missing uint64) {
	t.ID = id
	k := d.keys[id]
	if k.thread {
		t.PID, t.TID = k.pid, k.tid
		t.Name = d.thrNamed[[2]int64{k.pid, k.tid}]
	} else if desc := d.descs[k.uuid]; desc != nil {
		t.Name = desc.name
		if desc.thread {
			t.PID, t.TID = desc.pid, desc.tid
		} else {
			t.Async = true
			t.PID, missing = d.processOf(desc)
		}
	} else {
		t.Async = k.uuid != 0
	}
	return t, missing
}

// processOf walks a descriptor's parents (at most 64) to the process that holds it;
// missing is the first parent uuid not described yet (0: none).
func (d *decoder) processOf(desc *descriptor) (pid int64, missing uint64) {
	for i := 0; i < 64; i++ {
		if desc.process || desc.thread {
			return desc.pid, 0
		}
		if desc.parent == 0 {
			break
		}
		p := d.descs[desc.parent]
		if p == nil {
			return 0, desc.parent
		}
		desc = p
	}
	return 0, 0
}
