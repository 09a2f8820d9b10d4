package inference_test

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers/all"
)

// TestDetectInferenceFormats detects the corpus exports as the runtime does (name and
// the first 512 bytes), through every family's detectors: each inference format comes
// first, and its generic format still follows for preview_artifact.
func TestDetectInferenceFormats(t *testing.T) {
	r := all.Registry()
	for name, want := range map[string][]gen.Format{
		"aiperf__profile_export.jsonl":                                 {gen.FormatAiperf, gen.FormatJsonl, gen.FormatText},
		"aiperf__profile_export_aiperf.json":                           {gen.FormatAiperf, gen.FormatJSON, gen.FormatText},
		"aiperf__profile_export_aiperf.csv":                            {gen.FormatAiperf, gen.FormatCSV, gen.FormatText},
		"h200-benchmarks__sglang_bench_serving_llama70b_offline.jsonl": {gen.FormatSglangBenchmark, gen.FormatJsonl, gen.FormatText},
		"h200-benchmarks__sglang_bench_serving_llama70b_online.jsonl":  {gen.FormatSglangBenchmark, gen.FormatJsonl, gen.FormatText},
		"Mooncake__conversation_trace_head2000.jsonl":                  {gen.FormatMooncakeTrace, gen.FormatJsonl, gen.FormatText},
		"Mooncake__synthetic_trace_head500.jsonl":                      {gen.FormatMooncakeTrace, gen.FormatJsonl, gen.FormatText},
		// Neighbours that must stay what they were.
		"pyperf__telco.json": {gen.FormatPyperf, gen.FormatJSON, gen.FormatText},
		// OTLP/JSON is otlp since issue 15, and never an inference format.
		"otlp__trace.json": {gen.FormatOtlp, gen.FormatJSON, gen.FormatText},
	} {
		f, err := os.Open(testtool.Corpus(t, name))
		if err != nil {
			t.Fatal(err)
		}
		head := make([]byte, 512)
		n, _ := f.Read(head)
		f.Close()
		if d := cmp.Diff(want, r.Detect(name, head[:n])); d != "" {
			t.Errorf("Detect(%s) (-want +got):\n%s", name, d)
		}
	}
	// A vLLM result as vllm bench serve names it (constructed: see vllmResult).
	head := `{"date": "20260101-120000", "endpoint_type": "vllm", "backend": "vllm", "label": null, "model_id": "m", "tokenizer_id": "m", "num_prompts": 100,`
	if d := cmp.Diff([]gen.Format{gen.FormatVllmBenchmark, gen.FormatJSON, gen.FormatText}, r.Detect("vllm-inf-m-20260101.json", []byte(head))); d != "" {
		t.Errorf("vLLM result (-want +got):\n%s", d)
	}
}
