package trace

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/flameox/flameox/providers/internal/fuzztool"
	"github.com/flameox/flameox/providers/trace/otlp"
	"github.com/flameox/flameox/providers/trace/otlp/otlptest"
)

// fuzzOTLPTables reads b with otlpRange, view "tables"' sink, taking every row: when the
// read succeeds, each table has one valid JSON row per record it counted. (The decoder's
// own fuzz targets are in providers/trace/otlp.)
func fuzzOTLPTables(t *testing.T, b []byte, proto bool) {
	rg := &otlpRange{need: -1}
	for i := range rg.last {
		rg.last[i] = math.MaxInt64
	}
	st, err := otlp.Decode(context.Background(), bytes.NewReader(b), 0, proto, func(*otlp.Span) error { return nil }, rg)
	fuzztool.CheckError(t, err)
	if err != nil {
		return
	}
	for i, n := range [...]int64{st.Resources, st.Scopes, st.Spans, st.Events, st.Links} {
		if int64(len(rg.rows[i])) != n {
			t.Fatalf("%d %s rows, counted %d", len(rg.rows[i]), otlpTableNames[i], n)
		}
		for _, r := range rg.rows[i] {
			if !json.Valid(r) {
				t.Fatalf("invalid %s row %s", otlpTableNames[i], r)
			}
		}
	}
}

// FuzzOTLPTables: go test ./providers/trace -run '^$' -fuzz FuzzOTLPTables -fuzztime 1m
func FuzzOTLPTables(f *testing.F) {
	for _, proto := range []bool{false, true} {
		for _, b := range otlptest.FuzzSeeds(proto) {
			f.Add(b, proto)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte, proto bool) { fuzztool.Bounded(t, func() { fuzzOTLPTables(t, b, proto) }) })
}
