package sampled_test

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers/internal/sampled"
)

// wholeSampled compares Sampled values whole.
var wholeSampled = cmp.AllowUnexported(sampled.Sampled{}, sampled.EdgeSeen{})

// TestDecodePprofStreamAnyChunking requires DecodePprofStream to read a generated pprof
// profile larger than the reader's first 4 KiB buffer and the corpus one (gzipped and
// not), with the default sample type, a named one and a missing one (refused), and their
// malformed copies, the same however the reader splits them.
func TestDecodePprofStreamAnyChunking(t *testing.T) {
	check := func(t *testing.T, inputs []testtool.ChunkInput, o sampled.Options) {
		t.Run(fmt.Sprintf("%+v", o), func(t *testing.T) {
			testtool.CheckAnyChunking(t, inputs, func(r io.Reader, reread func() io.Reader) testtool.ChunkResult {
				s, info, err := sampled.DecodePprofStream(r, func() (io.ReadCloser, error) { return io.NopCloser(reread()), nil }, o)
				return testtool.Result(struct {
					S    *sampled.Sampled
					Info sampled.PprofInfo
				}{s, info}, err)
			}, wholeSampled)
		})
	}
	t.Run("generated", func(t *testing.T) {
		var raw, gz bytes.Buffer
		if err := awkwardPprof(300, 2000).WriteUncompressed(&raw); err != nil {
			t.Fatal(err)
		}
		if err := awkwardPprof(300, 2000).Write(&gz); err != nil {
			t.Fatal(err)
		}
		inputs := append(testtool.WithMalformed("awkward.pprof", raw.Bytes()), testtool.WithMalformed("awkward.pprof.gz", gz.Bytes())...)
		check(t, inputs, sampled.Options{Edges: true})
		check(t, inputs, sampled.Options{SampleType: "alloc_space"})
		check(t, testtool.Refused(inputs), sampled.Options{SampleType: "missing"})
	})
	t.Run("corpus", func(t *testing.T) {
		inputs := testtool.CorpusInputs(t, "speedscope__simple.pprof.gz")
		inputs = append(inputs, testtool.WithMalformed("speedscope__simple.pprof", gunzipCorpus("speedscope__simple.pprof.gz"))...)
		check(t, inputs, sampled.Options{Edges: true})
		check(t, inputs, sampled.Options{SampleType: "samples"})
		check(t, testtool.Refused(inputs), sampled.Options{SampleType: "missing"})
	})
}
