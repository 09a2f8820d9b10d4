package providers_test

import (
	"context"
	"strings"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/prepare"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/all"
)

func TestCompleteRegistryVerifies(t *testing.T) {
	if err := all.Registry().Verify(); err != nil {
		t.Fatal(err)
	}
}

// without returns the full registry less the analyzer of op and the collector of kind.
func without(op gen.OperationName, kind string) *providers.Registry {
	full := all.Registry()
	r := providers.NewRegistry()
	for _, o := range gen.Operations {
		if a, ok := full.LookupAnalyzer(o.Name); ok && o.Name != op {
			r.Analyzer(a)
		}
	}
	for _, p := range gen.CaptureProviders {
		if c, ok := full.LookupCollector(p.Kind); ok && p.Kind != kind {
			r.Collector(c)
		}
	}
	for _, d := range full.Detectors() {
		r.Detector(d)
	}
	return r
}

func TestVerifyNamesEveryGap(t *testing.T) {
	tests := []struct {
		name string
		reg  *providers.Registry
		want []string
	}{
		{"missing analyzer", without(gen.OperationNameRankCPUHotspots, ""), []string{"released operation rank_cpu_hotspots has no analyzer"}},
		{"missing collector", without("", "hyperfine"), []string{"released capture provider hyperfine has no collector"}},
		{"both", without(gen.OperationNamePreviewArtifact, "perf"), []string{
			"released operation preview_artifact has no analyzer", "released capture provider perf has no collector"}},
		{"empty", providers.NewRegistry(), []string{"format pstats accepted by rank_cpu_hotspots has no detector",
			"released capture provider direct has no collector"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.reg.Verify()
			if err == nil {
				t.Fatal("Verify accepted an incomplete registry")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

func TestVerifyRefusesWhatTheContractDoesNotDeclare(t *testing.T) {
	// An operation and a capture provider the contract declares but does not release;
	// chosen from the contract so that releasing one does not break this test.
	var op gen.OperationName
	for _, o := range gen.Operations {
		if !o.Released && o.FieldsDefinition == "NoFields" {
			op = o.Name
			break
		}
	}
	var kind string
	for _, p := range gen.CaptureProviders {
		if !p.Released {
			kind = p.Kind
			break
		}
	}
	if op == "" || kind == "" {
		t.Skip("every declared operation or capture provider is released")
	}
	r := all.Registry()
	r.Analyzer(providers.Analyze(op, func(context.Context, *providers.Request[gen.NoFields]) (*providers.Analysis, error) {
		return nil, nil
	}))
	r.Collector(providers.Collect(providers.CollectorSpec[gen.DirectProvider]{Kind: kind, File: "x.bin"}))
	r.Collector(providers.Collect(providers.CollectorSpec[gen.DirectProvider]{Kind: "direct", File: "x.bin"}))
	err := r.Verify()
	for _, w := range []string{"analyzer of " + string(op) + " is registered but the operation is not released",
		"collector " + kind + " is registered but the capture provider is not released",
		"capture provider direct has two collectors"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v does not name %q", err, w)
		}
	}
}

func TestDecodeTypedKeepsExplicitZeroOverDefault(t *testing.T) {
	// hyperfine's warmup defaults to 1; an explicit 0 must survive.
	p, err := providers.DecodeTyped[gen.HyperfineProvider](map[string]any{"kind": "hyperfine", "warmup": 0})
	if err != nil || p.Warmup != 0 || p.Runs != 10 {
		t.Fatalf("got %+v, %v; want warmup 0 and the default runs 10", p, err)
	}
	if _, err := providers.DecodeTyped[gen.HyperfineProvider](map[string]any{"kind": "hyperfine", "color": "red"}); err == nil {
		t.Fatal("an unknown field was accepted")
	}
}

// TestVerifyChecksTheRecords: a preparable provider without a record, a second record
// of one id and a record outside the contract are each named.
func TestVerifyChecksTheRecords(t *testing.T) {
	full := all.Registry()
	r := without("", "")
	for _, tool := range full.Tools() {
		if tool.ID != gen.PreparableProviderPerf {
			r.Tool(tool)
		}
	}
	nsys, _ := full.Tools().Lookup(gen.PreparableProviderNsightSystems)
	r.Tool(nsys)
	r.Tool(prepare.Tool{ID: "valgrind", Class: prepare.HostTool, Executables: []string{"valgrind"}})
	err := r.Verify()
	for _, w := range []string{"preparable provider perf has no record", "preparable provider nsight-systems has two records",
		"record valgrind is registered but is not a preparable provider of the contract"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v does not name %q", err, w)
		}
	}
}
