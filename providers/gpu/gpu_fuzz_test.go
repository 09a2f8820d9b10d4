package gpu

import (
	"context"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/fuzztool"
)

// FuzzReadSanitizer: go test ./providers/gpu -run '^$' -fuzz FuzzReadSanitizer -fuzztime 1m
func FuzzReadSanitizer(f *testing.F) {
	fuzztool.Corpus(f, "h200__sanitizer-memcheck-clean.xml", "h200__sanitizer-memcheck-oob.xml", "h200__sanitizer-racecheck.xml")
	for _, s := range []string{
		`<ComputeSanitizerOutput></ComputeSanitizerOutput>`,
		`<?xml version="1.0"?><ComputeSanitizerOutput><record><kind>Precise</kind><level>Error</level>` +
			`<who><threadIdx><x>1</x><y>0</y><z>0</z></threadIdx><blockIdx><x>2</x><y>0</y><z>0</z></blockIdx></who>` +
			`<what><text>Invalid __global__ write</text><size>4</size><direction>write</direction><address>0x10</address></what>` +
			`<where><func>k</func><offset>0x70</offset></where></record></ComputeSanitizerOutput>`,
		`<ComputeSanitizerOutput><record><kind>Api</kind><level>Error</level><what><text>cudaMalloc</text></what></record>` +
			`<record><kind>Analysis</kind><level>Warning</level><what><hazardCount>3</hazardCount></what></record></ComputeSanitizerOutput>`,
		"<ComputeSanitizerOutput><record><kind>InitcheckApiError</kind><accessAddress>0x10</accessAddress><accessSize>4</accessSize></record>" +
			"</ComputeSanitizerOutput>\n========= ERROR SUMMARY: 3 errors\n========= ERROR SUMMARY: 2 errors were not printed\n",
		`<ComputeSanitizerOutput><record><kind>`,
		`<Other/>`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := fuzztool.WriteInput(t, "sanitizer.xml", b)
		log, err := readSanitizer(context.Background(), providers.Input{Path: p, Format: gen.FormatComputeSanitizer, Size: int64(len(b))})
		fuzztool.CheckError(t, err, p)
		if err != nil {
			return
		}
		fuzztool.NonNegative(t, "records", log.records)
		fuzztool.NonNegative(t, "hazards", log.hazards)
		if _, reported, _ := log.truncation(); reported != nil {
			fuzztool.NonNegative(t, "reported errors", *reported)
		}
		if int64(len(log.rows)) > log.records || log.errors > log.records {
			t.Fatalf("rows %d, errors %d, records %d", len(log.rows), log.errors, log.records)
		}
		var kinds int64
		for _, n := range log.kinds {
			kinds += n
		}
		if kinds != log.records {
			t.Fatalf("kinds sum to %d, records %d", kinds, log.records)
		}
		for i, r := range log.rows {
			if r.Index != int64(i) {
				t.Fatalf("row %d has index %d", i, r.Index)
			}
		}
	})
}

// FuzzReadTriton: go test ./providers/gpu -run '^$' -fuzz FuzzReadTriton -fuzztime 1m
func FuzzReadTriton(f *testing.F) {
	fuzztool.Corpus(f, "h200__triton-add.autotune.json")
	for _, s := range []string{
		``, `{}`, `[]`,
		`{"key":[1024,"torch.float32"],"configs_timings":[[{"kwargs":{"BLOCK":64},"num_warps":4,"num_stages":2},[0.01,0.009]],` +
			`[{"kwargs":{"BLOCK":128},"num_warps":4,"num_stages":2},[0.008]]],"cache_hit":true}`,
		`{"key":[1],"configs_timings":[[{"kwargs":{}},[1e308]]]}{"key":[2],"configs_timings":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := fuzztool.WriteInput(t, "add.autotune.json", b)
		rows, err := readTriton(context.Background(), providers.Input{Path: p, Format: gen.FormatTritonCache, Size: int64(len(b))})
		fuzztool.CheckError(t, err, p)
		for i, r := range rows {
			if r.Index != int64(i) || r.CandidateCount < 0 {
				t.Fatalf("row %d: index %d, candidate_count %d", i, r.Index, r.CandidateCount)
			}
			if r.ChosenIndex != nil && (*r.ChosenIndex < 0 || *r.ChosenIndex >= r.CandidateCount) {
				t.Fatalf("row %d: chosen %d of %d candidates", i, *r.ChosenIndex, r.CandidateCount)
			}
		}
	})
}

// FuzzReadTritonListener: go test ./providers/gpu -run '^$' -fuzz FuzzReadTritonListener -fuzztime 1m
func FuzzReadTritonListener(f *testing.F) {
	for _, s := range []string{
		``, "\n\n", `{}`, `[]`,
		`{"schema":"flameox.triton-autotune","version":"listener-v1","kernel":"add","key":[1024,"torch.float16"],"cache_hit":false,` +
			`"tuning_seconds":0.5,"best_index":1,"candidates":[{"config":{"kwargs":{"BLOCK":64},"num_warps":4},"timings_ms":[0.5,0.4,0.6]},` +
			`{"config":{"kwargs":{"BLOCK":128},"num_warps":8},"timings_ms":[0.25,0.2,0.3]}]}` + "\n",
		`{"schema":"flameox.triton-autotune","version":"listener-v1","kernel":"k","key":[],"cache_hit":true,"tuning_seconds":null,` +
			`"best_index":null,"candidates":[{"config":{},"timings_ms":["Infinity","NaN"]},{"config":{},"timings_ms":[0]}]}` + "\n" +
			`{"schema":"flameox.triton-autotune","version":"listener-v1","kernel":"k","key":[1],"cache_hit":false,"best_index":0,"candidates":[{"config":{},"timings_ms":[]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := fuzztool.WriteInput(t, "triton-listener.jsonl", b)
		rows, err := readTritonListener(context.Background(), providers.Input{Path: p, Format: gen.FormatTriton, Size: int64(len(b))})
		fuzztool.CheckError(t, err, p)
		for i, r := range rows {
			if r.Index != int64(i) || r.CandidateCount != int64(len(r.Candidates)) || r.Kernel == nil || r.CacheHit == nil {
				t.Fatalf("row %d: index %d, candidate_count %d of %d, kernel %v, cache_hit %v", i, r.Index, r.CandidateCount, len(r.Candidates), r.Kernel, r.CacheHit)
			}
			if r.ChosenIndex != nil && (*r.ChosenIndex < 0 || *r.ChosenIndex >= r.CandidateCount) {
				t.Fatalf("row %d: chosen %d of %d candidates", i, *r.ChosenIndex, r.CandidateCount)
			}
			if r.TuningSeconds != nil && *r.TuningSeconds < 0 {
				t.Fatalf("row %d: tuning_seconds %v", i, *r.TuningSeconds)
			}
		}
	})
}
