package main

import (
	"encoding/json"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/flameox/flameox/runtime"
)

func newEvidenceCommand(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use: "evidence",
	}
	cmd.AddCommand(newEvidenceQueryCommand(stdout), newEvidenceShowCommand(stdout), newEvidenceLocationCommand(stdout),
		newEvidenceServeCommand())
	return cmd
}

// queryFlags maps CLI flags to query_evidence arguments, in argv order.
var queryFlags = []struct{ flag, field string }{
	{"kind", "evidence_kind"},
	{"operation", "operation"},
	{"provider", "provider_id"},
	{"input-sha256", "input_sha256"},
	{"created-after", "created_after"},
	{"created-before", "created_before"},
}

func newEvidenceQueryCommand(stdout io.Writer) *cobra.Command {
	values := make([]string, len(queryFlags))
	var limit int
	var cursor string
	cmd := &cobra.Command{
		Use:   "query",
		Short: "List preserved evidence manifests in inventory order (the query_evidence tool)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			rt, err := newRuntime(nil)
			if err != nil {
				return err
			}
			args := map[string]any{}
			var argv []string
			for i, q := range queryFlags {
				if c.Flags().Changed(q.flag) {
					args[q.field] = values[i]
					argv = append(argv, "--"+q.flag, values[i])
				}
			}
			if c.Flags().Changed("limit") {
				args["page_size"] = limit
			}
			if cursor != "" {
				args["cursor"] = cursor
			}
			raw, _ := json.Marshal(args)
			res, f := rt.Call(c.Context(), "query_evidence", raw)
			if f != nil {
				return f
			}
			b, _ := json.Marshal(res)
			var out map[string]any
			_ = json.Unmarshal(b, &out)
			if next, ok := out["next_page"].(map[string]any); ok {
				a := next["arguments"].(map[string]any)
				full := append([]string{"evidence", "query"}, argv...)
				full = append(full, "--limit", strconv.Itoa(int(a["page_size"].(float64))), "--cursor", a["cursor"].(string))
				out["next_page"] = CLINextPage{Command: "flameox", Argv: full}
			}
			return writeJSON(stdout, out)
		},
	}
	for i, q := range queryFlags {
		cmd.Flags().StringVar(&values[i], q.flag, "", "only evidence with this "+q.field)
	}
	cmd.Flags().IntVar(&limit, "limit", 50, "manifests per page (1-200)")
	cmd.Flags().StringVar(&cursor, "cursor", "", "cursor from next_page.argv")
	return cmd
}

func newEvidenceShowCommand(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "show EVIDENCE_ID",
		Short: "Print the full canonical manifest of preserved evidence (local, full provenance)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			rt, err := newRuntime(nil)
			if err != nil {
				return err
			}
			raw, f := rt.Manifest(args[0])
			if f != nil {
				return f
			}
			var v any
			_ = json.Unmarshal(raw, &v)
			return writeJSON(stdout, v)
		},
	}
}

func newEvidenceLocationCommand(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "location",
		Short: "Print the evidence store directory without opening it",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			rt, err := newRuntime(nil)
			if err != nil {
				return err
			}
			store, f := rt.Store()
			if f != nil {
				return f
			}
			loc := store.Location()
			return writeJSON(stdout, map[string]any{
				"directory":            loc.Dir,
				"environment_variable": runtime.DataDirVariable,
				"configuration_source": loc.Source,
			})
		},
	}
}
