package sampled_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	gen "github.com/flameox/flameox/generated/contracts"

	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/sampled"
	"github.com/flameox/flameox/providers/internal/sampled/sampledtest"
)

// decodePprofFile decodes a pprof file as the families do: through the bounded reader,
// which removes the outer gzip layer, and again through it for a profile the streaming
// reader does not take.
func decodePprofFile(t *testing.T, data []byte) error {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bomb.pb.gz")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	in := providers.Input{Path: path, Format: gen.FormatPprof, Size: int64(len(data))}
	limits := gen.EffectiveLimits{MaxInputBytes: 1 << 30}
	open := func() (io.ReadCloser, error) {
		return providers.OpenBounded(context.Background(), in, limits.MaxInputBytes)
	}
	f, err := open()
	if err != nil {
		return err
	}
	defer f.Close()
	_, _, err = sampled.DecodePprofStream(f, open, sampled.Options{})
	return err
}

// Issue 21: a pprof file holding a gzip stream inside its gzip stream: the streaming
// reader does not take it, and nothing un-gzips the inner layer (profile.Parse, the
// fallback that once did, is no longer in the binary): it is not a pprof profile. The
// inner layer here would expand to 128 MiB.
func TestPprofGzipInsideGzip(t *testing.T) {
	inner := sampledtest.Gzip(t, sampledtest.Repeat(bytes.Repeat([]byte{0xff}, 1<<20), 128))
	outer := sampledtest.Gzip(t, func(w io.Writer) { w.Write(inner) })
	t.Logf("bomb of %d bytes", len(outer))
	var de *providers.DecodeError
	if err := decodePprofFile(t, outer); !errors.As(err, &de) {
		t.Fatalf("got %v (%T), want the DecodeError of an input that is not a pprof profile", err, err)
	}
}

// Issue 21: small gzipped pprof files whose string table is huge: many strings, or
// long ones.
func TestPprofStringTableBombs(t *testing.T) {
	testtool.Short(t, "reads string table bombs")
	empty := []byte{0x32, 0x00} // string_table: ""
	long := append([]byte{0x32, 0x80, 0x80, 0x40}, bytes.Repeat([]byte{'a'}, 1<<20)...)
	for _, c := range []struct {
		name string
		data []byte
		unit string
	}{
		{"many strings", sampledtest.Gzip(t, sampledtest.Repeat(empty, 8<<20)), "strings"},
		{"long strings", sampledtest.Gzip(t, func(w io.Writer) { w.Write(empty); sampledtest.Repeat(long, 128)(w) }), "bytes"},
		{"one declared string", append(append([]byte(nil), empty...), 0x32, 0xff, 0xff, 0xff, 0xff, 0x07), "bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Logf("bomb of %d bytes", len(c.data))
			lim := sampledtest.ExpectLimit(t, func() error {
				_, _, err := sampled.DecodePprof(bytes.NewReader(c.data), sampled.Options{})
				return err
			})
			if lim.Unit != c.unit {
				t.Errorf("unit %q, want %q", lim.Unit, c.unit)
			}
			if err := decodePprofFile(t, c.data); !errors.As(err, new(*providers.LimitError)) {
				t.Errorf("through the bounded reader: %v", err)
			}
		})
	}
}

// stackPprof is the protobuf of a CPU profile of locations locations, each of lines
// inlined lines of its own function (a frame per location), and samples samples that
// each name the locations in turn, refs times in all: stacks of lines*refs frames. With
// one location of 30,000 lines named 100,000 times it is issue 40's 215 KiB profile,
// whose stack is 3*10^9 frames.
func stackPprof(locations, lines, refs, samples int) []byte {
	msg := func(b []byte, field protowire.Number, m []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, field, protowire.BytesType), m)
	}
	varint := func(b []byte, field protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(b, field, protowire.VarintType), v)
	}
	b := msg(nil, 1, varint(varint(nil, 1, 1), 2, 2)) // sample_type: cpu nanoseconds
	var ids []byte
	for j := range refs {
		ids = protowire.AppendVarint(ids, uint64(j%locations+1))
	}
	smp := varint(msg(nil, 1, ids), 2, 10) // location_id (packed), value
	for range samples {
		b = msg(b, 2, smp)
	}
	for i := range locations {
		loc := varint(nil, 1, uint64(i+1))
		line := msg(nil, 4, varint(nil, 1, uint64(i+1))) // Line: function_id
		for range lines {
			loc = append(loc, line...)
		}
		b = msg(b, 4, loc)
	}
	for i := range locations { // Function: id, name, filename, start_line
		b = msg(b, 5, varint(varint(varint(varint(nil, 1, uint64(i+1)), 2, 3), 4, 4), 5, uint64(i)))
	}
	for _, s := range []string{"", "cpu", "nanoseconds", "main.f", "a.go"} {
		b = msg(b, 6, []byte(s))
	}
	return b
}

