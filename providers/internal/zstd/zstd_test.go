package zstd

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	kzstd "github.com/klauspost/compress/zstd"
)

const testLimit = 64 << 20 // maxSize for inputs that must decode

// input is one test payload.
type input struct {
	name string
	data []byte
	big  bool // skipped under -short
}

// textLike returns n bytes that look like a profiler log: repetitive words, growing
// numbers, some noise.
func textLike(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	words := []string{"sample", "cpu", "wall_ns", "kernel", "launch", "runtime.mallocgc",
		"main.loop", "gc", "alloc_bytes", "trace", "span", "event", "stream", "device",
		"cudaMemcpyAsync", "thread", "pid", "tid", "flameox", "=", ":", "{", "}", "->"}
	var b bytes.Buffer
	ts := int64(1694039968956739000)
	for b.Len() < n {
		ts += r.Int64N(5000)
		b.WriteString(strconv.FormatInt(ts, 10))
		for range 3 + r.IntN(8) {
			b.WriteByte(' ')
			b.WriteString(words[r.IntN(len(words))])
			if r.IntN(4) == 0 {
				b.WriteString(strconv.Itoa(r.IntN(100000)))
			}
		}
		b.WriteByte('\n')
	}
	return b.Bytes()[:n]
}

// randomBytes returns n incompressible bytes.
func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 0xbad))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// mixed alternates text, random and constant runs, with far repeats.
func mixed(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	var b []byte
	for len(b) < n {
		switch r.IntN(4) {
		case 0:
			b = append(b, textLike(1+r.IntN(20000), r.Uint64())...)
		case 1:
			b = append(b, randomBytes(1+r.IntN(3000), r.Uint64())...)
		case 2:
			b = append(b, bytes.Repeat([]byte{byte(r.Uint32())}, 1+r.IntN(70000))...)
		default:
			if len(b) > 0 { // repeat an earlier stretch
				from := r.IntN(len(b))
				b = append(b, b[from:from+min(len(b)-from, 1+r.IntN(50000))]...)
			}
		}
	}
	return b[:n]
}

func testInputs() []input {
	const block = 128 << 10
	return []input{
		{name: "empty", data: []byte{}},
		{name: "one", data: []byte{'x'}},
		{name: "rle-1000", data: bytes.Repeat([]byte{'a'}, 1000)},
		{name: "rle-300K", data: make([]byte, 300<<10)},
		{name: "random-100", data: randomBytes(100, 1)},
		{name: "random-200K", data: randomBytes(200<<10, 2)},
		{name: "text-40", data: textLike(40, 3)},
		{name: "text-10K", data: textLike(10<<10, 4)},
		{name: "text-block-1", data: textLike(block-1, 5)},
		{name: "text-block", data: textLike(block, 6)},
		{name: "text-block+1", data: textLike(block+1, 7)},
		{name: "mixed-400K", data: mixed(400<<10, 8)},
		{name: "text-3M", data: textLike(3<<20, 9), big: true},
		{name: "mixed-2M", data: mixed(2<<20, 10), big: true},
		{name: "random-1M", data: randomBytes(1<<20, 11), big: true},
	}
}

// encoding is one way of compressing with klauspost's encoder.
type encoding struct {
	name   string
	opts   []kzstd.EOption
	stream bool // through the streaming writer: no Frame_Content_Size
}

func encodings(short bool) []encoding {
	levels := []kzstd.EncoderLevel{kzstd.SpeedFastest, kzstd.SpeedDefault,
		kzstd.SpeedBetterCompression, kzstd.SpeedBestCompression}
	var encs []encoding
	for _, l := range levels {
		for _, crc := range []bool{false, true} {
			for _, stream := range []bool{false, true} {
				if short && crc == stream {
					continue // half of the grid under -short
				}
				encs = append(encs, encoding{
					name:   fmt.Sprintf("%s-crc=%t-stream=%t", l, crc, stream),
					opts:   []kzstd.EOption{kzstd.WithEncoderLevel(l), kzstd.WithEncoderCRC(crc)},
					stream: stream,
				})
			}
		}
	}
	encs = append(encs,
		encoding{name: "window-1K", opts: []kzstd.EOption{kzstd.WithWindowSize(1 << 10)}, stream: true},
		encoding{name: "window-32K-best", opts: []kzstd.EOption{kzstd.WithWindowSize(32 << 10),
			kzstd.WithEncoderLevel(kzstd.SpeedBestCompression)}, stream: true},
		encoding{name: "window-64K-all", opts: []kzstd.EOption{kzstd.WithWindowSize(64 << 10)}},
		encoding{name: "no-single-segment", opts: []kzstd.EOption{kzstd.WithSingleSegment(false)}},
		encoding{name: "no-entropy", opts: []kzstd.EOption{kzstd.WithNoEntropyCompression(true)}},
		encoding{name: "all-lit-entropy", opts: []kzstd.EOption{kzstd.WithAllLitEntropyCompression(true),
			kzstd.WithEncoderLevel(kzstd.SpeedBetterCompression)}},
	)
	return encs
}

// encoders caches klauspost encoders, which are costly to build.
var encoders sync.Map

