package tracemodel

// The bits of PackedArgs.Set: which arguments it holds.
const (
	ArgFile uint16 = 1 << iota
	ArgShapes
	ArgLine
	ArgBytes
	ArgCorrelation
	ArgDevice
	ArgStream
	ArgExternal
)

// The indexes of PackedArgs.Vals: its integer arguments.
const (
	ValLine = iota
	ValBytes
	ValCorrelation
	ValDevice
	ValStream
	ValExternal
)

// PackedArgs is Args by value, for slices that are kept (open B/E slices, the Nester's
// buffer) without an allocation per argument. Set says which arguments it holds: File,
// Shapes, and the Vals whose ValBits are set.
type PackedArgs struct {
	Set          uint16
	File, Shapes string
	Vals         [6]int64
}

// ValBits are the Set bits of the Vals, by index.
var ValBits = [6]uint16{ArgLine, ArgBytes, ArgCorrelation, ArgDevice, ArgStream, ArgExternal}

// Expand copies p into store and returns Args pointing into store.
func (p *PackedArgs) Expand(store *PackedArgs) Args {
	*store = *p
	var a Args
	if p.Set == 0 {
		return a
	}
	if p.Set&ArgFile != 0 {
		a.Filename = &store.File
	}
	if p.Set&ArgShapes != 0 {
		a.InputShapes = &store.Shapes
	}
	ptrs := [6]**int64{&a.Line, &a.AllocationBytes, &a.CorrelationID, &a.Device, &a.Stream, &a.ExternalID}
	for i, bit := range ValBits {
		if p.Set&bit != 0 {
			*ptrs[i] = &store.Vals[i]
		}
	}
	return a
}

// Pack sets p from a.
func (p *PackedArgs) Pack(a *Args) {
	*p = PackedArgs{}
	if a.Filename != nil {
		p.Set |= ArgFile
		p.File = *a.Filename
	}
	if a.InputShapes != nil {
		p.Set |= ArgShapes
		p.Shapes = *a.InputShapes
	}
	ptrs := [6]*int64{a.Line, a.AllocationBytes, a.CorrelationID, a.Device, a.Stream, a.ExternalID}
	for i, v := range ptrs {
		if v != nil {
			p.Set |= ValBits[i]
			p.Vals[i] = *v
		}
	}
}

// Fill sets the arguments of q that p lacks.
func (p *PackedArgs) Fill(q *PackedArgs) {
	if q.Set&ArgFile != 0 && p.Set&ArgFile == 0 {
		p.File = q.File
	}
	if q.Set&ArgShapes != 0 && p.Set&ArgShapes == 0 {
		p.Shapes = q.Shapes
	}
	for i, bit := range ValBits {
		if q.Set&bit != 0 && p.Set&bit == 0 {
			p.Vals[i] = q.Vals[i]
		}
	}
	p.Set |= q.Set
}

// PackedSink is an optional interface of a Sink that keeps a slice's arguments packed
// (the Nester, the trace pipeline's recorder): a decoder that finds it passes them as
// they are instead of expanding them into Args for Slice to pack again. SlicePacked is
// otherwise Slice.
type PackedSink interface {
	SlicePacked(id, ts, dur, track int64, name, cat, phase string, args *PackedArgs) error
}
