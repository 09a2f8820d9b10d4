package bench

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
)

// Issue 21: a pyperf gzip of about 100 KB holding 6 M values fails at MaxMeasurements
// while it is read, before the rest is decoded; the same through encoding/json's path
// (a name only the case-insensitive match takes) fails before it is unmarshalled.
func TestPyperfMeasurementBomb(t *testing.T) {
	for _, field := range []string{"values", "Values"} {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		io.WriteString(zw, `{"version":"1.0","benchmarks":[{"runs":[{"`+field+`":[`)
		chunk := bytes.Repeat([]byte("0,"), 1<<16)
		for range 96 { // 6.3 M numbers
			zw.Write(chunk)
		}
		io.WriteString(zw, `0]}]}]}`)
		zw.Close()
		var err error
		peak := testtool.PeakHeap(func() {
			err = decodePyperf(bytes.NewReader(b.Bytes()), 0, func(*Measurement) error { return nil })
		})
		var lim *providers.LimitError
		if !errors.As(err, &lim) || lim.Limit != MaxMeasurements {
			t.Fatalf("%s: got %T %v, want the MaxMeasurements LimitError", field, err, err)
		}
		t.Logf("%s: bomb of %d bytes: %v (peak heap %d MiB)", field, b.Len(), lim, peak>>20)
		if !testtool.Race && peak > 256<<20 {
			t.Errorf("%s: peak heap %d MiB, want below 256 MiB", field, peak>>20)
		}
	}
}

// Issue 21: go-bench output of 5 M measurements in a few long lines (20 MB) used to be
// kept whole as Measurement values (gigabytes) before MaxMeasurements applied; now each
// goes to the emitter as it is read, and the bound fails the read typed.
func TestGoBenchMeasurementBomb(t *testing.T) {
	testtool.Short(t, "reads a 20 MB measurement bomb")
	line := "BenchmarkX-8 1" + strings.Repeat(" 1 B", 1<<17) + "\n" // 512 KiB
	var b bytes.Buffer
	for range (MaxMeasurements >> 17) + 2 {
		b.WriteString(line)
	}
	// What the decoder itself retains: the emitter keeps nothing (the table keeps 32
	// bytes a value, 160 MB at the bound, which MaxMeasurements allows).
	kept := 0
	var err error
	peak := testtool.PeakHeap(func() {
		err = decodeGoBench(bytes.NewReader(b.Bytes()), 0, func(*Measurement) error { kept++; return nil })
	})
	var lim *providers.LimitError
	if !errors.As(err, &lim) || lim.Limit != MaxMeasurements {
		t.Fatalf("got %T %v, want the MaxMeasurements LimitError", err, err)
	}
	t.Logf("bomb of %d bytes: %v (peak heap %d MiB, %d values emitted)", b.Len(), lim, peak>>20, kept)
	if !testtool.Race && peak > 256<<20 {
		t.Errorf("peak heap %d MiB, want below 256 MiB", peak>>20)
	}
}

// Issue 21: whole-document benchmark formats of a few tens of MB holding millions of tiny
// values used to be built whole (values, schema-validation trees, one Measurement each:
// gigabytes) before MaxMeasurements applied; their shape is bounded first, typed.
func TestJSONBenchShapeBombs(t *testing.T) {
	const n = 16 << 20
	samples := func(r io.Reader) error { _, _, err := DecodeSamples(r, 0); return err }
	hyperfine := func(r io.Reader) error { _, err := DecodeHyperfine(r, 0); return err }
	nvbench := func(r io.Reader) error { _, err := DecodeNVBench(r, 0); return err }
	tests := []struct {
		name   string
		doc    []byte
		decode func(io.Reader) error
		unit   string
	}{
		{"samples values", testtool.Repeated(`{"schema":"flameox.benchmark-samples.v1","benchmarks":[{"name":"a","unit":"ns","samples":[`, "0", n, `]}]}`), samples, "values"},
		{"hyperfine times", testtool.Repeated(`{"results":[{"command":"a","times":[`, "0", n, `]}]}`), hyperfine, "values"},
		{"hyperfine results", testtool.Repeated(`{"results":[`, "{}", n/2, `]}`), hyperfine, "objects_and_arrays"},
		{"nvbench states", testtool.Repeated(`{"benchmarks":[{"name":"a","states":[`, "{}", n/2, `]}]}`), nvbench, "objects_and_arrays"},
		{"nvbench long name", []byte(`{"benchmarks":[{"name":"` + strings.Repeat("a", 48<<20) + `"}]}`), nvbench, "bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			peak := testtool.PeakHeap(func() { err = tt.decode(bytes.NewReader(tt.doc)) })
			var lim *providers.LimitError
			if !errors.As(err, &lim) || lim.Unit != tt.unit {
				t.Fatalf("got %T %v, want a LimitError in %s", err, err, tt.unit)
			}
			t.Logf("document of %d MiB: %v (peak heap %d MiB)", len(tt.doc)>>20, lim, peak>>20)
			if !testtool.Race && peak > 256<<20 {
				t.Errorf("peak heap %d MiB, want below 256 MiB", peak>>20)
			}
		})
	}
}
