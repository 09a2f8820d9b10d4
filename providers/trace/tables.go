package trace

import (
	"context"
	"fmt"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// View "tables" (decision 0032): instead of an operation's own rows, the records of a
// source's tables, {table, ...columns}, for the sources that have them (tableSource:
// Nsight Systems exports, nsystables.go; OTLP traces for summarize_trace,
// otlptables.go). The operations' own rows stay the default.

// listedTable is one entry of the tables metric of view "tables".
type listedTable struct {
	Table    string `json:"table"`
	RowCount int64  `json:"row_count"`
}

// hasPrefixFold reports whether name starts with prefix, ASCII case-insensitively.
func hasPrefixFold(name, prefix string) bool {
	return len(name) >= len(prefix) && strings.EqualFold(name[:len(prefix)], prefix)
}

func matchesAny(name string, prefixes []string) bool {
	for _, p := range prefixes {
		if hasPrefixFold(name, p) {
			return true
		}
	}
	return false
}

// tableFormats are the formats whose source has view "tables" for op (tableSource), in
// the format table's order: Nsight Systems exports, and OTLP traces for summarize_trace
// (catalog §1.3).
func tableFormats(op gen.OperationName) []string {
	var out []string
	for _, r := range formats {
		if t, ok := r.open(providers.Input{Format: r.format}).(tableSource); ok && t.hasTables(op) {
			out = append(out, string(r.format))
		}
	}
	return out
}

// checkView refuses view "tables" for a source whose format has none for op, and tables
// without view "tables". It returns whether the request asks for the table view.
func checkView(op gen.OperationName, f *gen.TableViewFields, in providers.Input) (bool, error) {
	if f == nil {
		return false, nil
	}
	if f.View != "tables" {
		if len(f.Tables) > 0 {
			return false, &providers.FieldError{Field: []any{"view"}, Accepted: []string{"tables"},
				Message: `tables selects the tables of view "tables": add "view": "tables", or omit tables for the operation's own rows`,
				Details: map[string]any{"option": "tables"}}
		}
		return false, nil
	}
	if t, ok := sourceOf(in).(tableSource); !ok || !t.hasTables(op) {
		accepted := tableFormats(op)
		return false, &providers.FieldError{Field: []any{"view"}, Accepted: []string{"operation"},
			Message: fmt.Sprintf(`view "tables" of %s reads %s sources; source %d is %s: omit view`, op, strings.Join(accepted, ", "), in.Index, in.Format),
			Details: map[string]any{"option": "view", "accepted_formats": accepted, "source_index": in.Index}}
	}
	return true, nil
}

// tablesView answers view "tables" when the fields ask for it (ok), or refuses the
// fields; otherwise the operation reads its own rows.
func tablesView[F gen.TableViewFields | gen.TraceSliceFields](ctx context.Context, op gen.OperationName, req *providers.Request[F]) (a *providers.Analysis, ok bool, err error) {
	in := req.Inputs[0]
	var f *gen.TableViewFields
	switch x := any(req.Fields).(type) {
	case *gen.TableViewFields:
		f = x
	case *gen.TraceSliceFields:
		if x != nil {
			f = &gen.TableViewFields{View: x.View, Tables: x.Tables}
			if ok, err = checkView(op, f, in); ok && err == nil && sliceFilter(x) != nil {
				return nil, false, &providers.FieldError{Field: []any{"view"}, Accepted: []string{"operation"},
					Message: `the filters (event_kind, category, name_contains, min_duration_ns) select the operation's rows, not tables: omit view, or omit the filters`,
					Details: map[string]any{"option": "view"}}
			}
		}
	}
	if ok, err = checkView(op, f, in); !ok || err != nil {
		return nil, ok, err
	}
	// checkView found the source's tables.
	a, err = sourceOf(in).(tableSource).tables(ctx, op, f, req.Limits)
	return a, true, err
}
