package sampled_test

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"slices"
	"testing"

	"github.com/flameox/flameox/providers/internal/fuzztool"
	"github.com/flameox/flameox/providers/internal/sampled"
	"github.com/flameox/flameox/providers/internal/sampled/sampledtest"
)

// FuzzDecodePprof: go test ./providers/internal/sampled -run '^$' -fuzz FuzzDecodePprof -fuzztime 1m
func FuzzDecodePprof(f *testing.F) {
	fuzztool.Corpus(f, "speedscope__simple.pprof.gz")
	// The corpus profile un-gzipped, so that mutations reach the protobuf and not only
	// the gzip framing.
	if b := gunzipCorpus("speedscope__simple.pprof.gz"); b != nil {
		f.Add(b)
	}
	for _, h := range []string{
		"", "1f8b", "0a00",
		// Profile{sample_type:[{type:1, unit:2}], sample:[{location_id:[1], value:[5]}],
		// location:[{id:1, line:[{function_id:1, line:3}]}], function:[{id:1, name:3, filename:4}],
		// string_table:["", "cpu", "nanoseconds", "main", "a.go"]}
		"0a0408011002" + "1206" + "0a0101" + "120105" + "2206" + "0801" + "2202" + "0801" + "2a06" + "0801" + "1003" + "2004" +
			"3200" + "3203637075" + "320b6e616e6f7365636f6e6473" + "32046d61696e" + "3204612e676f",
		// a sample with a negative value and no location
		"0a0408011002" + "120b" + "10ffffffffffffffffff01" + "3200" + "3203637075" + "320b6e616e6f7365636f6e6473",
	} {
		b, err := hex.DecodeString(h)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// Issue 40: a location of 300 inlined lines named 300 times by one sample, a stack of
	// 90,000 frames from 1.5 KiB (beyond MaxStackFrames), and one just under it (65,280).
	f.Add(stackPprof(1, 300, 300, 1))
	f.Add(stackPprof(1, 256, 255, 1))
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzztool.Bounded(t, func() {
			for _, in := range [][]byte{b, gzipped(b)} {
				s, info, err := sampled.DecodePprof(bytes.NewReader(in), sampled.Options{Edges: true})
				fuzztool.CheckError(t, err)
				if err != nil {
					continue
				}
				sampledtest.Check(t, s, true)
				if info.SampleType != "" && !slices.Contains(info.SampleTypes, info.SampleType) {
					t.Fatalf("sample type %q is not one of %v", info.SampleType, info.SampleTypes)
				}
			}
		})
	})
}

// gzipped is b in one gzip layer.
func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// gunzipCorpus is a gzip file of the shared corpus decompressed, or nil without it.
func gunzipCorpus(name string) []byte {
	zr, err := gzip.NewReader(bytes.NewReader(fuzztool.File(name)))
	if err != nil {
		return nil
	}
	var out bytes.Buffer
	if _, err := out.ReadFrom(zr); err != nil {
		return nil
	}
	return out.Bytes()
}
