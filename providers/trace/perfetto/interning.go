package perfetto

import (
	"strings"

	"github.com/flameox/flameox/providers/internal/protowalk"
	"github.com/flameox/flameox/providers/internal/protowire"
)

// sequence is a packet sequence's state (trusted_packet_sequence_id): its incremental
// state (interned data, defaults, the delta-timestamp reference) and whether it is
// valid, its sequence-scoped clocks, and the thread of its ThreadDescriptor.
type sequence struct {
	names, cats, annNames, annStrs map[uint64]string
	interned                       int
	// valid is the incremental state's validity: false until the sequence's first
	// clear and from a packet loss to the next clear.
	valid bool

	defTrack    uint64
	hasDefTrack bool
	defClock    uint32
	hasDefClock bool

	clocks map[uint32]*seqClock

	pid, tid  int64
	hasThread bool
	// refNs is ThreadDescriptor.reference_timestamp_us in ns, advanced by
	// timestamp_delta_us; hasRef is set by a ThreadDescriptor read since the last clear
	// or loss.
	refNs  int64
	hasRef bool
}

func (d *decoder) sequence(id uint32) (*sequence, error) {
	if d.lastSeq != nil && d.lastSeqID == id {
		return d.lastSeq, nil
	}
	s := d.seqs[id]
	defer func() { d.lastSeq, d.lastSeqID = s, id }()
	if s == nil {
		if len(d.seqs) >= d.lim.MaxSequences {
			return nil, d.limit("max_sequences", int64(d.lim.MaxSequences), "sequences",
				"the Perfetto trace has more than %d packet sequences", d.lim.MaxSequences)
		}
		s = &sequence{}
		s.clear()
		d.seqs[id] = s
	}
	return s, nil
}

// clear empties the incremental state (interned data, defaults, the delta reference);
// the sequence's thread stays.
func (s *sequence) clear() {
	s.names = map[uint64]string{}
	s.cats = map[uint64]string{}
	s.annNames = map[uint64]string{}
	s.annStrs = map[uint64]string{}
	s.interned = 0
	s.hasDefTrack, s.hasDefClock, s.hasRef = false, false, false
}

func (d *decoder) defaults(seq *sequence, b []byte) error {
	ok, err := eachField(b, func(f protowalk.Field) error {
		switch {
		case f.Num == 58 && f.Type == protowire.VarintType:
			seq.defClock, seq.hasDefClock = uint32(f.Value), true
		case f.Num == 11 && f.Type == protowire.BytesType:
			ok, _ := eachField(f.Bytes, func(g protowalk.Field) error {
				if g.Num == 11 && g.Type == protowire.VarintType {
					seq.defTrack, seq.hasDefTrack = g.Value, true
				}
				return nil
			})
			if !ok {
				return errBadWire
			}
		}
		return nil
	})
	if !ok || err != nil {
		return d.malformed("trace_packet_defaults")
	}
	return nil
}

func (d *decoder) internedData(seq *sequence, b []byte) error {
	var lerr error
	ok, _ := eachField(b, func(f protowalk.Field) error {
		var m map[uint64]string
		switch f.Num {
		case 1:
			m = seq.cats
		case 2:
			m = seq.names
		case 3:
			m = seq.annNames
		case 29:
			m = seq.annStrs
		default:
			return nil
		}
		if f.Type != protowire.BytesType {
			return errBadWire
		}
		var iid uint64
		var name []byte
		ok, _ := eachField(f.Bytes, func(g protowalk.Field) error {
			switch {
			case g.Num == 1 && g.Type == protowire.VarintType:
				iid = g.Value
			case g.Num == 2 && g.Type == protowire.BytesType:
				name = g.Bytes
			}
			return nil
		})
		if !ok {
			return errBadWire
		}
		if _, dup := m[iid]; !dup {
			if seq.interned >= d.lim.MaxInterned {
				lerr = d.limit("max_interned", int64(d.lim.MaxInterned), "entries",
					"a packet sequence of the Perfetto trace interns more than %d entries", d.lim.MaxInterned)
				return lerr
			}
			seq.interned++
		}
		s, err := d.str(name)
		if err != nil {
			lerr = err
			return err
		}
		m[iid] = s
		return nil
	})
	if lerr != nil {
		return lerr
	}
	if !ok {
		return d.malformed("interned_data")
	}
	return nil
}

func (d *decoder) eventName(seq *sequence, e *event) (string, error) {
	switch {
	case e.hasName:
		return d.str(e.name)
	case e.hasNameIID:
		return d.interned(seq.names, e.nameIID), nil
	case e.hasLegacyName:
		return d.interned(seq.names, e.legacyNameIID), nil
	}
	return "", nil
}

// interned looks up an interned string; an iid the sequence never defined (or whose
// definition came while its state was invalid) is "" and counted.
func (d *decoder) interned(m map[uint64]string, iid uint64) string {
	s, ok := m[iid]
	if !ok {
		d.info.UndefinedInterned++
	}
	return s
}

func (d *decoder) category(seq *sequence, e *event) (string, error) {
	if len(e.cats)+len(e.catIIDs) == 0 {
		return "", nil
	}
	if len(e.cats) == 1 && len(e.catIIDs) == 0 {
		return d.str(e.cats[0])
	}
	if len(e.cats) == 0 && len(e.catIIDs) == 1 {
		return d.interned(seq.cats, e.catIIDs[0]), nil
	}
	var sb strings.Builder
	add := func(s string) {
		if sb.Len() > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(s)
	}
	for _, c := range e.cats {
		add(string(c))
	}
	for _, iid := range e.catIIDs {
		add(d.interned(seq.cats, iid))
	}
	return d.str([]byte(sb.String()))
}
