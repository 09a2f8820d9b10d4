package trace

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// maxOTLPTraces bounds the distinct trace ids one read numbers (the slice rows' track_id).
const maxOTLPTraces = 1 << 22

// readOTLP decodes one OTLP source, calling visit for every span in file order, in the
// encoding otlpIsProto chooses.
func readOTLP(ctx context.Context, in providers.Input, visit func(*OTLPSpan) error) (*OTLPStats, error) {
	return readOTLPTables(ctx, in, visit, nil)
}

// readOTLPTables is readOTLP, also passing every record whole to tables when it is set.
func readOTLPTables(ctx context.Context, in providers.Input, visit func(*OTLPSpan) error, tables otlpTableSink) (*OTLPStats, error) {
	r, err := providers.OpenReadAhead(ctx, in, maxTraceBytes)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(4096)
	return decodeOTLP(ctx, br, in.Index, otlpIsProto(in.Path, head), visit, tables)
}

// otlpIsProto chooses the encoding of a source already known to be OTLP (declared, or
// detected). A name ending .json is JSON (the catalog's rule). Otherwise protobuf when
// the head sniffs as an ExportTraceServiceRequest (IsOTLPProto), and also when it does
// not but its first byte past a BOM and white space is neither '{' nor '[': a protobuf
// export whose first resource is larger than the sniffed head, or whose first span
// writes its name before its trace id, is still OTLP when declared so, and a JSON
// document starts with one of those (a protobuf export cannot: both are groups). The
// sniff comes first because a protobuf export starts with 0x0a, a newline. An empty or
// blank file goes to the JSON reader, which refuses it as empty.
func otlpIsProto(path string, head []byte) bool {
	if strings.HasSuffix(strings.ToLower(path), ".json") {
		return false
	}
	if IsOTLPProto(head) {
		return true
	}
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	head = bytes.TrimLeft(head, " \t\r\n")
	return len(head) > 0 && head[0] != '{' && head[0] != '['
}

// timing is a span's start and duration, when both timestamps are present, the end is
// not before the start, and both fit int64 nanoseconds.
func timing(s *OTLPSpan) (ts, dur int64, ok bool) {
	if s.Start == 0 || s.End == 0 || s.End < s.Start || s.End > math.MaxInt64 {
		return 0, 0, false
	}
	return int64(s.Start), int64(s.End - s.Start), true
}

// otlpTables are the table counts every OTLP result reports.
func otlpTables(st *OTLPStats, m map[string]any) map[string]any {
	if m == nil {
		m = map[string]any{}
	}
	m["resources_count"], m["scopes_count"], m["spans_count"] = st.Resources, st.Scopes, st.Spans
	m["events_count"], m["links_count"] = st.Events, st.Links
	// The whole file is read: the counts are exact.
	m["counts_are_lower_bounds"] = false
	return m
}

func otlpLimitations(st *OTLPStats) []string {
	if st.SpansBeforeResource > 0 {
		return []string{fmt.Sprintf("%d spans were written before their resource; their service.name is unknown to a streaming read (process_name null).", st.SpansBeforeResource)}
	}
	return nil
}

// otlpSlice is one span selected as a slice.
type otlpSlice struct {
	id, ts, dur, track int64
	name               string
	kind               int32
	service            *string
	trace              [16]byte
	parentSpan         [8]byte
	hasParent          bool
	parent             *int64
}

func otlpByStart(a, b *otlpSlice) bool {
	if a.ts != b.ts {
		return a.ts < b.ts
	}
	if a.dur != b.dur {
		return a.dur > b.dur
	}
	return a.id < b.id
}

func otlpByStartID(a, b *otlpSlice) bool {
	if a.ts != b.ts {
		return a.ts < b.ts
	}
	return a.id < b.id
}

type spanKey struct {
	trace [16]byte
	span  [8]byte
}

