package perfetto

import "github.com/flameox/flameox/providers/internal/protowire"

// IsTrace sniffs the first bytes of a file for a Perfetto Trace.
//
// The rule: a Trace is a sequence of records `packet = 1` (tag byte 0x0A, length
// delimited). head must start with such a record; every record that ends within head
// must be one too, and each such packet a well-formed protobuf message. The first packet
// (or the part of it within head) is checked against the TracePacket schema: every
// top-level field has a valid wire type, known TracePacket fields have the wire type the
// schema gives them (timestamp, sequence id, flags and clock id are varints, data fields
// are messages), the payload of each message-typed field that lies within head is itself
// a well-formed protobuf message, and at least one TracePacket envelope field (timestamp,
// trusted_uid, trusted_packet_sequence_id, sequence_flags, clock id, defaults, interned
// data, ...) is present: every packet the Perfetto service, the SDK or Chromium writes has
// one, and other schemas whose messages happen to fit the data fields (an OTLP
// ExportTraceServiceRequest does) have none. head should hold the first packet whole
// (4 KiB is ample for the corpus; a trace whose first packet is cut before its first
// envelope field is not recognised).
// JSON ('[' or '{'), gzip (0x1F 0x8B) and text fail the first byte; an XSpace
// (XLA's profile.xplane.pb) starts 0x0A too, but its first XPlane's fields do not fit
// TracePacket: name = 2 is a string where TracePacket has the ProcessTree message, and
// id = 1 is a varint where TracePacket has the ftrace bundle.
func IsTrace(head []byte) bool {
	b := head
	first := true
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return !first
		}
		if num != 1 || typ != protowire.BytesType {
			return false
		}
		l, m := protowire.ConsumeVarint(b[n:])
		if m < 0 {
			return !first
		}
		if l > DefaultMaxPacketBytes {
			return false
		}
		body := b[n+m:]
		complete := uint64(len(body)) >= l
		if complete {
			body = body[:l]
		}
		if first {
			if !plausiblePacket(body, complete) {
				return false
			}
			first = false
		} else if complete && !wellFormed(body) {
			return false
		}
		if !complete {
			return true
		}
		b = b[n+m+int(l):]
	}
	return !first
}

// plausiblePacket checks a TracePacket (or its first bytes when !complete).
func plausiblePacket(b []byte, complete bool) bool {
	known := false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return !complete && known
		}
		f := int(num)
		want, meta := packetMeta[f]
		_, data := kinds[f]
		switch {
		case meta:
			if typ != want {
				return false
			}
			known = true
		case data:
			if typ != protowire.BytesType {
				return false
			}
		}
		if typ == protowire.StartGroupType || typ == protowire.EndGroupType {
			return false
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			// Cut by the end of head.
			return !complete && known
		}
		if typ == protowire.BytesType && (meta || data) && f != 36 && f != 50 && f != 133 {
			v, _ := protowire.ConsumeBytes(b[n:])
			if !wellFormed(v) {
				return false
			}
		}
		b = b[n+m:]
	}
	return known
}

// wellFormed reports whether b is a sequence of protobuf fields without groups.
func wellFormed(b []byte) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ == protowire.StartGroupType || typ == protowire.EndGroupType {
			return false
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return false
		}
		b = b[n+m:]
	}
	return true
}