func kEncode(t testing.TB, enc encoding, data []byte) []byte {
	t.Helper()
	opts := append([]kzstd.EOption{kzstd.WithEncoderConcurrency(1)}, enc.opts...)
	v, ok := encoders.Load(enc.name)
	if !ok {
		e, err := kzstd.NewWriter(nil, opts...)
		if err != nil {
			t.Fatal(err)
		}
		v, _ = encoders.LoadOrStore(enc.name, e)
	}
	e := v.(*kzstd.Encoder)
	if !enc.stream {
		return e.EncodeAll(data, nil)
	}
	var buf bytes.Buffer
	e.Reset(&buf)
	if _, err := e.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

var (
	kDecoderOnce sync.Once
	kDecoderVal  *kzstd.Decoder
)

// kDecode decodes with klauspost's decoder, bounded like Decode.
func kDecode(src []byte) ([]byte, error) {
	kDecoderOnce.Do(func() {
		var err error
		kDecoderVal, err = kzstd.NewReader(nil, kzstd.WithDecoderConcurrency(1),
			kzstd.WithDecoderMaxMemory(testLimit), kzstd.WithDecoderMaxWindow(testLimit))
		if err != nil {
			panic(err)
		}
	})
	return kDecoderVal.DecodeAll(src, nil)
}

// checkDecode decodes comp and wants exactly want, and klauspost's decoder to agree.
func checkDecode(t *testing.T, comp, want []byte) {
	t.Helper()
	got, err := Decode(nil, comp, testLimit)
	if err != nil {
		t.Fatalf("Decode: %v (%d compressed bytes)", err, len(comp))
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Decode output differs: got %d bytes, want %d; first difference at %d",
			len(got), len(want), firstDiff(got, want))
	}
	oracle, err := kDecode(comp)
	if errors.Is(err, kzstd.ErrWindowSizeExceeded) {
		// The oracle refuses windows larger than its memory bound (zstd --long, -22 on
		// a stream); Decode bounds only the output.
		return
	}
	if err != nil {
		t.Fatalf("klauspost decoder: %v", err)
	}
	if !bytes.Equal(oracle, want) {
		t.Fatal("klauspost decoder disagrees with the input")
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestDecodeKlauspost(t *testing.T) {
	for _, in := range testInputs() {
		if in.big && testing.Short() {
			continue
		}
		for _, enc := range encodings(testing.Short()) {
			t.Run(in.name+"/"+enc.name, func(t *testing.T) {
				checkDecode(t, kEncode(t, enc, in.data), in.data)
			})
		}
	}
}

// TestDecodeFrames decodes concatenated frames, skippable frames among them, appending
// to a non-empty dst.
func TestDecodeFrames(t *testing.T) {
	encs := encodings(true)
	skippable := []byte{0x5F, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 'a', 'b', 'c'}
	var comp, want []byte
	for i, in := range testInputs() {
		if in.big {
			continue
		}
		comp = append(comp, kEncode(t, encs[i%len(encs)], in.data)...)
		want = append(want, in.data...)
		if i%3 == 0 {
			comp = append(comp, skippable...)
		}
	}
	checkDecode(t, comp, want)

	prefix := []byte("already here:")
	got, err := Decode(bytes.Clone(prefix), comp, len(want))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(append(bytes.Clone(prefix), want...), got); diff != "" {
		t.Fatalf("appending to dst (-want +got):\n%.400s", diff)
	}
	if _, err := Decode(bytes.Clone(prefix), comp, len(want)-1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("one byte short of the output: got %v, want ErrTooLarge", err)
	}
	if got, err := Decode(nil, skippable, 0); err != nil || len(got) != 0 {
		t.Fatalf("skippable frame alone: %q, %v", got, err)
	}
}

// TestDecodeCLI compresses with the reference zstd command, when there is one.
func TestDecodeCLI(t *testing.T) {
	zstdCmd, err := exec.LookPath("zstd")
	if err != nil {
		t.Skip("no zstd command")
	}
	dir := t.TempDir()
	inputs := map[string][]byte{
		"empty":     {},
		"rle":       bytes.Repeat([]byte{0xAB}, 200<<10),
		"text-50K":  textLike(50<<10, 21),
		"mixed-1M":  mixed(1<<20, 22),
		"random-1M": randomBytes(1<<20, 23),
	}
	cases := []struct {
		args  []string
		small bool // only on inputs under 100 KiB
		big   bool // skipped under -short
	}{
		{args: []string{"-1"}},
		{args: []string{"-3", "--no-check"}},
		{args: []string{"-19"}, big: true},
		{args: []string{"-9", "--long"}},
		{args: []string{"--ultra", "-22"}, small: true},
		{args: []string{"--fast=5"}},
		{args: []string{"-5", "--no-content-size"}},
	}
	for name, data := range inputs {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			if c.small && len(data) >= 100<<10 || c.big && testing.Short() {
				continue
			}
			for _, fromStdin := range []bool{false, true} {
				if fromStdin && testing.Short() {
					continue // frames without a content size: every case runs without -short
				}
				t.Run(fmt.Sprintf("%s/%v/stdin=%t", name, c.args, fromStdin), func(t *testing.T) {
					args := append([]string{"-q", "-c"}, c.args...)
					cmd := exec.Command(zstdCmd, args...)
					if fromStdin {
						cmd.Stdin = bytes.NewReader(data)
					} else {
						cmd.Args = append(cmd.Args, path)
					}
					comp, err := cmd.Output()
					if err != nil {
						t.Fatalf("zstd %v: %v", args, err)
					}
					checkDecode(t, comp, data)
				})
			}
		}
	}
}
