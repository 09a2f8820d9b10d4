package testtool

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// ChunkInput is one input of a chunking test.
type ChunkInput struct {
	Name string
	Data []byte
}

// WithMalformed returns the input, then two malformed copies of it: cut at half its
// length, and with its middle byte changed.
func WithMalformed(name string, b []byte) []ChunkInput {
	changed := bytes.Clone(b)
	if len(changed) > 0 {
		changed[len(changed)/2] ^= 0xff
	}
	return []ChunkInput{{name, b}, {name + "/truncated", b[:len(b)/2]}, {name + "/byte-changed", changed}}
}

// CorpusInputs reads corpus files, each with its malformed copies (WithMalformed); the
// test is skipped without the corpus.
func CorpusInputs(t testing.TB, names ...string) []ChunkInput {
	t.Helper()
	var out []ChunkInput
	for _, n := range names {
		b, err := os.ReadFile(Corpus(t, n))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, WithMalformed(n, b)...)
	}
	return out
}

// ChunkResult is what one decode returned: its values, and its error as a string.
type ChunkResult struct {
	Value any
	Err   string
}

// Result is a ChunkResult of value and err.
func Result(value any, err error) ChunkResult { return ChunkResult{value, fmt.Sprint(err)} }

// chunkings are the ways CheckAnyChunking hands the same bytes to a decoder.
var chunkings = []struct {
	name string
	wrap func([]byte) io.Reader
}{
	{"whole reads", func(b []byte) io.Reader { return bytes.NewReader(b) }},
	{"one byte per read", func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) }},
	{"half of each read", func(b []byte) io.Reader { return iotest.HalfReader(bytes.NewReader(b)) }},
}

// CheckAnyChunking decodes every input from whole reads, one byte per Read and half of
// what each Read asks for, and requires the same result (values and error) each way.
// decode gets the reader, and again, which makes another reader of the input split the
// same way (for a decoder that reads its input twice); opts are cmp.Diff's options.
func CheckAnyChunking(t *testing.T, inputs []ChunkInput, decode func(r io.Reader, again func() io.Reader) ChunkResult, opts ...cmp.Option) {
	t.Helper()
	for _, in := range inputs {
		t.Run(in.Name, func(t *testing.T) {
			var want ChunkResult
			for i, c := range chunkings {
				got := decode(c.wrap(in.Data), func() io.Reader { return c.wrap(in.Data) })
				if i == 0 {
					want = got
					continue
				}
				if diff := cmp.Diff(want, got, opts...); diff != "" {
					t.Errorf("%s differs from whole reads (-whole +%s):\n%s", c.name, c.name, diff)
				}
			}
		})
	}
}
