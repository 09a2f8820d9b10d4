package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/flameox/flameox/contracts"
	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/runtime"
)

func newInspectCommand(stdout io.Writer) *cobra.Command {
	var tool, sets string
	var full bool
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "Print the MCP tool catalog: compact, one tool's exact schemas (--tool), or all (--full)",
		Long: "Print the MCP tool catalog a server serves: compact, one tool's exact schemas (--tool), or all\n" +
			"(--full). --toolsets (or FLAMEOX_TOOLSETS) selects the toolsets as for mcp serve.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if tool != "" && full {
				return failure.Invalid(failure.Path("tool"), nil, "--tool and --full are mutually exclusive")
			}
			sel, f := resolveToolsets(sets, c.Flags().Changed("toolsets"), os.Getenv(toolsetsVariable))
			if f != nil {
				return f
			}
			rt, err := newRuntime(nil)
			if err != nil {
				return err
			}
			var names []string
			for _, t := range sel.tools(rt) {
				names = append(names, t.Name)
			}
			switch {
			case tool != "":
				t, ok := rt.Tool(tool)
				if ok && !sel.has(t) {
					return sel.unloaded(t, names)
				}
				if !ok {
					return failure.New(gen.FailureCodeUnknownOperation, "there is no tool named %q", tool).
						Field(failure.Path("tool"), names).
						With("requested_tool", tool).With("available_tools", names).
						With("recovery", "run flameox mcp inspect to list the tools")
				}
				out := map[string]any{"tools": []any{fullTool(t)}}
				rich, err := resultSchema(t.Name)
				if err != nil {
					return err
				}
				// The output schema in tools/list is compact; the rich one describes every
				// field and, where the operation declares them, the row shapes.
				out["result_schema"] = rich
				if t.Family != "lifecycle" {
					out["operation"] = operationView(rt, t, true)
				}
				return writeJSON(stdout, out)
			case full:
				var tools []any
				for _, t := range sel.tools(rt) {
					tools = append(tools, fullTool(t))
				}
				return writeJSON(stdout, map[string]any{"tools": tools, "server": serverView(sel)})
			}
			var tools, ops []any
			for _, t := range sel.tools(rt) {
				var schema struct {
					Required []string `json:"required"`
				}
				_ = json.Unmarshal(t.Input(), &schema)
				tools = append(tools, map[string]any{"name": t.Name, "toolset": t.Toolset, "description": t.Description,
					"required_inputs": schema.Required, "annotations": mcpTool(t).Annotations})
				if t.Family == "analysis" {
					ops = append(ops, operationView(rt, t, false))
				}
			}
			return writeJSON(stdout, map[string]any{"tool_count": len(tools), "toolsets": sel.names(), "tools": tools, "operations": ops})
		},
	}
	cmd.Flags().StringVar(&tool, "tool", "", "print one tool's exact input and output schemas, its rich result schema and an example call")
	cmd.Flags().BoolVar(&full, "full", false, "print every tool with its schemas")
	cmd.Flags().StringVar(&sets, "toolsets", "", toolsetsUsage())
	return cmd
}

// resultSchema is the named tool's rich result schema, published under contracts/ beside
// the compact output schema that tools/list carries.
func resultSchema(tool string) (any, error) {
	b, err := fs.ReadFile(contracts.FS, "catalog.json")
	if err != nil {
		return nil, err
	}
	var cat struct {
		Tools []struct {
			Name         string `json:"name"`
			ResultSchema string `json:"result_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(b, &cat); err != nil {
		return nil, err
	}
	for _, t := range cat.Tools {
		if t.Name == tool {
			b, err := fs.ReadFile(contracts.FS, t.ResultSchema)
			if err != nil {
				return nil, err
			}
			return decodeExact(b)
		}
	}
	return nil, fmt.Errorf("the catalog has no result schema for %s", tool)
}

func serverView(sel toolsets) map[string]any {
	return map[string]any{"name": gen.ServerName, "version": runtime.Version, "instructions": sel.instructions(),
		"tools_list_cache": map[string]any{"ttl_ms": gen.CatalogTTLMillis, "scope": gen.CatalogScope}}
}

// fullTool is the MCP Tool object exactly as tools/list carries it.
func fullTool(t *runtime.Tool) any {
	b, _ := json.Marshal(mcpTool(t))
	m, _ := decodeExact(b)
	return m
}

// decodeExact decodes JSON keeping numbers as written (json.Number): schema bounds such
// as 9223372036854775807 print exactly, not as the float64 nearest to them.
func decodeExact(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// operationView describes the operation behind an analysis or capture tool, with its
// capture tool when it has one.
func operationView(rt *runtime.Runtime, t *runtime.Tool, detailed bool) map[string]any {
	op := t.Operation
	analysis, _ := rt.Tool(string(op.Name))
	capture, capturable := rt.Tool("capture_and_" + string(op.Name))
	v := map[string]any{
		"operation":            string(op.Name),
		"toolset":              string(op.Toolset),
		"tool":                 analysis.Name,
		"capture_tool":         nil,
		"summary":              op.Description,
		"accepted_formats":     op.FormatStrings(),
		"minimum_sources":      op.MinSources,
		"maximum_sources":      op.MaxSources,
		"capture_supported":    capturable,
		"experiment_supported": capturable && op.Experiment,
		"capture_providers":    []string{},
	}
	if capturable {
		v["capture_tool"] = capture.Name
		v["capture_providers"] = capture.CaptureProviders
	}
	if detailed {
		v["limitations"] = op.Limitations
		v["analysis_example"] = map[string]any{"tool": analysis.Name, "arguments": exampleArguments(op)}
		if capturable {
			v["capture_example"] = map[string]any{"tool": capture.Name, "arguments": map[string]any{
				"target":   map[string]any{"argv": []string{"python3", "workload.py"}, "cwd": "/absolute/path/to/project"},
				"provider": map[string]any{"kind": capture.CaptureProviders[0]},
				"preserve": true,
			}}
		}
	}
	return v
}

// exampleArguments is a minimal valid call of the operation's tool.
func exampleArguments(op gen.OperationDecl) map[string]any {
	return map[string]any{
		"sources":   []any{map[string]any{"kind": "path", "path": "/absolute/path/to/artifact", "format": string(op.Formats[0])}},
		"page_size": 100,
	}
}
