package static

import (
	"context"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers/internal/fuzztool"
	"github.com/flameox/flameox/providers/providerstest"
)

// FuzzReadSARIF: go test ./providers/static -run '^$' -fuzz FuzzReadSARIF -fuzztime 1m
func FuzzReadSARIF(f *testing.F) {
	fuzztool.Corpus(f, "local__clang14_static_analyzer.sarif", "local__flawfinder_2.0.19.sarif",
		"sarif-tutorials__Catastrophic_execution_error.sarif", "sarif-tutorials__CodeFlows.sarif",
		"sarif-tutorials__Empty_runs.sarif", "sarif-tutorials__Suppressions.sarif")
	for _, s := range []string{
		`{"version":"2.1.0","runs":[]}`,
		`{"version":"2.0.0","runs":[]}`,
		`{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"t","rules":[{"id":"R1","shortDescription":{"text":"s"}}]}},` +
			`"originalUriBaseIds":{"SRC":{"uri":"file:///src/"}},` +
			`"results":[{"ruleId":"R1","ruleIndex":0,"level":"warning","message":{"text":"x {0} {{y}}","arguments":["a"]},` +
			`"locations":[{"physicalLocation":{"artifactLocation":{"uri":"a.c","uriBaseId":"SRC"},"region":{"startLine":3,"startColumn":2}}}],` +
			`"suppressions":[{"kind":"inSource"}]},{"message":{"id":"m"}},{"level":"bogus"}]}]}`,
		`{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"t"}},"invocations":[{"executionSuccessful":false,"toolExecutionNotifications":[{"level":"error","message":{"text":"boom"}}]}]}]}`,
	} {
		f.Add([]byte(s))
	}
	o, err := compile(&gen.StaticFields{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := fuzztool.WriteInput(t, "log.sarif", b)
		c, err := readCandidates(context.Background(), providerstest.Input(t, p, gen.FormatSarif), 0, o, 8)
		fuzztool.CheckError(t, err, p)
		if err != nil {
			return
		}
		for what, n := range map[string]int64{"results": c.results, "normalized": c.normalized, "excluded": c.excluded,
			"invalid": c.invalid, "omitted": c.omitted, "suppressed": c.suppressed} {
			fuzztool.NonNegative(t, what, n)
		}
		if c.normalized+c.excluded+c.invalid != c.results {
			t.Fatalf("normalized %d + excluded %d + invalid %d != results %d", c.normalized, c.excluded, c.invalid, c.results)
		}
		if int64(len(c.rows))+c.omitted != c.normalized || c.suppressed > c.normalized {
			t.Fatalf("rows %d + omitted %d != normalized %d (suppressed %d)", len(c.rows), c.omitted, c.normalized, c.suppressed)
		}
		var levels int64
		for _, n := range c.levels {
			levels += n
		}
		if levels != c.normalized {
			t.Fatalf("levels sum to %d, normalized %d", levels, c.normalized)
		}
	})
}