// otlpSlices is the ranked population of summarize_trace and inspect_trace_window over
// an OTLP source: the timed spans pick accepts, as slices.
func otlpSlices(in providers.Input, f *filter, less func(a, b *otlpSlice) bool, pick func(ts, dur int64) bool,
	figures func(m map[string]any, n int64) string, row func(s *otlpSlice) any) providers.Rows {
	return &ranked[otlpSlice]{less: less,
		fill: func(ctx context.Context, keep func(*otlpSlice)) (int64, *providers.Page, error) {
			traces := map[[16]byte]int64{}
			var n, untimed, excluded int64
			var c otlpSlice
			st, err := readOTLP(ctx, in, func(s *OTLPSpan) error {
				t, ok := traces[s.TraceID]
				if !ok {
					if len(traces) >= maxOTLPTraces {
						return &providers.LimitError{Source: in.Index, Limit: maxOTLPTraces, Unit: "traces",
							Message: fmt.Sprintf("source %d holds more than %d distinct trace ids", in.Index, maxOTLPTraces)}
					}
					t = int64(len(traces))
					traces[s.TraceID] = t
				}
				ts, dur, ok := timing(s)
				if !ok {
					untimed++
					return nil
				}
				if !pick(ts, dur) {
					return nil
				}
				if !f.span(s.Name, kindName(s.Kind), dur, true) {
					excluded++
					return nil
				}
				n++
				c = otlpSlice{id: s.Ordinal, ts: ts, dur: dur, track: t, name: s.Name, kind: s.Kind, service: s.Service,
					trace: s.TraceID, parentSpan: s.ParentSpanID, hasParent: s.HasParent}
				keep(&c)
				return nil
			})
			if err != nil {
				return 0, nil, err
			}
			m := otlpTables(st, nil)
			m["trace_count"] = len(traces)
			m["untimed_span_count"] = untimed
			lim := otlpLimitations(st)
			empty := figures(m, n)
			f.figures(m, excluded)
			switch {
			case n == 0 && excluded > 0:
				lim = append(lim, f.emptyNote(excluded, "spans"))
			case n == 0:
				lim = append(lim, empty)
			}
			return n, &providers.Page{Metrics: m, Limitations: lim}, nil
		},
		rows: func(ctx context.Context, sel []otlpSlice) ([]any, error) {
			if err := otlpParents(ctx, in, sel); err != nil {
				return nil, err
			}
			out := make([]any, len(sel))
			for i := range sel {
				out[i] = row(&sel[i])
			}
			return out, nil
		}}
}

// otlpParents resolves the parent span ordinals of a page: the first span in the file
// with the parent's trace and span id. It reads the source again only when the page holds
// a span with a parent.
func otlpParents(ctx context.Context, in providers.Input, sel []otlpSlice) error {
	want := map[spanKey]*int64{}
	for i := range sel {
		if sel[i].hasParent {
			want[spanKey{sel[i].trace, sel[i].parentSpan}] = nil
		}
	}
	if len(want) == 0 {
		return nil
	}
	if _, err := readOTLP(ctx, in, func(s *OTLPSpan) error {
		k := spanKey{s.TraceID, s.SpanID}
		if p, ok := want[k]; ok && p == nil {
			id := s.Ordinal
			want[k] = &id
		}
		return nil
	}); err != nil {
		return err
	}
	for i := range sel {
		if sel[i].hasParent {
			// A span that names itself as its parent has none.
			if p := want[spanKey{sel[i].trace, sel[i].parentSpan}]; p != nil && *p != sel[i].id {
				sel[i].parent = p
			}
		}
	}
	return nil
}

func kindName(k int32) string { return enumName(spanKinds, "SPAN_KIND_", k) }

func otlpSliceRow(s *otlpSlice) any {
	kind := kindName(s.kind)
	return gen.TraceSliceRow{ID: s.id, ParentID: s.parent, Name: sliceName(s.name), Ts: nanos(s.ts), Dur: nanos(s.dur),
		TrackID: s.track, Category: &kind, ProcessName: s.service, Phase: "span"}
}

func summarizeOTLP(in providers.Input, f *filter) *providers.Analysis {
	return &providers.Analysis{Provider: provider(), Rows: otlpSlices(in, f, otlpByStart,
		func(_, dur int64) bool { return dur > 0 },
		func(m map[string]any, n int64) string {
			m["slice_count"] = n
			return "no_slices_observed: the trace holds no span with a positive duration."
		}, otlpSliceRow)}
}

func windowOTLP(in providers.Input, start, end int64, f *filter) *providers.Analysis {
	return &providers.Analysis{Provider: provider(), Rows: otlpSlices(in, f, otlpByStartID,
		func(ts, dur int64) bool { return overlaps(ts, dur, start, end) },
		func(m map[string]any, n int64) string {
			m["matching_slice_count"] = n
			m["start_ns"], m["end_ns"] = nanos(start), nanos(end)
			return "no_slices_in_window: no span of the trace overlaps the window; the metrics count the whole trace."
		},
		func(s *otlpSlice) any {
			kind := kindName(s.kind)
			return gen.TraceWindowRow{ID: s.id, ParentID: s.parent, Name: sliceName(s.name), Category: &kind,
				Ts: nanos(s.ts), Dur: nanos(s.dur), TrackID: s.track}
		})}
}

// operation aggregates the spans of one (name, kind, status).
type operation struct {
	name         string
	kind, status int32
	calls, timed int64
	// total is the exact sum of the timed durations, covered the part of them child
	// spans cover.
	total, covered u128
	max            int64
	index          int32
}

