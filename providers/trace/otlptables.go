package trace

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/jsonvalue"
	"github.com/flameox/flameox/providers/trace/otlp"
)

// View "tables" of an OTLP trace (decision 0032): catalog §1.3's rows {table: resources |
// scopes | spans | events | links, ...columns}, every field of the export (attributes
// included) in the same rows for the JSON and the protobuf encoding. The reader
// (providers/trace/otlp) hands each record whole to otlpRange, its otlp.TableSink.

// otlpTableNames are the tables in their order (the catalog's).
var otlpTableNames = [...]string{"resources", "scopes", "spans", "events", "links"}

// otlpRange, the table sink of one page's read, collects the page's rows: for each
// table, the rows from first up to last (exclusive) in the table's own order.
type otlpRange struct {
	first, last [len(otlpTableNames)]int64
	rows        [len(otlpTableNames)][]json.RawMessage
	seen        [len(otlpTableNames)]int64
	need        int64
}

// errPageRead ends a read once the page's rows are collected (otlp.Decode returns the
// sink's error as it is).
var errPageRead = errors.New("page read")

// take reports whether the next row of table t is in the range, counting it.
func (r *otlpRange) take(t int) bool {
	i := r.seen[t]
	r.seen[t]++
	return i >= r.first[t] && i < r.last[t]
}

func (r *otlpRange) add(t int, row []byte) error {
	r.rows[t] = append(r.rows[t], row)
	r.need--
	if r.need == 0 {
		return errPageRead
	}
	return nil
}

func (r *otlpRange) Resource(index int64, res *otlp.Resource) error {
	if !r.take(0) {
		return nil
	}
	o := newRow("resources")
	o.int("resource_index", index)
	o.value("attributes", attributes(res.Attributes))
	o.int("dropped_attributes_count", int64(res.DroppedAttributesCount))
	return r.add(0, o.done())
}

func (r *otlpRange) Scope(resource, index int64, s *otlp.Scope) error {
	if !r.take(1) {
		return nil
	}
	o := newRow("scopes")
	o.int("resource_index", resource)
	o.int("scope_index", index)
	o.value("name", s.Name)
	o.value("version", s.Version)
	o.value("attributes", attributes(s.Attributes))
	o.int("dropped_attributes_count", int64(s.DroppedAttributesCount))
	return r.add(1, o.done())
}

// overlaps reports whether n rows of table t from the next one reach its range.
func (r *otlpRange) overlaps(t int, n int64) bool {
	return n > 0 && r.seen[t] < r.last[t] && r.seen[t]+n > r.first[t]
}

func (r *otlpRange) Wants(events, links int) bool {
	return r.overlaps(2, 1) || r.overlaps(3, int64(events)) || r.overlaps(4, int64(links))
}

func (r *otlpRange) Skip(events, links int) {
	r.seen[2]++
	r.seen[3] += int64(events)
	r.seen[4] += int64(links)
}

func (r *otlpRange) Span(resource, scope, index int64, s *otlp.SpanRecord) error {
	if r.take(2) {
		o := newRow("spans")
		o.int("resource_index", resource)
		o.int("scope_index", scope)
		o.int("span_index", index)
		o.value("trace_id", hexID(s.TraceID))
		o.value("span_id", hexID(s.SpanID))
		o.value("parent_span_id", hexID(s.ParentSpanID))
		o.value("trace_state", s.TraceState)
		o.int("flags", int64(s.Flags))
		o.value("name", s.Name)
		o.value("kind", otlp.KindName(s.Kind))
		o.value("start_time_unix_nano", unixNanos(s.StartTimeUnixNano))
		o.value("end_time_unix_nano", unixNanos(s.EndTimeUnixNano))
		o.value("status_code", otlp.StatusName(s.Status.Code))
		o.value("status_message", s.Status.Message)
		o.value("attributes", attributes(s.Attributes))
		o.int("dropped_attributes_count", int64(s.DroppedAttributesCount))
		o.int("dropped_events_count", int64(s.DroppedEventsCount))
		o.int("dropped_links_count", int64(s.DroppedLinksCount))
		if err := r.add(2, o.done()); err != nil {
			return err
		}
	}
	for i, e := range s.Events {
		if !r.take(3) {
			continue
		}
		o := newRow("events")
		o.int("span_index", index)
		o.int("event_index", int64(i))
		o.value("time_unix_nano", unixNanos(e.TimeUnixNano))
		o.value("name", e.Name)
		o.value("attributes", attributes(e.Attributes))
		o.int("dropped_attributes_count", int64(e.DroppedAttributesCount))
		if err := r.add(3, o.done()); err != nil {
			return err
		}
	}
	for i, l := range s.Links {
		if !r.take(4) {
			continue
		}
		o := newRow("links")
		o.int("span_index", index)
		o.int("link_index", int64(i))
		o.value("trace_id", hexID(l.TraceID))
		o.value("span_id", hexID(l.SpanID))
		o.value("trace_state", l.TraceState)
		o.value("attributes", attributes(l.Attributes))
		o.int("dropped_attributes_count", int64(l.DroppedAttributesCount))
		o.int("flags", int64(l.Flags))
		if err := r.add(4, o.done()); err != nil {
			return err
		}
	}
	return nil
}

// hexID is an id as the OTLP JSON mapping writes it; null when absent or all zero.
func hexID(b []byte) any {
	for _, c := range b {
		if c != 0 {
			return hex.EncodeToString(b)
		}
	}
	return nil
}