// expectStackLimit runs decode and requires the LimitError of limit stack frames, with
// at most sampledtest.MaxStackAlloc bytes allocated.
func expectStackLimit(t *testing.T, limit int64, decode func() error) {
	t.Helper()
	var err error
	n := sampledtest.Allocated(func() { err = decode() })
	var lim *providers.LimitError
	if !errors.As(err, &lim) {
		t.Fatalf("got %T %v, want a LimitError", err, err)
	}
	t.Logf("%v (%d MiB allocated)", lim, n>>20)
	if lim.Limit != limit || lim.Unit != "stack_frames" || lim.Source != 0 {
		t.Errorf("limit %d %s at source %d, want %d stack_frames at source 0", lim.Limit, lim.Unit, lim.Source, limit)
	}
	if !testtool.Race && n > sampledtest.MaxStackAlloc {
		t.Errorf("%d MiB allocated, want at most %d MiB", n>>20, sampledtest.MaxStackAlloc>>20)
	}
}

// Issue 40: a pprof profile whose locations' inlined lines, named again and again by its
// samples, expand to stacks beyond MaxStackFrames, or to more than MaxSampledFrames
// frames over all the samples, fails typed in little memory, by either reader and
// through the bounded file reader; stacks up to the bound decode.
func TestPprofStackBombs(t *testing.T) {
	testtool.Short(t, "reads stack bombs")
	const maxStackFrames, maxSampledFrames = sampled.MaxStackFrames, sampled.MaxSampledFrames
	perSample := maxSampledFrames/maxStackFrames + 1
	tests := []struct {
		name                            string
		locations, lines, refs, samples int
		// limit is the LimitError's bound; 0 when the profile decodes.
		limit int64
	}{
		{"issue 40: 30,000 lines named 100,000 times", 1, 30_000, 100_000, 1, maxStackFrames},
		{"recursion one frame past the bound", 1, 1, maxStackFrames + 1, 1, maxStackFrames},
		{"inlined lines past the bound", 1, maxStackFrames + 1, 1, 1, maxStackFrames},
		{"samples at the bound beyond the total", 1, maxStackFrames / 2, 2, perSample, maxSampledFrames},
		{"distinct frames at the bound", maxStackFrames, 1, maxStackFrames, 1, 0},
		{"inlined frames at the bound", 4096, 16, 4096, 2, 0},
		{"recursion at the bound", 1, 1, maxStackFrames, 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := stackPprof(tt.locations, tt.lines, tt.refs, tt.samples)
			t.Logf("profile of %d KiB", len(data)>>10)
			readers := []struct {
				name   string
				decode func() (*sampled.Sampled, error)
			}{
				{"streaming", func() (*sampled.Sampled, error) {
					s, _, err := sampled.DecodePprof(bytes.NewReader(data), sampled.Options{})
					return s, err
				}},
				{"profile.Parse", func() (*sampled.Sampled, error) { s, _, err := parsedPprof(data, sampled.Options{}); return s, err }},
			}
			for _, r := range readers {
				if tt.limit != 0 {
					expectStackLimit(t, tt.limit, func() error { _, err := r.decode(); return err })
					continue
				}
				s, err := r.decode()
				if err != nil {
					t.Fatalf("%s: %v", r.name, err)
				}
				if s.Samples != int64(tt.samples) || len(s.Frames) != tt.locations || s.StackFrames() != int64(tt.samples*tt.lines*tt.refs) {
					t.Errorf("%s: %d samples, %d frames, %d stack frames", r.name, s.Samples, len(s.Frames), s.StackFrames())
				}
			}
			if tt.limit != 0 {
				expectStackLimit(t, tt.limit, func() error {
					return decodePprofFile(t, sampledtest.Gzip(t, func(w io.Writer) { w.Write(data) }))
				})
			}
		})
	}
}