func cmpOps(a, b *operation) int {
	if c := b.total.cmp(a.total); c != 0 {
		return c
	}
	if a.calls != b.calls {
		return cmpU(uint64(b.calls), uint64(a.calls))
	}
	if a.name != b.name {
		if a.name < b.name {
			return -1
		}
		return 1
	}
	if a.kind != b.kind {
		return int(a.kind - b.kind)
	}
	return int(a.status - b.status)
}

func cmpU(a, b uint64) int {
	if a < b {
		return -1
	}
	return 1
}

// maxOperations bounds the distinct operations one read aggregates.
const maxOperations = providers.MaxProjectionRows

func summarizeOperations(ctx context.Context, req *providers.Request[gen.TraceSliceFields]) (*providers.Analysis, error) {
	if a, ok, err := tablesView(ctx, gen.OperationNameSummarizeTraceOperations, req); ok || err != nil {
		return a, err
	}
	in, f := req.Inputs[0], sliceFilter(req.Fields)
	if err := unavailable(in); err != nil {
		return nil, err
	}
	switch {
	case isNsys(in.Format):
		return nsysOperations(ctx, in, req.Limits, f)
	case !isOTLP(in.Format):
		tp, err := admitTraceProcessor(ctx, in, req.Limits)
		if err != nil {
			return nil, err
		}
		return sliceOperations(ctx, in, tp, f, &providers.Analysis{Provider: provider()})
	}
	return otlpOperations(ctx, in, f)
}

// otlpOperations ranks an OTLP trace's spans by (name, kind, status).
func otlpOperations(ctx context.Context, in providers.Input, f *filter) (*providers.Analysis, error) {
	type key struct {
		name         string
		kind, status int32
	}
	ops := map[key]*operation{}
	var missing, dropped, excluded int64
	// spans keeps what self time needs of every span, until maxSelfSpans.
	var spans []otlpSelfSpan
	selfKept := true
	st, err := readOTLP(ctx, in, func(s *OTLPSpan) error {
		ts, dur, timed := timing(s)
		var self *otlpSelfSpan
		if selfKept {
			if len(spans) == maxSelfSpans {
				spans, selfKept = nil, false
			} else {
				spans = append(spans, otlpSelfSpan{trace: s.TraceID, span: s.SpanID, parent: s.ParentSpanID,
					start: ts, end: ts + dur, op: -1, hasParent: s.HasParent, timed: timed})
				self = &spans[len(spans)-1]
			}
		}
		if f != nil && !f.span(s.Name, kindName(s.Kind), dur, timed) {
			excluded++
			return nil
		}
		k := key{s.Name, s.Kind, s.StatusCode}
		o := ops[k]
		if o == nil {
			if len(ops) >= maxOperations {
				dropped++
				return nil
			}
			o = &operation{name: s.Name, kind: s.Kind, status: s.StatusCode, index: int32(len(ops))}
			ops[k] = o
		}
		if self != nil {
			self.op = o.index
		}
		o.calls++
		if !timed {
			missing++
			return nil
		}
		o.total.add(dur)
		if o.timed == 0 || dur > o.max {
			o.max = dur
		}
		o.timed++
		return nil
	})
	if err != nil {
		return nil, err
	}
	list := make([]*operation, 0, len(ops))
	for _, o := range ops {
		list = append(list, o)
	}
	if selfKept {
		covered := otlpSelfTime(spans, len(ops))
		for _, o := range list {
			o.covered = covered[o.index]
		}
	}
	spans = nil
	sort.Slice(list, func(i, j int) bool { return cmpOps(list[i], list[j]) < 0 })
	m := otlpTables(st, map[string]any{"operation_count": len(list), "span_count": st.Spans, "missing_duration_count": missing})
	lim := otlpLimitations(st)
	if !selfKept {
		lim = append(lim, fmt.Sprintf("The trace holds more than %d spans: self_duration_ns is not computed.", maxSelfSpans))
	}
	if dropped > 0 {
		lim = append(lim, fmt.Sprintf("More than %d distinct operations: %d spans of further operations were not aggregated.", maxOperations, dropped))
	}
	f.figures(m, excluded)
	switch {
	case len(list) == 0 && excluded > 0:
		lim = append(lim, f.emptyNote(excluded, "spans"))
	case len(list) == 0:
		lim = append(lim, "no_spans_observed: the trace holds no span.")
	}
	// A row's share is of the summed total of the listed rows of its span kind.
	totals := map[int32]*big.Int{}
	for _, o := range list {
		if totals[o.kind] == nil {
			totals[o.kind] = new(big.Int)
		}
		totals[o.kind].Add(totals[o.kind], o.total.big())
	}
	return &providers.Analysis{Provider: provider(), Metrics: m, Limitations: lim,
		Rows: providers.ProjectSlice(list, func(o *operation) gen.TraceOperationRow {
			row := gen.TraceOperationRow{Operation: sliceName(o.name), SpanKind: kindName(o.kind),
				StatusCode: ptr(enumName(statusCodes, "STATUS_CODE_", o.status)), CallCount: o.calls, TotalDurationNS: bigNanos(o.total.big()),
				ShareOfKind: share(o.total.big(), totals[o.kind])}
			if selfKept {
				row.SelfDurationNS = bigNanos(new(big.Int).Sub(o.total.big(), o.covered.big()))
			}
			if o.timed > 0 {
				row.MeanDurationNS = bigNanos(meanHalfEven(o.total.big(), o.timed))
				row.MaxDurationNS = nanos(o.max)
			}
			return row
		})}, nil
}

