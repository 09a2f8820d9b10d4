package perfetto

import (
	"context"
	"errors"
	"io"

	"github.com/flameox/flameox/providers/internal/protowalk"
	"github.com/flameox/flameox/providers/internal/protowire"
)

// TracePacket field numbers (protos/perfetto/trace/trace_packet.proto).
const (
	tpFtraceEvents      = 1
	tpProcessTree       = 2
	tpTrustedUID        = 3
	tpClockSnapshot     = 6
	tpTimestamp         = 8
	tpSequenceID        = 10
	tpTrackEvent        = 11
	tpInternedData      = 12
	tpSequenceFlags     = 13
	tpIncrCleared       = 41
	tpPrevDropped       = 42
	tpProcessDescriptor = 43
	tpThreadDescriptor  = 44
	tpClockID           = 58
	tpDefaults          = 59
	tpTrackDescriptor   = 60
	tpTrustedPID        = 79
	tpFirstOnSequence   = 87
	tpMachineID         = 98

	seqIncrementalStateCleared = 1
	seqNeedsIncrementalState   = 2
)

// packetMeta are the TracePacket fields outside the data oneof, with their wire
// types (all varints except interned_data and trace_packet_defaults).
var packetMeta = map[int]protowire.Type{
	tpTrustedUID: protowire.VarintType, tpTimestamp: protowire.VarintType,
	tpSequenceID: protowire.VarintType, tpInternedData: protowire.BytesType,
	tpSequenceFlags: protowire.VarintType, tpIncrCleared: protowire.VarintType,
	tpPrevDropped: protowire.VarintType, tpClockID: protowire.VarintType,
	tpDefaults: protowire.BytesType, tpTrustedPID: protowire.VarintType,
	tpFirstOnSequence: protowire.VarintType, tpMachineID: protowire.VarintType,
}

// packetMetaWire is packetMeta as a switch, for the per-field loop.
func packetMetaWire(f int) (protowire.Type, bool) {
	switch f {
	case tpTrustedUID, tpTimestamp, tpSequenceID, tpSequenceFlags, tpIncrCleared, tpPrevDropped,
		tpClockID, tpTrustedPID, tpFirstOnSequence, tpMachineID:
		return protowire.VarintType, true
	case tpInternedData, tpDefaults:
		return protowire.BytesType, true
	}
	return 0, false
}

// isNativeKind reports whether the decoder reads the TracePacket data field f.
func isNativeKind(f int) bool {
	switch f {
	case tpTrackEvent, tpTrackDescriptor, tpProcessTree, tpClockSnapshot, tpProcessDescriptor, tpThreadDescriptor:
		return true
	}
	return false
}

// run reads the Trace from r, a record at a time: each packet (Trace.packet, field 1) to
// packetBody, any other record skipped; the end of the file within a record is a cut
// trace (Info.Cut).
func (d *decoder) run(ctx context.Context, r io.Reader) error {
	in := protowalk.NewReader(r, 64<<10)
	d.src = in
	for {
		if d.packet%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		start := in.Offset()
		tag, err := in.Varint()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return d.ended(err, start, -1, 0)
		}
		num, typ := protowire.DecodeTag(tag)
		if num < 1 || typ > 5 {
			return d.decodeErr("the Perfetto trace is malformed before packet %d", d.packet)
		}
		if num != 1 || typ != protowire.BytesType {
			// Trace has only field 1; skip others as protobuf allows.
			if err := d.skipTop(in, start, typ); err != nil {
				return err
			}
			if d.info.Cut != nil {
				return nil
			}
			continue
		}
		n, err := in.Varint()
		if err != nil {
			return d.ended(err, start, -1, 0)
		}
		if n > uint64(d.lim.MaxPacketBytes) {
			return d.limit("max_packet_bytes", d.lim.MaxPacketBytes, "bytes",
				"packet %d of the Perfetto trace is larger than %d bytes", d.packet, d.lim.MaxPacketBytes)
		}
		body := in.Offset()
		b, err := in.Bytes(n)
		if err != nil {
			return d.ended(err, start, int64(n), in.Offset()-body)
		}
		d.info.Packets++
		if err := d.packetBody(b); err != nil {
			return err
		}
		d.packet++
	}
}

// ended answers a read that failed within the record starting at byte start: the end
// of the file there is a cut trace (declared is the record's length, -1 when the file
// ends within its header; present how many of those bytes it holds), anything else the
// reader's own error or a malformed trace.
func (d *decoder) ended(err error, start, declared, present int64) error {
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		d.info.Cut = &Cut{Offset: start, Packets: d.info.Packets, Declared: declared, Present: present}
		return nil
	}
	if rerr := d.src.Err(); rerr != nil {
		return rerr
	}
	return d.decodeErr("the Perfetto trace is malformed before packet %d", d.packet)
}

// skipTop skips a top-level record other than a packet, starting at byte start; the
// end of the file within it is a cut trace.
func (d *decoder) skipTop(in *protowalk.Reader, start int64, typ protowire.Type) error {
	size, err := in.ValueSize(typ)
	switch {
	case err == protowalk.ErrWireType:
		return d.decodeErr("the Perfetto trace is malformed before packet %d", d.packet)
	case err != nil:
		return d.ended(err, start, -1, 0)
	case typ == protowire.BytesType && size > uint64(d.lim.MaxPacketBytes):
		return d.limit("max_packet_bytes", d.lim.MaxPacketBytes, "bytes",
			"a record of the Perfetto trace before packet %d is larger than %d bytes", d.packet, d.lim.MaxPacketBytes)
	}
	if m, err := in.Discard(size); err != nil {
		return d.ended(err, start, int64(size), m)
	}
	return nil
}

