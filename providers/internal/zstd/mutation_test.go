package zstd

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os/exec"
	"testing"

	kzstd "github.com/klauspost/compress/zstd"
)

// TestDecodeMutations damages valid frames (without checksums, so that most damage
// reaches the entropy decoders) in deterministic random ways: whatever Decode accepts,
// klauspost's decoder must accept with the same output, as FuzzDecode asserts.
func TestDecodeMutations(t *testing.T) {
	iterations := 100_000
	if testing.Short() {
		iterations = 5_000
	}
	oracle, err := kzstd.NewReader(nil, kzstd.WithDecoderConcurrency(1),
		kzstd.WithDecoderMaxMemory(64<<20), kzstd.WithDecoderMaxWindow(64<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer oracle.Close()
	var seeds [][]byte
	for i, enc := range encodings(false) {
		if bytes.Contains([]byte(enc.name), []byte("crc=true")) {
			continue
		}
		for _, data := range [][]byte{textLike(200, uint64(i)), textLike(3000, uint64(i)), mixed(20000, uint64(i))} {
			seeds = append(seeds, kEncode(t, enc, data))
		}
	}
	if zstdCmd, err := exec.LookPath("zstd"); err == nil {
		for i, level := range []string{"-1", "-19", "--fast=3", "-12"} {
			cmd := exec.Command(zstdCmd, "-q", "-c", "--no-check", level)
			cmd.Stdin = bytes.NewReader(textLike(5000, uint64(i)))
			comp, err := cmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			seeds = append(seeds, comp)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	var accepted, refused, oracleRefused int
	for range iterations {
		src := bytes.Clone(seeds[r.IntN(len(seeds))])
		for range 1 + r.IntN(3) {
			p := r.IntN(len(src))
			switch r.IntN(4) {
			case 0:
				src[p] ^= 1 << r.IntN(8)
			case 1:
				src[p] = byte(r.Uint32())
			case 2:
				src = append(src[:p], src[p+1:]...)
			default:
				src[p] += byte(r.IntN(5)) - 2
			}
			if len(src) == 0 {
				break
			}
		}
		got, err := Decode(nil, src, 1<<20)
		if err != nil {
			refused++
			continue
		}
		accepted++
		want, kerr := oracle.DecodeAll(src, nil)
		if errors.Is(kerr, kzstd.ErrWindowSizeExceeded) {
			oracleRefused++
			continue
		}
		if kerr != nil {
			t.Fatalf("Decode accepted %x (%d bytes out); klauspost: %v", src, len(got), kerr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("outputs differ on %x", src)
		}
	}
	t.Logf("%d accepted (%d with windows the oracle refuses), %d refused", accepted, oracleRefused, refused)
	if accepted-oracleRefused == 0 {
		t.Fatal("no mutated frame was accepted and compared with the oracle")
	}
}
