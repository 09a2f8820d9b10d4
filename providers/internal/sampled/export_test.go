package sampled

// The internals the tests reach. They are package sampled_test, since they import
// sampledtest, which imports this package.

var (
	StreamPprof     = streamPprof
	AggregateParsed = aggregateParsed
	ErrNotStreamed  = errNotStreamed
	LegacyPprof     = legacyPprof
)

// EdgeSeen is the edge record Sampled keeps, for comparing Sampled values whole.
type EdgeSeen = edgeSeen

// StackFrames is the count of the frames of the stacks added.
func (s *Sampled) StackFrames() int64 { return s.stackFrames }
