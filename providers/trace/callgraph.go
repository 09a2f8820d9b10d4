package trace

import (
	"context"
	"fmt"
	"math/big"
	"sort"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// edge is one aggregated parent/child name pair.
type edge struct {
	parent, child string
	count         int64
	dur           big.Int
}

// maxEdges bounds the distinct parent/child name pairs one call graph aggregates.
const maxEdges = providers.MaxProjectionRows

// callGraph is inspect_trace_call_graph: the parent/child name pairs of a slice source's
// slices, with their child count and summed duration.
func callGraph(ctx context.Context, req *providers.Request[gen.NoFields]) (*providers.Analysis, error) {
	src, err := open(req.Inputs[0])
	if err != nil {
		return nil, err
	}
	in, a, tp, done, err := sliceRead(ctx, src, req.Limits)
	if err != nil {
		return nil, err
	}
	defer done()
	type key struct{ parent, child string }
	edges := map[key]*edge{}
	var all, slices, dropped int64
	// The parent's name comes with each slice (Nested.ParentName), as the Nester or
	// trace_processor nested it: a slice misnested or out of order does not hide the
	// parents of the slices after it.
	sc, err := read(ctx, in, tp, func(s *tracemodel.Nested) error {
		if s.Dur > 0 {
			all++
		}
		if s.ParentID < 0 || s.Dur <= 0 {
			return nil
		}
		slices++
		k := key{sliceName(s.ParentName), sliceName(s.Name)}
		e := edges[k]
		if e == nil {
			if len(edges) >= maxEdges {
				dropped++
				return nil
			}
			e = &edge{parent: strings.Clone(k.parent), child: strings.Clone(k.child)}
			edges[key{e.parent, e.child}] = e
		}
		e.count++
		e.dur.Add(&e.dur, big.NewInt(s.Dur))
		return nil
	})
	if err != nil {
		return nil, err
	}
	list := make([]*edge, 0, len(edges))
	for _, e := range edges {
		list = append(list, e)
	}
	sortEdges(list)
	m := sc.metrics()
	m["slice_count"] = all
	m["child_slice_count"] = slices
	m["edge_count"] = len(list)
	lim := sc.limitations()
	if dropped > 0 {
		lim = append(lim, fmt.Sprintf("More than %d distinct parent/child name pairs: %d child slices of further pairs were not aggregated.", maxEdges, dropped))
	}
	if len(list) == 0 {
		lim = append(lim, "no_nested_slices_observed: no slice of the trace has a parent slice.")
	}
	a.Metrics, a.Limitations = m, lim
	a.Rows = providers.ProjectSlice(list, func(e *edge) gen.TraceCallEdgeRow {
		return gen.TraceCallEdgeRow{Parent: e.parent, Child: e.child, SampleCount: e.count, InclusiveDurationNS: bigNanos(&e.dur)}
	})
	return tp.bind(a), nil
}

// sortEdges orders edges by summed duration, then count, largest first, then by name.
func sortEdges(list []*edge) {
	sort.Slice(list, func(i, j int) bool {
		if c := list[i].dur.Cmp(&list[j].dur); c != 0 {
			return c > 0
		}
		if list[i].count != list[j].count {
			return list[i].count > list[j].count
		}
		if list[i].parent != list[j].parent {
			return list[i].parent < list[j].parent
		}
		return list[i].child < list[j].child
	})
}
