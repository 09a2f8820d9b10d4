package perfetto_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"testing"

	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers/internal/fuzztool"
	"github.com/flameox/flameox/providers/trace/perfetto"
	"github.com/flameox/flameox/providers/trace/tracemodel"
	"github.com/flameox/flameox/providers/trace/tracemodel/tracemodeltest"
)

// TestDecodePerfettoAnyChunking requires Decode to read the corpus Perfetto
// traces and their malformed copies the same however the reader splits them.
func TestDecodePerfettoAnyChunking(t *testing.T) {
	inputs := testtool.CorpusInputs(t, "perfetto-mcp-rs__basic.perfetto-trace", "local__chromium156_trace_startup_proto.pftrace")
	testtool.CheckAnyChunking(t, inputs, func(r io.Reader, _ func() io.Reader) testtool.ChunkResult {
		rec := tracemodeltest.NewRecorder()
		st, info, err := perfetto.Decode(context.Background(), r, 5, perfetto.Limits{}, rec)
		return testtool.Result(struct {
			Sink  *tracemodeltest.Recorder
			Stats *tracemodel.Stats
			Info  *perfetto.Info
		}{rec, st, info}, err)
	})
}

// FuzzDecodePerfetto: go test ./providers/trace/perfetto -run '^$' -fuzz FuzzDecodePerfetto -fuzztime 1m
func FuzzDecodePerfetto(f *testing.F) {
	fuzztool.Corpus(f, "perfetto-mcp-rs__basic.perfetto-trace", "local__chromium156_trace_startup_proto.pftrace")
	for _, h := range []string{
		"",
		// packet{timestamp:1, trusted_packet_sequence_id:1, track_event{type:SLICE_BEGIN, name:"a", track_uuid:5}}
		"0a100808ba01010a0b0801120161" + "2805",
		// packet{track_descriptor{uuid:5, name:"t"}}
		"0a07" + "a2060408051201" + "74",
		"0a0210", "0aff", "0a",
	} {
		b, err := hex.DecodeString(h)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sink := &tracemodeltest.Checker{T: t, Tracks: map[int64]bool{}}
		st, info, err := perfetto.Decode(context.Background(), bytes.NewReader(b), 0,
			perfetto.Limits{MaxPacketBytes: 1 << 20, MaxOpenSlices: 64, MaxTracks: 256, MaxInterned: 1024, MaxSequences: 64, MaxStringBytes: 4096}, sink)
		fuzztool.CheckError(t, err)
		if err != nil {
			return
		}
		tracemodeltest.CheckStats(t, st, sink.Slices)
		fuzztool.NonNegative(t, "Packets", info.Packets)
		if info.TrackEventPackets+info.TrackDescriptors > info.Packets {
			t.Fatalf("TrackEventPackets %d + TrackDescriptors %d > Packets %d", info.TrackEventPackets, info.TrackDescriptors, info.Packets)
		}
		for k, n := range info.Unread {
			if n <= 0 {
				t.Fatalf("Unread[%d] = %d", k, n)
			}
		}
	})
}
