package flamegraph

// FromRows builds a graph from the rows of rank_cpu_hotspots (functions) and
// inspect_cpu_callers (edges), pstats or sampled: pstats rows weigh by
// cumulative_time_seconds in seconds (self: self_time_seconds), sampled rows by
// inclusive_weight (self: self_weight) and the edge's weight in the rows' unit.
func FromRows(functions, edges []map[string]any) *Graph {
	g := New("seconds")
	for _, r := range functions {
		f := Frame{Function: str(r["function"]), File: str(r["file"]), Line: num(r["line"])}
		if w, ok := r["inclusive_weight"].(float64); ok {
			g.Unit = str(r["unit"])
			g.AddFunction(f, w)
			self, _ := r["self_weight"].(float64)
			g.AddSelf(f, self)
			continue
		}
		w, _ := r["cumulative_time_seconds"].(float64)
		g.AddFunction(f, w)
		self, _ := r["self_time_seconds"].(float64)
		g.AddSelf(f, self)
	}
	for _, r := range edges {
		caller := Frame{Function: str(r["caller_function"]), File: str(r["caller_file"]), Line: num(r["caller_line"])}
		callee := Frame{Function: str(r["callee_function"]), File: str(r["callee_file"]), Line: num(r["callee_line"])}
		w, ok := r["weight"].(float64)
		if !ok {
			w, _ = r["cumulative_time_seconds"].(float64)
		}
		g.AddEdge(caller, callee, w)
	}
	return g
}

func str(v any) string { s, _ := v.(string); return s }

func num(v any) int {
	switch n := v.(type) {
	case float64:
		return int(n)
	case int:
		return n
	}
	return 0
}
