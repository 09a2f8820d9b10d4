package memory

import (
	"io"
	"testing"

	"github.com/flameox/flameox/internal/testtool"
)

// TestDecodeHeapProfileAnyChunking requires DecodeHeapProfile to read the corpus V8
// heap profiles and their malformed copies (cut at half, middle byte changed) the same
// however the reader splits them.
func TestDecodeHeapProfileAnyChunking(t *testing.T) {
	inputs := testtool.CorpusInputs(t, "local__node_heap_prof_interval4096.heapprofile", "local__node_heap_prof_default_empty.heapprofile",
		"speedscope__node10_sampling_heap.heapprofile")
	testtool.CheckAnyChunking(t, inputs, func(r io.Reader, _ func() io.Reader) testtool.ChunkResult {
		return testtool.Result(DecodeHeapProfile(r))
	})
}
