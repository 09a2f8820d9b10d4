package trace

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/otlp/otlptest"
)

// TestOTLPOperationsAgainstPython pages the three OTLP analyses and compares their rows
// with the truth script's.
func TestOTLPOperationsAgainstPython(t *testing.T) {
	for _, c := range otlptest.Cases(t) {
		t.Run(c.Name, func(t *testing.T) {
			tr := otlptest.TruthFor(t, c)
			in := providers.Input{Path: c.Path, Format: gen.FormatOtlp}
			req := &providers.Request[gen.TableViewFields]{Fields: &gen.TableViewFields{}, Inputs: []providers.Input{in}}

			a, err := summarize(context.Background(), sliceReq(req))
			if err != nil {
				t.Fatal(err)
			}
			type sliceCols struct {
				ID          int64   `json:"id"`
				ParentID    *int64  `json:"parent_id"`
				Name        string  `json:"name"`
				Ts          any     `json:"ts"`
				Dur         any     `json:"dur"`
				TrackID     int64   `json:"track_id"`
				Category    string  `json:"category"`
				ProcessName *string `json:"process_name"`
			}
			got, _ := pageAll[sliceCols](t, a.Rows, 2)
			compareRows(t, "summarize_trace", tr.Slices, got)

			a, err = summarizeOperations(context.Background(), sliceReq(req))
			if err != nil {
				t.Fatal(err)
			}
			ops, _ := pageAll[gen.TraceOperationRow](t, a.Rows, 3)
			compareRows(t, "summarize_trace_operations", tr.Operations, ops)
			if a.Metrics["operation_count"] != len(tr.Operations) {
				t.Errorf("operation_count %v, want %d", a.Metrics["operation_count"], len(tr.Operations))
			}

			a, err = summarizeLifecycle(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			life, m := pageAll[gen.TraceLifecycleRow](t, a.Rows, 3)
			compareRows(t, "summarize_trace_lifecycle", tr.Lifecycle, life)
			if m["transition_count"] != int64(len(tr.Lifecycle)) || m["span_count"] != tr.Tables["spans_count"] || m["event_count"] != tr.Tables["events_count"] {
				t.Errorf("lifecycle metrics %v", m)
			}
		})
	}
}

// compareRows compares rows as JSON values (numbers as json.Number on both sides).
func compareRows[T any](t *testing.T, what string, want []json.RawMessage, got []T) {
	t.Helper()
	norm := func(b []byte) any {
		var v any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	var w, g []any
	for _, r := range want {
		w = append(w, norm(r))
	}
	for i := range got {
		b, err := json.Marshal(got[i])
		if err != nil {
			t.Fatal(err)
		}
		g = append(g, norm(b))
	}
	if d := cmp.Diff(w, g); d != "" {
		t.Errorf("%s rows (-python +flameox):\n%s", what, d)
	}
}

// TestOTLPProtoDeclared: a protobuf export that detection's sniffing does not recognise
// (a first resource larger than the sniffed head; a span that writes its name before its
// trace id, as the wire format allows) is read as protobuf once declared OTLP, not as
// JSON.
func TestOTLPProtoDeclared(t *testing.T) {
	msg := func(num protowire.Number, body []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), body)
	}
	str := func(num protowire.Number, s string) []byte { return msg(num, []byte(s)) }
	attr := func(k, v string) []byte { return msg(1, append(str(1, k), msg(2, str(1, v))...)) }
	fixed := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendFixed64(protowire.AppendTag(nil, num, protowire.Fixed64Type), v)
	}
	export := func(resource, span []byte) []byte {
		return msg(1, append(msg(1, resource), msg(2, msg(2, span))...))
	}
	ids := append(msg(1, bytes.Repeat([]byte{1}, 16)), msg(2, bytes.Repeat([]byte{2}, 8))...)
	times := append(fixed(7, 1000), fixed(8, 1010)...)
	inOrder := append(append(append([]byte{}, ids...), str(5, "a")...), times...)
	nameFirst := append(append(str(5, "a"), ids...), times...)
	service := attr("service.name", "svc")
	big := append(append([]byte{}, service...), attr("process.command_args", strings.Repeat("x", 5000))...)
	// A first ResourceSpans of 123 bytes starts the file 0x0a 0x7b: a newline, then '{'.
	var pad []byte
	for n := 0; ; n++ {
		r := append(append([]byte{}, service...), attr("k", strings.Repeat("x", n))...)
		if rs := append(msg(1, r), msg(2, msg(2, inOrder))...); len(rs) == 123 {
			pad = r
			break
		} else if len(rs) > 123 {
			t.Fatal("no padding gives a 123-byte ResourceSpans")
		}
	}
	for _, c := range []struct {
		name string
		file []byte
	}{
		{"large first resource", export(big, inOrder)},
		{"name before trace id", export(service, nameFirst)},
		{"starts like a newline and a brace", export(pad, inOrder)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "starts like a newline and a brace" && !bytes.HasPrefix(c.file, []byte("\n{")) {
				t.Fatalf("the file starts % x", c.file[:2])
			}
			rows := summarizeOTLPFile[map[string]any](t, "trace.binpb", c.file)
			if len(rows) != 1 || rows[0]["name"] != "a" || fmt.Sprint(rows[0]["dur"]) != "10" || rows[0]["process_name"] != "svc" {
				t.Errorf("rows %v", rows)
			}
		})
	}
}

// TestOTLPJSONWithBOM: an OTLP JSON file written with a UTF-8 byte order mark is read,
// under a .json name or another.
func TestOTLPJSONWithBOM(t *testing.T) {
	doc := "\xef\xbb\xbf" + `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},` +
		`"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"a",` +
		`"startTimeUnixNano":"1000","endTimeUnixNano":"1010"}]}]}]}`
	for _, name := range []string{"trace.json", "trace.otlp"} {
		rows := summarizeOTLPFile[map[string]any](t, name, []byte(doc))
		if len(rows) != 1 || rows[0]["name"] != "a" || rows[0]["process_name"] != "svc" {
			t.Errorf("%s: rows %v", name, rows)
		}
	}
}

// TestOTLPSelfParent: a span whose parent span id is its own span id has no parent (it
// was listed as its own parent).
func TestOTLPSelfParent(t *testing.T) {
	doc := `{"resourceSpans":[{"scopeSpans":[{"spans":[` +
		`{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","parentSpanId":"0102030405060708","name":"self","startTimeUnixNano":"1000","endTimeUnixNano":"1010"},` +
		`{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718","parentSpanId":"0102030405060708","name":"child","startTimeUnixNano":"1001","endTimeUnixNano":"1002"}]}]}]}`
	rows := summarizeOTLPFile[idRow](t, "trace.json", []byte(doc))
	if len(rows) != 2 || rows[0].ID != 0 || rows[0].ParentID != nil || rows[1].ID != 1 || rows[1].ParentID == nil || *rows[1].ParentID != 0 {
		t.Errorf("rows %+v", rows)
	}
}

// summarizeOTLPFile writes b as a file named name, declared OTLP, and returns every row
// of summarize_trace over it.
func summarizeOTLPFile[T any](t *testing.T, name string, b []byte) []T {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	in := providers.Input{Path: path, Format: gen.FormatOtlp}
	a, err := summarize(context.Background(), &providers.Request[gen.TraceSliceFields]{Fields: &gen.TraceSliceFields{}, Inputs: []providers.Input{in}})
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := pageAll[T](t, a.Rows, 10)
	return rows
}
