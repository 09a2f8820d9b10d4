package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/spf13/cobra"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/runtime"
	"github.com/flameox/flameox/runtime/failure"
)

func newRootCommand(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "flameox",
		Short:         "Bounded, reproducible runtime evidence for coding agents",
		Version:       runtime.Version,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return failure.Invalid(failure.Path(), nil, "%s: %s", c.CommandPath(), err.Error())
	})
	mcp := &cobra.Command{Use: "mcp", Short: "Serve or inspect the MCP tool catalog"}
	mcp.AddCommand(newServeCommand(), newInspectCommand(stdout))
	root.AddCommand(mcp, newAnalyzeCommand(stdout))
	return root
}

func newAnalyzeCommand(stdout io.Writer) *cobra.Command {
	var formats []string
	var arguments, limits, token string
	cmd := &cobra.Command{
		Use:   "analyze OPERATION [PATH...]",
		Short: "Analyze explicit artifacts with one operation and print the JSON result",
		Long: "Analyze explicit artifacts with one operation. Relative paths are made absolute against the\n" +
			"working directory. --format applies to every path, or is repeated once per path in order.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			rt, err := runtime.New([]byte(limits))
			if err != nil {
				return err
			}
			op := args[0]
			if _, ok := rt.Tool(op); !ok {
				return failure.New(gen.FailureCodeUnknownOperation, "there is no operation named %q", op).
					Field(failure.Path("operation"), rt.ToolNames()).With("available_operations", rt.ToolNames())
			}
			raw, f := analyzeArguments(args[1:], formats, arguments, token)
			if f != nil {
				return f
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			res, f := rt.Call(ctx, op, raw)
			if f != nil {
				return f
			}
			return writeJSON(stdout, cliResult(res))
		},
	}
	cmd.Flags().StringArrayVar(&formats, "format", nil, "native format of the paths (once for all, or once per path)")
	cmd.Flags().StringVar(&arguments, "arguments", "", "operation fields as one JSON object")
	cmd.Flags().StringVar(&limits, "limits", "", "RequestLimits JSON: startup bounds for this invocation")
	cmd.Flags().StringVar(&token, "continuation", "", "continuation token from next_page.argv")
	return cmd
}

// analyzeArguments builds the tool arguments the MCP tool would receive.
func analyzeArguments(paths, formats []string, arguments, token string) ([]byte, *failure.Failure) {
	if len(paths) == 0 {
		return nil, failure.Invalid(failure.Path("sources"), nil, "provide artifact paths")
	}
	if len(formats) > 1 && len(formats) != len(paths) {
		return nil, failure.Invalid(failure.Path("format"), nil,
			"--format is given %d times for %d paths; give it once for all paths or once per path", len(formats), len(paths))
	}
	args := map[string]any{}
	if arguments != "" {
		dec := json.NewDecoder(bytes.NewReader([]byte(arguments)))
		dec.UseNumber()
		if err := dec.Decode(&args); err != nil || args == nil {
			return nil, failure.Invalid(failure.Path("arguments"), nil, "--arguments must be one JSON object of operation fields")
		}
		for _, k := range []string{"sources", "continuation", "limits"} {
			if _, ok := args[k]; ok {
				return nil, failure.Invalid(failure.Path("arguments", k), nil,
					"%s is not an operation field; use the positional paths, --continuation or --limits", k)
			}
		}
	}
	sources := make([]any, len(paths))
	for i, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, failure.Invalid(failure.Path("sources", i, "path"), nil, "path %d cannot be made absolute", i)
		}
		s := map[string]any{"kind": "path", "path": abs}
		switch len(formats) {
		case 1:
			s["format"] = formats[0]
		case len(paths):
			s["format"] = formats[i]
		}
		sources[i] = s
	}
	args["sources"] = sources
	if token != "" {
		args["continuation"] = token
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, failure.Invalid(failure.Path(), nil, "arguments could not be encoded")
	}
	return b, nil
}

// CLINextPage is the executable handoff of a paginated CLI analysis.
type CLINextPage struct {
	Command string   `json:"command"`
	Argv    []string `json:"argv"`
}

// cliResult projects a runtime result for the CLI: no process-local analysis_id, the
// continuation visible, and next_page as an executable argv.
func cliResult(res *runtime.Result) any {
	out := *res
	out.AnalysisID = ""
	out.NextPage = nil
	var next *CLINextPage
	if res.Token != "" {
		tok := res.Token
		out.Continuation = &tok
		next = cliNextPage(res)
	}
	b, _ := json.Marshal(out)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	m["next_page"] = next
	return m
}

func cliNextPage(res *runtime.Result) *CLINextPage {
	args := res.NextPage.Arguments
	argv := []string{"analyze", res.Operation}
	sources, _ := args["sources"].([]any)
	var formats []string
	for _, s := range sources {
		m := s.(map[string]any)
		argv = append(argv, m["path"].(string))
		formats = append(formats, m["format"].(string))
	}
	same := true
	for _, f := range formats {
		same = same && f == formats[0]
	}
	if same && len(formats) > 0 {
		argv = append(argv, "--format", formats[0])
	} else {
		for _, f := range formats {
			argv = append(argv, "--format", f)
		}
	}
	fields := map[string]any{}
	for k, v := range args {
		switch k {
		case "sources", "continuation", "limits", "page_size":
		default:
			fields[k] = v
		}
	}
	argv = append(argv, "--arguments", compactSorted(fields), "--limits", compactSorted(args["limits"]),
		"--continuation", args["continuation"].(string))
	return &CLINextPage{Command: "flameox", Argv: argv}
}

// compactSorted renders v as compact JSON with sorted keys.
func compactSorted(v any) string {
	b, _ := json.Marshal(v)
	var x any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	_ = dec.Decode(&x)
	b, _ = json.Marshal(x)
	return string(b)
}

// writeJSON prints v as indented JSON with sorted keys.
func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var x any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&x); err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(x)
}

func asFailure(err error) *failure.Failure {
	var f *failure.Failure
	if errors.As(err, &f) {
		return f
	}
	// cobra's own argument errors carry no host data.
	return failure.Invalid(failure.Path(), nil, "%s", err.Error())
}

func writeFailure(w io.Writer, f *failure.Failure) {
	env := f.Envelope()
	b, _ := json.Marshal(env)
	var x any
	_ = json.Unmarshal(b, &x)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(x)
}