// meanHalfEven is total/n rounded half to even.
func meanHalfEven(total *big.Int, n int64) *big.Int {
	d := big.NewInt(n)
	q, r := new(big.Int).QuoRem(total, d, new(big.Int))
	r2 := r.Lsh(r, 1)
	if c := r2.Cmp(d); c > 0 || (c == 0 && q.Bit(0) == 1) {
		q.Add(q, big.NewInt(1))
	}
	return q
}

// transition is one lifecycle row: a span start (0), event (1) or end (2).
type transition struct {
	time    uint64
	span    [8]byte
	kind    int8
	event   int32
	ordinal int64
	trace   [16]byte
	parent  [8]byte
	hasPar  bool
	name    string
	evName  string
}

var transitionNames = [...]string{"span_started", "span_event", "span_ended"}

func byLifecycle(a, b *transition) bool {
	if a.time != b.time {
		return a.time < b.time
	}
	if a.span != b.span {
		for i := range a.span {
			if a.span[i] != b.span[i] {
				return a.span[i] < b.span[i]
			}
		}
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	if a.event != b.event {
		return a.event < b.event
	}
	return a.ordinal < b.ordinal
}

// unanos renders unsigned nanoseconds like nanos.
func unanos(v uint64) any {
	if v > 1<<53-1 {
		return new(big.Int).SetUint64(v).String()
	}
	return int64(v)
}

func summarizeLifecycle(ctx context.Context, req *providers.Request[gen.TableViewFields]) (*providers.Analysis, error) {
	if a, ok, err := tablesView(ctx, gen.OperationNameSummarizeTraceLifecycle, req); ok || err != nil {
		return a, err
	}
	in := req.Inputs[0]
	if isNsys(in.Format) {
		return nsysLifecycle(ctx, in, req.Limits)
	}
	return &providers.Analysis{Provider: provider(), Rows: &ranked[transition]{less: byLifecycle,
		fill: func(ctx context.Context, keep func(*transition)) (int64, *providers.Page, error) {
			var n, missing int64
			var c transition
			st, err := readOTLP(ctx, in, func(s *OTLPSpan) error {
				c = transition{span: s.SpanID, ordinal: s.Ordinal, trace: s.TraceID, parent: s.ParentSpanID, hasPar: s.HasParent, name: s.Name}
				offer := func(t uint64, kind int8, ev int32, name string) {
					if t == 0 {
						missing++
						return
					}
					n++
					c.time, c.kind, c.event, c.evName = t, kind, ev, name
					keep(&c)
				}
				offer(s.Start, 0, 0, "")
				for i := range s.Events {
					offer(s.Events[i].Time, 1, int32(i), s.Events[i].Name)
				}
				offer(s.End, 2, 0, "")
				return nil
			})
			if err != nil {
				return 0, nil, err
			}
			m := otlpTables(st, map[string]any{"transition_count": n, "span_count": st.Spans, "event_count": st.Events})
			lim := otlpLimitations(st)
			if missing > 0 {
				m["missing_timestamp_count"] = missing
				lim = append(lim, fmt.Sprintf("%d span starts, ends or events have no timestamp and are not listed.", missing))
			}
			if n == 0 {
				lim = append(lim, "no_spans_observed: the trace holds no timed span.")
			}
			return n, &providers.Page{Metrics: m, Limitations: lim}, nil
		},
		rows: func(_ context.Context, sel []transition) ([]any, error) {
			out := make([]any, len(sel))
			for i := range sel {
				t := &sel[i]
				row := gen.TraceLifecycleRow{Transition: transitionNames[t.kind], TimeUnixNano: unanos(t.time),
					TraceID: hex.EncodeToString(t.trace[:]), SpanID: hex.EncodeToString(t.span[:]), Operation: sliceName(t.name)}
				if t.hasPar {
					p := hex.EncodeToString(t.parent[:])
					row.ParentSpanID = &p
				}
				if t.kind == 1 {
					e := t.evName
					row.EventName = &e
				}
				out[i] = row
			}
			return out, nil
		}}}, nil
}
