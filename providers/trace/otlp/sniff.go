package otlp

import (
	"bytes"
	"strings"

	"github.com/flameox/flameox/providers/internal/protowalk"
	"github.com/flameox/flameox/providers/internal/protowire"
)

// IsProto sniffs the first bytes of a file for an OTLP protobuf
// ExportTraceServiceRequest (or TracesData): a first record resource_spans = 1 (tag 0x0A)
// whose fields within head are all resource = 1, scope_spans = 2 or schema_url = 3
// (length delimited), a resource (when whole in head) of attributes = 1 (messages),
// dropped_attributes_count = 2 (varint) and entity_refs = 3, and a first scope_spans whose
// first span starts with a 16-byte trace_id = 1. A Perfetto trace (timestamps and
// sequence ids are varints), an XSpace (XPlane id = 1 is a varint) and JSON fail it;
// head must reach the first span's trace_id.
func IsProto(head []byte) bool {
	num, typ, n := protowire.ConsumeTag(head)
	if n < 0 || num != 1 || typ != protowire.BytesType {
		return false
	}
	l, m := protowire.ConsumeVarint(head[n:])
	if m < 0 {
		return false
	}
	rs := head[n+m:]
	if uint64(len(rs)) > l {
		rs = rs[:l]
	}
	for len(rs) > 0 {
		num, typ, n := protowire.ConsumeTag(rs)
		if n < 0 || num < 1 || num > 3 || typ != protowire.BytesType {
			return false
		}
		l, m := protowire.ConsumeVarint(rs[n:])
		if m < 0 {
			return false
		}
		body := rs[n+m:]
		whole := uint64(len(body)) >= l
		if whole {
			body = body[:l]
		}
		switch num {
		case 1:
			if whole && !protowalk.Each(body, func(f protowalk.Field) bool {
				return protowalk.ValidNumber(f.Num) && (f.Num == 2) == (f.Type == protowire.VarintType) &&
					(f.Type == protowire.VarintType || f.Type == protowire.BytesType)
			}) {
				return false
			}
		case 2:
			return firstSpanLooksRight(body)
		}
		if !whole {
			return false
		}
		rs = rs[n+m+int(l):]
	}
	return false
}

// firstSpanLooksRight checks the start of a ScopeSpans: scope = 1 and schema_url = 3
// records, then a spans = 2 record whose first field is a 16-byte trace_id.
func firstSpanLooksRight(b []byte) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num < 1 || num > 3 || typ != protowire.BytesType {
			return false
		}
		l, m := protowire.ConsumeVarint(b[n:])
		if m < 0 {
			return false
		}
		body := b[n+m:]
		if num == 2 {
			fn, ft, k := protowire.ConsumeTag(body)
			if k < 0 || fn != 1 || ft != protowire.BytesType {
				return false
			}
			id, _ := protowire.ConsumeVarint(body[k:])
			return id == 16 && l >= 16
		}
		if uint64(len(body)) < l {
			return false
		}
		b = body[l:]
	}
	return false
}

// ReadAsProto chooses the encoding of a source already known to be OTLP (declared, or
// detected), from its path and its first bytes: whether Decode reads it as protobuf. A
// name ending .json is JSON (the catalog's rule). Otherwise protobuf when the head sniffs
// as an ExportTraceServiceRequest (IsProto), and also when it does not but its first byte
// past a BOM and white space is neither '{' nor '[': a protobuf export whose first
// resource is larger than the sniffed head, or whose first span writes its name before
// its trace id, is still OTLP when declared so, and a JSON document starts with one of
// those (a protobuf export cannot: both are groups). The sniff comes first because a
// protobuf export starts with 0x0a, a newline. An empty or blank file goes to the JSON
// reader, which refuses it as empty.
func ReadAsProto(path string, head []byte) bool {
	if strings.HasSuffix(strings.ToLower(path), ".json") {
		return false
	}
	if IsProto(head) {
		return true
	}
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	head = bytes.TrimLeft(head, " \t\r\n")
	return len(head) > 0 && head[0] != '{' && head[0] != '['
}
