package memory

import (
	"bytes"
	"testing"

	"github.com/flameox/flameox/providers/internal/fuzztool"
)

// FuzzDecodeHeapProfile: go test ./providers/memory -run '^$' -fuzz FuzzDecodeHeapProfile -fuzztime 1m
func FuzzDecodeHeapProfile(f *testing.F) {
	fuzztool.Corpus(f, "local__node_heap_prof_default_empty.heapprofile", "local__node_heap_prof_interval4096.heapprofile",
		"speedscope__node10_sampling_heap.heapprofile")
	for _, s := range []string{
		`{}`, `{"head":{"callFrame":{"functionName":"(root)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1},"selfSize":0,"id":1,"children":[]}}`,
		`{"head":{"callFrame":{"functionName":"(root)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1},"selfSize":0,"id":1,"children":[` +
			`{"callFrame":{"functionName":"f","scriptId":"3","url":"file:///a.js","lineNumber":4,"columnNumber":2},"selfSize":4096,"id":2,"children":[` +
			`{"callFrame":{"functionName":"f","scriptId":"3","url":"file:///a.js","lineNumber":4,"columnNumber":2},"selfSize":8,"id":3,"children":[]}]}]},` +
			`"samples":[{"size":4096,"nodeId":2,"ordinal":1},{"size":8,"nodeId":9,"ordinal":2}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodeHeapProfile(bytes.NewReader(b))
		fuzztool.CheckError(t, err)
		if err != nil {
			return
		}
		fuzztool.NonNegative(t, "SampleCount", p.SampleCount)
		if p.UnresolvedSamples < 0 || p.UnresolvedSamples > p.SampleCount || p.Nodes < 0 {
			t.Fatalf("unresolved %d of %d samples, %d nodes", p.UnresolvedSamples, p.SampleCount, p.Nodes)
		}
		var self, samples int64
		for _, fr := range p.Frames {
			if fr.Samples < 0 || fr.ID < 0 {
				t.Fatalf("frame %+v", fr)
			}
			self += fr.Self
			samples += fr.Samples
		}
		if self+p.RootBytes != p.TotalBytes {
			t.Fatalf("frames' self sizes sum to %d, the root holds %d, TotalBytes %d", self, p.RootBytes, p.TotalBytes)
		}
		if samples+p.UnresolvedSamples != p.SampleCount {
			t.Fatalf("frames hold %d samples + %d unresolved != %d", samples, p.UnresolvedSamples, p.SampleCount)
		}
	})
}