// eachField calls fn for every field of b (protowalk.Each): ok is false when b is
// malformed, a field number protobuf's parsers refuse included, or fn refused a field's
// wire type (errBadWire); err is fn's other error.
func eachField(b []byte, fn func(f protowalk.Field) error) (ok bool, err error) {
	ok = protowalk.Each(b, func(f protowalk.Field) bool {
		if !protowalk.ValidNumber(f.Num) {
			return false
		}
		err = fn(f)
		return err == nil
	})
	if err == errBadWire {
		return false, nil
	}
	return ok || err != nil, err
}

// ints calls fn for each value of a repeated integer field, packed or not
// (protowalk.Field.Varints), or for the value of a fixed-width one.
func ints(f protowalk.Field, fn func(uint64)) bool {
	if f.Type == protowire.Fixed64Type || f.Type == protowire.Fixed32Type {
		fn(f.Value)
		return true
	}
	return f.Varints(func(v uint64) bool { fn(v); return true })
}

// packet is what packetBody takes of a TracePacket.
type packet struct {
	ts, clock                 uint64
	hasTS, hasClock, hasSeq   bool
	seq                       uint32
	flags                     uint64
	cleared, dropped          bool
	trackEvent, interned      []byte
	defaults, snapshot        []byte
	trackDesc, threadDesc     []byte
	processDesc, processTree  []byte
	hasTrackEvent, hasDefault bool

	// The packet timestamp in ns, resolved once per packet since sequence-scoped
	// incremental clocks advance with every packet that has a timestamp.
	tsNs   int64
	tsRes  tsResult
	domain uint32
	seqClk bool
}

// packetBody reads one TracePacket: its sequence's state (clears, losses, defaults,
// clocks, interned data), its descriptors, and its track event.
func (d *decoder) packetBody(b []byte) error {
	var p packet
	ok, err := eachField(b, func(f protowalk.Field) error {
		num := int(f.Num) // a valid field number (eachField) fits
		want, meta := packetMetaWire(num)
		if meta && f.Type != want {
			return errBadWire
		}
		switch num {
		case tpTimestamp:
			p.ts, p.hasTS = f.Value, true
		case tpClockID:
			p.clock, p.hasClock = f.Value, true
		case tpSequenceID:
			p.seq, p.hasSeq = uint32(f.Value), true
		case tpSequenceFlags:
			p.flags = f.Value
		case tpIncrCleared:
			p.cleared = f.Value != 0
		case tpPrevDropped:
			p.dropped = f.Value != 0
		case tpInternedData:
			p.interned = f.Bytes
		case tpDefaults:
			p.defaults, p.hasDefault = f.Bytes, true
		case tpTrackEvent:
			p.trackEvent, p.hasTrackEvent = f.Bytes, true
		case tpTrackDescriptor:
			p.trackDesc = f.Bytes
		case tpThreadDescriptor:
			p.threadDesc = f.Bytes
		case tpProcessDescriptor:
			p.processDesc = f.Bytes
		case tpProcessTree:
			p.processTree = f.Bytes
		case tpClockSnapshot:
			p.snapshot = f.Bytes
		}
		if !meta && !isNativeKind(num) {
			d.info.Unread[num]++
		}
		return nil
	})
	if !ok || err != nil {
		return d.malformed("not a TracePacket")
	}
	seq, err := d.sequence(p.seq)
	if err != nil {
		return err
	}
	if p.dropped {
		d.info.PreviousPacketDropped++
	}
	// trace_processor (proto_trace_reader.cc): a clear makes the sequence's incremental
	// state valid, a loss invalid; both need the packet's sequence id.
	switch {
	case p.hasSeq && (p.cleared || p.flags&seqIncrementalStateCleared != 0):
		seq.clear()
		seq.valid = true
	case p.hasSeq && p.dropped:
		seq.valid, seq.hasRef = false, false
	}
	if p.hasDefault {
		if err := d.defaults(seq, p.defaults); err != nil {
			return err
		}
	}
	if p.snapshot != nil {
		if err := d.clockSnapshot(seq, p.snapshot); err != nil {
			return err
		}
	}
	if p.interned != nil && seq.valid {
		if err := d.internedData(seq, p.interned); err != nil {
			return err
		}
	}
	if p.flags&seqNeedsIncrementalState != 0 && !seq.valid {
		d.info.InvalidStatePackets++
		return nil
	}
	if p.trackDesc != nil {
		d.info.TrackDescriptors++
		if err := d.trackDescriptor(p.trackDesc); err != nil {
			return err
		}
	}
	if p.threadDesc != nil && seq.valid {
		// trace_processor ignores it while the state is invalid, so that delta
		// timestamps never start from it.
		pid, tid, name, ref, err := d.threadDescriptor(p.threadDesc)
		if err != nil {
			return err
		}
		seq.pid, seq.tid, seq.hasThread = pid, tid, true
		seq.refNs, seq.hasRef = mulNs(ref, 1000)
		if name != "" {
			d.threadName(pid, tid, name)
		}
	}
	if p.processDesc != nil {
		pid, name, err := d.processDescriptor(p.processDesc)
		if err != nil {
			return err
		}
		if name != "" {
			d.processName(pid, name)
		}
	}
	if p.processTree != nil {
		if err := d.processTreePacket(p.processTree); err != nil {
			return err
		}
	}
	if p.hasTS {
		p.tsNs, p.tsRes, p.domain = d.resolve(seq, &p)
	}
	if p.hasTrackEvent {
		d.info.TrackEventPackets++
		d.stats.Events++
		return d.trackEvent(seq, &p)
	}
	return nil
}

var errBadWire = errors.New("wire type")
