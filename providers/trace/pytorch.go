package trace

import (
	"context"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// eventKind classifies a slice of a torch.profiler trace; "" is not a PyTorch event.
func eventKind(n *tracemodel.Nested) string {
	cat := strings.ToLower(n.Category)
	switch {
	case strings.HasPrefix(n.Name, "aten::") || strings.HasPrefix(n.Name, "autograd::") || strings.HasPrefix(n.Name, "torch::"):
		return "operator"
	case strings.HasPrefix(n.Name, "ProfilerStep#"):
		return "profiler_step"
	case cat == "kernel":
		return "kernel"
	case cat == "gpu_memcpy":
		return "memcpy"
	case cat == "gpu_memset":
		return "memset"
	case strings.Contains(cat, "torch") || strings.Contains(cat, "pytorch") || cat == "cpu_op" ||
		cat == "cuda_runtime" || cat == "cuda_driver" || cat == "user_annotation" || cat == "gpu_user_annotation" ||
		cat == "python_function" || cat == "fwdbwd" || cat == "cuda_sync":
		return "runtime"
	case n.Args.InputShapes != nil || n.Args.AllocationBytes != nil:
		return "runtime"
	}
	return ""
}

func gpu(kind string) bool { return kind == "kernel" || kind == "memcpy" || kind == "memset" }

// summarizePytorch is summarize_pytorch_trace: the PyTorch events of a slice source (a
// torch.profiler trace), GPU activity linked to the operator that launched it.
func summarizePytorch(ctx context.Context, req *providers.Request[gen.TraceFilterFields]) (*providers.Analysis, error) {
	in := req.Inputs[0]
	if _, err := open(in); err != nil {
		return nil, err
	}
	tp, err := admitTraceProcessor(ctx, in, req.Limits)
	if err != nil {
		return nil, err
	}
	var slices int64
	kinds := map[string]int64{}
	q := &query{in: in, tp: tp, less: byStart, filter: pytorchFilter(req.Fields),
		begin: func() { slices, kinds = 0, map[string]int64{} },
		pick: func(s *tracemodel.Nested) (string, bool) {
			if s.Dur <= 0 {
				return "", false
			}
			slices++
			k := eventKind(s)
			kinds[k]++
			return k, k != ""
		},
		figures: func(m map[string]any, n int64) string {
			m["source_slice_count"] = slices
			m["pytorch_event_count"] = n
			for _, k := range []string{"operator", "profiler_step", "kernel", "memcpy", "memset", "runtime"} {
				m[k+"_count"] = kinds[k]
			}
			return "no_pytorch_activity_observed: the trace holds no operator, profiler step, PyTorch runtime or GPU activity slice; it may not come from torch.profiler."
		},
		project: func(ctx context.Context, sc *scan, sel []slice) ([]any, error) {
			if err := launches(ctx, in, tp, sel); err != nil {
				return nil, err
			}
			out := make([]any, len(sel))
			for i := range sel {
				s := &sel[i]
				a := &s.Args
				name, mangled := displayName(s.Name)
				out[i] = gen.PytorchEventRow{EventKind: s.kind,
					ID: s.ID, ParentID: parent(&s.Nested), Name: name, MangledName: mangled, Ts: nanos(s.TS), Dur: nanos(s.Dur),
					TrackID: s.Track, Category: optional(s.Category),
					ThreadName: sc.threadName(s.Track), ProcessName: sc.processName(s.Track),
					Filename: a.Filename, Line: a.Line, InputShapes: a.InputShapes, AllocationBytes: a.AllocationBytes,
					Phase: s.Phase, CorrelationID: a.CorrelationID, Device: a.Device, Stream: a.Stream,
					LaunchOpID: s.launch, LaunchOpName: s.launchN}
			}
			return out, nil
		}}
	return tp.bind(&providers.Analysis{Provider: provider(), Rows: q.rows()}), nil
}

// launches links the GPU activity of a page to the CPU operators that launched it: the
// innermost operator around the CPU slice (a CUDA runtime call) that carries the same
// correlation id, else the operator slice carrying the same Kineto External id (the
// innermost when several do), as summarize_trace_operations links them (decision 0038).
// It reads the trace again only when the page holds GPU activity with either id.
func launches(ctx context.Context, in providers.Input, tp *traceProcessor, sel []slice) error {
	byExt, byCorr := map[int64][]*slice{}, map[int64][]*slice{}
	for i := range sel {
		if !gpu(sel[i].kind) {
			continue
		}
		a := &sel[i].Args
		if a.CorrelationID != nil {
			byCorr[*a.CorrelationID] = append(byCorr[*a.CorrelationID], &sel[i])
		}
		if a.ExternalID != nil {
			byExt[*a.ExternalID] = append(byExt[*a.ExternalID], &sel[i])
		}
	}
	if len(byExt) == 0 && len(byCorr) == 0 {
		return nil
	}
	type op struct {
		id    int64
		depth int32
		name  string
	}
	type frame struct {
		id       int64
		operator *op
	}
	foundExt, foundCorr := map[int64]op{}, map[int64]op{}
	stacks := map[int64][]frame{}
	_, err := read(ctx, in, tp, func(s *tracemodel.Nested) error {
		if s.Dur <= 0 {
			return nil
		}
		kind := eventKind(s)
		var self *op
		if kind == "operator" {
			self = &op{s.ID, s.Depth, sliceName(s.Name)}
			if x := s.Args.ExternalID; x != nil {
				if _, ok := byExt[*x]; ok {
					if o, ok := foundExt[*x]; !ok || s.Depth > o.depth {
						foundExt[*x] = *self
					}
				}
			}
		}
		// The chain of slices around s on its track, s last.
		st := stacks[s.Track]
		i := len(st) - 1
		for i >= 0 && st[i].id != s.ParentID {
			i--
		}
		st = append(st[:i+1], frame{s.ID, self})
		stacks[s.Track] = st
		if c := s.Args.CorrelationID; c != nil && !gpu(kind) {
			if _, ok := byCorr[*c]; ok {
				for j := len(st) - 1; j >= 0; j-- {
					if st[j].operator != nil {
						foundCorr[*c] = *st[j].operator
						break
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	link := func(o op, ss []*slice) {
		for _, s := range ss {
			if s.launch == nil {
				id, name := o.id, o.name
				s.launch, s.launchN = &id, &name
			}
		}
	}
	for c, ss := range byCorr {
		if o, ok := foundCorr[c]; ok {
			link(o, ss)
		}
	}
	for x, ss := range byExt {
		if o, ok := foundExt[x]; ok {
			link(o, ss)
		}
	}
	return nil
}
