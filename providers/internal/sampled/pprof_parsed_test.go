package sampled

import (
	"fmt"

	"github.com/google/pprof/profile"

	"github.com/flameox/flameox/providers"
)

// The tests' oracle: github.com/google/pprof/profile parses a profile whole, and
// aggregateParsed aggregates what it parsed as the streaming reader aggregates, so that
// the two readers are compared on the same aggregation. It is test code: the binary does
// not link the profile package (decision 0044's addendum).

// aggregateParsed aggregates a profile parsed by the profile package.
func aggregateParsed(p *profile.Profile, o Options) (*Sampled, PprofInfo, error) {
	var types, units []string
	for _, st := range p.SampleType {
		types, units = append(types, st.Type), append(units, st.Unit)
	}
	idx, info, err := pprofSampleType(types, units, p.DefaultSampleType, o.SampleType)
	if err != nil {
		return nil, info, err
	}
	s := newPprofSampled(info.SampleUnit, o)
	frames := map[uint64][]int{} // location id -> frames leaf first
	stack := make([]int, 0, 64)
	for si, smp := range p.Sample {
		if idx >= len(smp.Value) {
			return nil, info, &providers.DecodeError{Message: "a pprof sample has fewer values than sample types"}
		}
		stack = stack[:0]
		for li := len(smp.Location) - 1; li >= 0; li-- { // root first
			loc := smp.Location[li]
			fs, ok := frames[loc.ID]
			if !ok {
				var err error
				if fs, err = locationFrames(s, loc); err != nil {
					return nil, info, err
				}
				frames[loc.ID] = fs
			}
			if len(fs) > MaxStackFrames-len(stack) {
				return nil, info, pprofStackLimit(si)
			}
			for fi := len(fs) - 1; fi >= 0; fi-- { // callers of inlined frames first
				stack = append(stack, fs[fi])
			}
		}
		if err := s.Add(stack, 1, float64(smp.Value[idx])); err != nil {
			return nil, info, err
		}
	}
	return s, info, nil
}

// locationFrames interns the frames of one location, leaf-most (inlined) first.
func locationFrames(s *Sampled, loc *profile.Location) ([]int, error) {
	var out []int
	if len(loc.Line) == 0 {
		f := Frame{Function: fmt.Sprintf("0x%x", loc.Address)}
		if loc.Mapping != nil {
			f.File = loc.Mapping.File
		}
		i, err := s.Frame(f)
		if err != nil {
			return nil, err
		}
		return []int{i}, nil
	}
	for _, ln := range loc.Line {
		f := Frame{Function: "[unknown]"}
		if ln.Function != nil {
			f = Frame{Function: ln.Function.Name, File: ln.Function.Filename, Line: ln.Function.StartLine}
		}
		i, err := s.Frame(f)
		if err != nil {
			return nil, err
		}
		out = append(out, i)
	}
	return out, nil
}
