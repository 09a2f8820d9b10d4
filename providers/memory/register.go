// Package memory is the memory evidence family: rank_allocation_hotspots and
// rank_retained_memory over V8 sampling heap profiles, Go heap profiles and Memray
// captures, and the node-heap-profile and memray capture providers
// (docs/decisions/0021-memory-evidence.md).
package memory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/sampled"
)

// Register adds the memory operations, their capture providers, the heapprofile and memray
// detectors and memray's record.
func Register(r *providers.Registry) {
	r.Analyzer(providers.Analyze(gen.OperationNameRankAllocationHotspots, rankAllocations))
	r.Analyzer(providers.Analyze(gen.OperationNameRankRetainedMemory, rankRetained))
	for _, c := range collectors {
		r.Collector(c)
	}
	r.Detector(providers.Detector{Format: gen.FormatHeapprofile, Suffixes: []string{".heapprofile"}, Container: gen.FormatJSON,
		Match: func(_ string, head []byte) bool {
			return bytes.Contains(head, []byte(`"head"`)) && bytes.Contains(head, []byte(`"callFrame"`)) && bytes.Contains(head, []byte(`"selfSize"`))
		}})
	r.Detector(providers.Detector{Format: gen.FormatMemray, Suffixes: []string{".bin"},
		Match: func(_ string, head []byte) bool { return bytes.HasPrefix(head, memrayMagic) }})
	r.Tool(memrayTool)
}

// Go heap profile sample types by operation: the first is the default.
var (
	allocTypes  = []string{"alloc_space", "alloc_objects"}
	retainTypes = []string{"inuse_space", "inuse_objects"}
)

func rankAllocations(ctx context.Context, req *providers.Request[gen.AllocationFields]) (*providers.Analysis, error) {
	in := req.Inputs[0]
	self, err := selfOrder(req.Fields.Order)
	if err != nil {
		return nil, err
	}
	switch in.Format {
	case gen.FormatPprof:
		return rankPprof(ctx, in, req.Limits, req.Fields.SampleType, allocTypes, self)
	case gen.FormatHeapprofile:
		if req.Fields.SampleType != nil {
			return nil, sampleTypeOnlyPprof(in)
		}
		return rankHeapProfile(ctx, in, req.Limits, self)
	case gen.FormatMemray:
		if req.Fields.SampleType != nil {
			return nil, sampleTypeOnlyPprof(in)
		}
		return rankMemray(ctx, in, req.Limits, memrayHighWatermark, self)
	}
	return nil, &providers.UnsupportedError{Source: in.Index, Message: fmt.Sprintf("rank_allocation_hotspots does not read %s sources", in.Format)}
}

func rankRetained(ctx context.Context, req *providers.Request[gen.RetainedFields]) (*providers.Analysis, error) {
	in := req.Inputs[0]
	self, err := selfOrder(req.Fields.Order)
	if err != nil {
		return nil, err
	}
	switch in.Format {
	case gen.FormatPprof:
		return rankPprof(ctx, in, req.Limits, req.Fields.SampleType, retainTypes, self)
	case gen.FormatMemray:
		if req.Fields.SampleType != nil {
			return nil, sampleTypeOnlyPprof(in)
		}
		return rankMemray(ctx, in, req.Limits, memrayLeaked, self)
	}
	return nil, &providers.UnsupportedError{Source: in.Index, Message: fmt.Sprintf("rank_retained_memory does not read %s sources", in.Format)}
}

// Memory ranking orders (the order field): inclusive first (the default) or self first.
const (
	orderInclusive = "inclusive"
	orderSelf      = "self"
)

// selfOrder reports whether order ranks by self value first; the contract admits only
// self and inclusive (empty is the default, inclusive).
func selfOrder(order string) (bool, error) {
	switch order {
	case orderSelf:
		return true, nil
	case orderInclusive, "":
		return false, nil
	}
	return false, &providers.FieldError{Field: []any{"order"}, Accepted: []string{orderSelf, orderInclusive},
		Message: fmt.Sprintf("order %q is not one memory rankings use; use self or inclusive", order)}
}

func sampleTypeOnlyPprof(in providers.Input) error {
	return &providers.FieldError{Field: []any{"sample_type"}, Accepted: []string{string(gen.FormatPprof)},
		Message: fmt.Sprintf("sample_type applies to pprof sources only; source %d is %s", in.Index, in.Format),
		Details: map[string]any{"option": "sample_type", "accepted_formats": []string{string(gen.FormatPprof)}, "source_index": in.Index}}
}