// unixNanos is a timestamp, null when absent (0).
func unixNanos(t uint64) any {
	if t == 0 {
		return nil
	}
	return t
}

// attributes are an object of the attributes' values, keys sorted (the last of a
// repeated key wins).
func attributes(kvs []otlp.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for i := range kvs {
		m[kvs[i].Key] = anyValue(&kvs[i].Value)
	}
	return m
}

// anyValue is an AnyValue as a native value: strings, booleans, integers, doubles, bytes
// (base64), arrays and key-value lists (objects); an empty AnyValue, or one holding a
// profiles string index, is null.
func anyValue(v *otlp.AnyValue) any {
	switch v.Kind {
	case otlp.ValueString:
		return v.String
	case otlp.ValueBool:
		return v.Bool
	case otlp.ValueInt:
		return v.Int
	case otlp.ValueDouble:
		return v.Double
	case otlp.ValueBytes:
		return base64.StdEncoding.EncodeToString(v.Bytes)
	case otlp.ValueArray:
		out := make([]any, len(v.Array))
		for i := range v.Array {
			out[i] = anyValue(&v.Array[i])
		}
		return out
	case otlp.ValueKvlist:
		return attributes(v.Kvlist)
	}
	return nil
}

// row builds one ordered table row.
type row struct{ b []byte }

func newRow(table string) *row {
	r := &row{b: append(make([]byte, 0, 256), `{"table":`...)}
	r.b = jsonvalue.AppendString(r.b, table)
	return r
}

func (r *row) key(k string) {
	r.b = append(r.b, ',')
	r.b = jsonvalue.AppendString(r.b, k)
	r.b = append(r.b, ':')
}

func (r *row) int(k string, v int64) { r.key(k); r.b = jsonvalue.AppendInt(r.b, v) }
func (r *row) value(k string, v any) { r.key(k); r.b = jsonvalue.Append(r.b, v) }
func (r *row) done() json.RawMessage { return append(r.b, '}') }

// otlpTablesAnalysis answers view "tables" of an OTLP trace for the tables the prefixes
// select (none: all five): one read counts the tables, each page reads the file again
// for its rows.
func otlpTablesAnalysis(ctx context.Context, in providers.Input, prefixes []string) (*providers.Analysis, error) {
	st, err := readOTLP(ctx, in, func(*otlp.Span) error { return nil })
	if err != nil {
		return nil, err
	}
	counts := [len(otlpTableNames)]int64{st.Resources, st.Scopes, st.Spans, st.Events, st.Links}
	r := &otlpTablePages{in: in}
	listed := []listedTable{}
	for t, name := range otlpTableNames {
		if len(prefixes) == 0 || matchesAny(name, prefixes) {
			r.selected[t] = true
			r.counts[t] = counts[t]
			r.total += counts[t]
			listed = append(listed, listedTable{name, counts[t]})
		}
	}
	a := &providers.Analysis{Provider: provider(), Rows: r, OwnLimitations: true}
	a.Metrics = otlpTables(st, map[string]any{"table_count": int64(len(listed)), "row_count": r.total, "tables": listed})
	a.Limitations = []string{
		"Rows are the export's records as OTLP defines them, {table, ...columns}: resources, scopes, spans, events and links in that order, each in file order; the same rows for OTLP/JSON and OTLP/protobuf.",
		"Ids are hex (null when absent or zero), enums their OTLP names, timestamps Unix nanoseconds (decimal strings beyond 2^53-1, null when absent); attributes are objects with sorted keys, the last of a repeated key kept, bytes as base64; resource_index and scope_index are file ordinals.",
	}
	if len(listed) == 0 {
		a.Limitations = append(a.Limitations, "No table of the export matches the table prefixes (resources, scopes, spans, events, links).")
	}
	if st.Spans == 0 {
		a.Limitations = append(a.Limitations, "no_spans_observed: the export holds no span.")
	}
	return a, nil
}

// otlpTablePages pages the selected OTLP tables, in their order.
type otlpTablePages struct {
	in       providers.Input
	selected [len(otlpTableNames)]bool
	counts   [len(otlpTableNames)]int64
	total    int64
}

func (r *otlpTablePages) Page(ctx context.Context, offset, limit int64, fits func(json.RawMessage) bool) (*providers.Page, error) {
	return pageOf(r.total, offset, limit, func(end int64, page *providers.Page) error {
		rg := &otlpRange{need: end - offset}
		var at int64 // the population index of a table's first row
		for t := range otlpTableNames {
			if !r.selected[t] {
				continue
			}
			rg.first[t] = min(max(offset-at, 0), r.counts[t])
			rg.last[t] = min(max(end-at, 0), r.counts[t])
			at += r.counts[t]
		}
		if err := r.read(ctx, rg); err != nil {
			return err
		}
		for t := range otlpTableNames {
			if int64(len(rg.rows[t])) != rg.last[t]-rg.first[t] {
				return &providers.DecodeError{Source: r.in.Index,
					Message: fmt.Sprintf("source %d changed while it was read: its %s are not those counted", r.in.Index, otlpTableNames[t])}
			}
			for _, b := range rg.rows[t] {
				if fits != nil && !fits(b) {
					return nil
				}
				page.Rows = append(page.Rows, b)
			}
		}
		return nil
	})
}

// read decodes the file with rg as the table sink until rg has its rows.
func (r *otlpTablePages) read(ctx context.Context, rg *otlpRange) error {
	_, err := readOTLPTables(ctx, r.in, func(*otlp.Span) error { return nil }, rg)
	if errors.Is(err, errPageRead) {
		return nil
	}
	return err
}
