package testtool

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// ChunkInput is one input of a chunking test.
type ChunkInput struct {
	Name string
	Data []byte
	// Whole is set for an input as it was written (not a malformed copy): it must
	// decode without an error, unless Refused says the decoder refuses it.
	Whole, Refused bool
}

// WithMalformed returns the input, then two malformed copies of it: cut at half its
// length, and with its middle byte changed.
func WithMalformed(name string, b []byte) []ChunkInput {
	changed := bytes.Clone(b)
	if len(changed) > 0 {
		changed[len(changed)/2] ^= 0xff
	}
	return []ChunkInput{{Name: name, Data: b, Whole: true}, {Name: name + "/truncated", Data: b[:len(b)/2]},
		{Name: name + "/byte-changed", Data: changed}}
}

// Refused returns inputs with the whole ones marked Refused: the decoder is expected to
// refuse them (with the same error however they are split).
func Refused(inputs []ChunkInput) []ChunkInput {
	out := slices.Clone(inputs)
	for i := range out {
		out[i].Refused = out[i].Whole
	}
	return out
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
					if in.Whole && (want.Err == "<nil>") == in.Refused {
						t.Fatalf("the input as written: error %s; refused expected: %v", want.Err, in.Refused)
					}
					continue
				}
				if diff := cmp.Diff(want, got, opts...); diff != "" {
					t.Errorf("%s differs from whole reads (-whole +%s):\n%s", c.name, c.name, diff)
				}
			}
		})
	}
}