func rankHeapProfile(ctx context.Context, in providers.Input, limits gen.EffectiveLimits, self bool) (*providers.Analysis, error) {
	f, err := providers.OpenBounded(ctx, in, limits.MaxInputBytes)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := DecodeHeapProfile(f)
	if err != nil {
		return nil, providers.AtSource(err, in.Index)
	}
	a := &providers.Analysis{Provider: gen.Provider{ID: "v8-heapprofile"},
		Metrics: map[string]any{"total_bytes": p.TotalBytes, "frame_count": len(p.Frames), "node_count": p.Nodes,
			"sample_count": nil, "unresolved_sample_count": nil}}
	if p.HasSamples {
		a.Metrics["sample_count"], a.Metrics["unresolved_sample_count"] = p.SampleCount, p.UnresolvedSamples
	} else {
		a.Limitations = append(a.Limitations, "The profile has no samples array (written before Node 12): allocation_count is null.")
	}
	if p.RootBytes != 0 {
		a.Limitations = append(a.Limitations, fmt.Sprintf("The root node itself holds %d of the total_bytes (sampled without a stack): no frame's row counts them.", p.RootBytes))
	}
	if len(p.Frames) == 0 || p.TotalBytes == 0 {
		a.Limitations = append(a.Limitations, "The profile holds no sampled allocation: no allocation reached the sampling interval (node --heap-prof-interval, 512 KiB by default) before it was written.")
	}
	order := p.Order(self)
	a.Rows = providers.Project(len(order), func(i int) gen.AllocationHotspotRow {
		h := &p.Frames[order[i]]
		row := gen.AllocationHotspotRow{Rank: int64(i + 1), Function: h.Function, File: providers.Nullable(h.URL), Line: providers.Nullable(h.Line),
			SelfBytes: h.Self, InclusiveBytes: h.Inclusive, FrameID: int64(h.ID)}
		if p.HasSamples {
			c := h.Samples
			row.AllocationCount = &c
		}
		return row
	})
	return a, nil
}

// rankPprof ranks a Go heap profile by one of the operation's sample types, inclusive
// value first, or self value first when self is set (go tool pprof -top's flat order).
func rankPprof(ctx context.Context, in providers.Input, limits gen.EffectiveLimits, sampleType *string, accepted []string, self bool) (*providers.Analysis, error) {
	want := accepted[0]
	if sampleType != nil {
		want = *sampleType
		if !slices.Contains(accepted, want) {
			return nil, &providers.FieldError{Field: []any{"sample_type"}, Accepted: accepted,
				Message: fmt.Sprintf("sample_type %q is not one this operation ranks Go heap profiles by; use %s", want, strings.Join(accepted, " or ")),
				Details: map[string]any{"option": "sample_type", "source_index": in.Index}}
		}
	}
	f, err := providers.OpenBounded(ctx, in, limits.MaxInputBytes)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, info, err := sampled.DecodePprofStream(f, func() (io.ReadCloser, error) { return providers.OpenBounded(ctx, in, limits.MaxInputBytes) },
		sampled.Options{SampleType: want})
	if err != nil {
		var fe *providers.FieldError
		if asField(err, &fe) {
			// The profile has no such sample type: not a Go heap profile.
			return nil, &providers.UnsupportedError{Source: in.Index,
				Message: fmt.Sprintf("source %d is a pprof profile without the %s sample type (it has %s); memory operations read Go heap profiles (go test -memprofile, runtime/pprof heap)", in.Index, want, strings.Join(info.SampleTypes, ", "))}
		}
		return nil, providers.AtSource(err, in.Index)
	}
	unit := "bytes"
	if strings.HasSuffix(want, "_objects") {
		unit = "objects"
	}
	a := &providers.Analysis{Provider: gen.Provider{ID: "pprof"},
		Metrics: map[string]any{"sample_type": info.SampleType, "sample_types": info.SampleTypes, "unit": unit,
			"total_value": int64(s.TotalWeight * s.Scale), "frame_count": len(s.Frames), "sample_count": s.Samples}}
	order := s.HotspotOrder(!self)
	a.Rows = providers.Project(len(order), func(i int) gen.MemoryPprofRow {
		f := int(order[i])
		h := s.Hotspot(f)
		return gen.MemoryPprofRow{Rank: int64(i + 1), Function: h.Function, File: providers.Nullable(h.File), Line: providers.Nullable(h.Line),
			SelfValue: int64(h.SelfWeight), InclusiveValue: int64(h.InclusiveWeight), Unit: unit, FrameID: int64(f)}
	})
	return a, nil
}

// asField reports whether err is a FieldError.
func asField(err error, fe **providers.FieldError) bool {
	return errors.As(err, fe)
}
