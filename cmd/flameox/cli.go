package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/ahead"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/workerproc"
	"github.com/flameox/flameox/runtime"
)

// versionLines is what --version prints after "flameox version ": the version (setup's
// Identify reads the first line's first and last words), then the target the binary was
// built for (decision 0062). It is the Version itself, not a version template, so that
// cobra prints it without parsing a text/template at every --version (decision 0067).
func versionLines() string {
	return fmt.Sprintf("%s\nbuilt for %s/%s with %s", runtime.Version, goruntime.GOOS, goruntime.GOARCH, goruntime.Version())
}

// newRootCommand is the whole command tree.
func newRootCommand(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	return newRoot(stdin, stdout, stderr, func(string) bool { return true })
}

// newRootCommandFor is the command tree a call with args can reach (commandsFor): the
// other commands stand in as their names and lines.
func newRootCommandFor(args []string, stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	return newRoot(stdin, stdout, stderr, commandsFor(args))
}

// newRoot is the root command with the commands build says to build.
func newRoot(stdin io.Reader, stdout, stderr io.Writer, build func(name string) bool) *cobra.Command {
	root := &cobra.Command{
		Use:           "flameox",
		Short:         "Bounded, reproducible runtime evidence for coding agents",
		Version:       versionLines(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%s: %w", c.CommandPath(), err)
	})
	root.PersistentFlags().Bool("json", false, "print a failure as its one line of JSON even when stderr is a terminal")
	for _, rc := range rootCommands {
		var c *cobra.Command
		if build(rc.name) {
			c = rc.build(stdout)
		} else {
			// A stand-in: what the root's help lists of a command is its name and line.
			// commandsFor never lets one run; were it to, it fails rather than succeed empty.
			c = &cobra.Command{Use: rc.name, DisableFlagParsing: true, RunE: func(*cobra.Command, []string) error {
				return failure.New(gen.FailureCodeInternalFailure, "flameox %s was not built for this call", rc.name)
			}}
		}
		c.Short = rc.short
		root.AddCommand(c)
	}
	if !build(completionCommand) {
		root.CompletionOptions.DisableDefaultCmd = true
	}
	return root
}

// rootCommand is one of the root's commands: its name, its line in the root's help, and
// what builds it with its flags and subcommands.
type rootCommand struct {
	name, short string
	build       func(stdout io.Writer) *cobra.Command
}

// rootCommands are the root's commands in the order they are added (help sorts them).
var rootCommands = []rootCommand{
	{"mcp", "Serve or inspect the MCP tool catalog", newMCPCommand},
	{"analyze", "Analyze explicit artifacts or preserved evidence with one operation and print the JSON result", newAnalyzeCommand},
	{"capture", "Run a workload under a collector, analyse what it produced and print the JSON result", newCaptureCommand},
	{"evidence", "Query, show, locate and serve preserved evidence", newEvidenceCommand},
	{"setup", "Register this flameox executable as an MCP server in coding agents' global configuration", newSetupCommand},
	{"update", "Install a newer flameox release and repoint the configured MCP clients to it", newUpdateCommand},
	{"prepare", "Install the pinned py-spy collector or memray reader and report what other providers need here (the prepare_providers tool)", newPrepareCommand},
}

// completionCommand is cobra's default completion command, which the root adds when it
// executes unless CompletionOptions.DisableDefaultCmd.
const completionCommand = "completion"

// newMCPCommand is the mcp command: serve and inspect.
func newMCPCommand(stdout io.Writer) *cobra.Command {
	mcp := &cobra.Command{Use: "mcp"}
	mcp.AddCommand(newServeCommand(), newInspectCommand(stdout))
	return mcp
}

// commandsFor says which of the root's commands (and cobra's completion command) a call
// with args can reach, so that the root builds only those (decision 0067, seventh
// addendum): building every command's flags and cobra's completion commands cost a cold
// --version about 0.2 to 0.3 ms. It reads args as cobra does: the root's flags (--json,
// -h/--help, -v/--version) take no value, so the first word that is not a flag names
// the command; help and cobra's completion request take the command as their own first
// word. A call that names no command needs none (the
// root's help lists the stand-ins' names and lines) but the completion command, which
// that help lists, unless the call only asks for the version. A call that names help or
// completion alone, a name the root does not know, or words after "--" needs them all:
// suggestions, the completion scripts and errors then come from the whole tree.
func commandsFor(args []string) func(name string) bool {
	all := func(string) bool { return true }
	words, version, help := []string{}, false, false
	for i, w := range args {
		if w == "--" {
			if len(words) == 0 && i+1 < len(args) {
				return all
			}
			break
		}
		switch {
		case w == "-v" || w == "--version":
			version = true
		case w == "-h" || w == "--help":
			help = true
		case strings.HasPrefix(w, "-"):
		default:
			words = append(words, w)
		}
	}
	if len(words) > 0 && (words[0] == "help" || words[0] == cobra.ShellCompRequestCmd || words[0] == cobra.ShellCompNoDescRequestCmd) {
		if len(words) == 1 {
			if words[0] == "help" {
				return func(name string) bool { return name == completionCommand }
			}
			return all
		}
		words = words[1:]
	}
	if len(words) == 0 {
		if version && !help {
			return func(string) bool { return false }
		}
		return func(name string) bool { return name == completionCommand }
	}
	for _, rc := range rootCommands {
		if rc.name == words[0] {
			return func(name string) bool { return name == rc.name }
		}
	}
	return all
}

func newAnalyzeCommand(stdout io.Writer) *cobra.Command {
	var formats []string
	var arguments, limits, token, evidence, rescueTo string
	var preserve bool
	cmd := &cobra.Command{
		Use:  "analyze OPERATION [PATH...]",
		Args: cobra.MinimumNArgs(1),
		ValidArgsFunction: func(c *cobra.Command, args []string, to string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return completeOperations(false)(c, args, to)
			}
			return nil, cobra.ShellCompDirectiveDefault
		},
		RunE: func(c *cobra.Command, args []string) error {
			if f := exclusivePublication(preserve, rescueTo); f != nil {
				return f
			}
			if evidence != "" && len(formats) > 0 {
				return failure.Invalid(failure.Path("format"), nil,
					"--format applies to paths only; preserved evidence keeps its recorded format")
			}
			if evidence != "" && len(args) > 1 {
				return failure.Invalid(failure.Path("sources"), nil, "give artifact paths or --evidence EVIDENCE_ID, not both")
			}
			// Paths whose sizes alone send the analysis to a worker start it now, while the
			// runtime starts and the request is validated, admitted and hashed (decision
			// 0067, fifth addendum).
			var opts []runtime.Option
			if evidence == "" && workerproc.Likely(args[1:]) {
				opts = append(opts, runtime.WithWorkerAhead())
			}
			rt, err := newRuntime([]byte(limits), opts...)
			if err != nil {
				return err
			}
			defer rt.Close()
			if rescueTo != "" {
				if f := rt.PreflightRescue(rescueTo); f != nil {
					return f
				}
			}
			op := args[0]
			if _, ok := rt.Tool(op); !ok {
				return failure.New(gen.FailureCodeUnknownOperation, "there is no operation named %q", op).
					Field(failure.Path("operation"), rt.OperationNames()).With("available_operations", rt.OperationNames())
			}
			var sources []any
			if evidence != "" {
				es, f := rt.EvidenceSources(evidence)
				if f != nil {
					return f
				}
				for _, e := range es {
					sources = append(sources, e)
				}
			} else {
				var f *failure.Failure
				if sources, f = pathSources(args[1:], formats); f != nil {
					return f
				}
			}
			raw, f := analyzeArguments(sources, arguments, token)
			if f != nil {
				return f
			}
			ctx, stop := ahead.NotifyContext(context.Background())
			defer stop()
			prog := newProgress(c.ErrOrStderr())
			defer prog.Stop()
			notice := time.AfterFunc(analysisNoticeDelay, func() { prog.Update(0, 0, "analyzing with "+op+"…") })
			defer notice.Stop()
			res, f := rt.Analyze(progressContext(ctx, prog), op, raw)
			if f != nil {
				if evidence == "" {
					namePath(f, sources)
				}
				return f
			}
			out := cliResult(res)
			switch {
			case preserve:
				p, f := rt.Preserve(res.AnalysisID)
				if f != nil {
					return f
				}
				out.Preserved = &gen.Preserved{EvidenceID: p.EvidenceID, ArtifactCount: p.ArtifactCount}
				if p.NextPage != nil {
					out.NextPage = cliNextPage(res.Operation, p.NextPage.Arguments, nil)
				}
			case rescueTo != "":
				if f := rescueInto(rt, out, res, rescueTo); f != nil {
					return f
				}
			}
			return writeJSON(stdout, out)
		},
	}
	cmd.Flags().StringArrayVar(&formats, "format", nil, "native format of the paths (once for all, or once per path)")
	cmd.Flags().StringVar(&arguments, "arguments", "", "operation fields as one JSON object")
	cmd.Flags().StringVar(&limits, "limits", "", "RequestLimits JSON: startup bounds for this invocation")
	cmd.Flags().StringVar(&token, "continuation", "", "continuation token from next_page.argv")
	cmd.Flags().StringVar(&evidence, "evidence", "", "analyze the ordered analysis sources of this preserved evidence")
	cmd.Flags().BoolVar(&preserve, "preserve", false, "preserve the analysis in the evidence store")
	cmd.Flags().StringVar(&rescueTo, "rescue-to", "", "write the analysis as a new evidence store at this absolute path")
	_ = cmd.RegisterFlagCompletionFunc("format", completeWords(formatNames))
	lazyLong(cmd, func() string {
		return "Analyze explicit artifacts with one operation. Relative paths are made absolute against the\n" +
			"working directory. --format applies to every path, or is repeated once per path in order.\n" +
			"--evidence ID analyzes a preserved record's ordered analysis sources instead of paths.\n" +
			"--preserve publishes the analysis to the evidence store; --rescue-to ABS_PATH writes it as a\n" +
			"new store at a new directory instead (the two are mutually exclusive).\n\n" + operationTable(false)
	})
	return cmd
}

// exclusivePublication refuses --preserve together with --rescue-to, so the publication
// destination is unambiguous.
func exclusivePublication(preserve bool, rescueTo string) *failure.Failure {
	if preserve && rescueTo != "" {
		return failure.Invalid(failure.Path("rescue_to"), nil,
			"--preserve and --rescue-to are mutually exclusive: choose one publication destination")
	}
	return nil
}

// rescueInto rescues the analysis behind res to dest and records the handoff in the CLI
// result out: rescued, and a next_page whose environment opens the new store.
func rescueInto(rt *runtime.Runtime, out *cliEnvelope, res *runtime.Result, dest string) *failure.Failure {
	r, f := rt.Rescue(res.AnalysisID, dest)
	if f != nil {
		return f
	}
	out.Rescued = r
	out.NextPage = nil
	if r.NextPage != nil {
		out.NextPage = cliNextPage(res.Operation, r.NextPage.Arguments, r.NextAction.Environment)
	}
	return nil
}

// pathSources builds path sources from CLI paths, made absolute, with their formats.
func pathSources(paths, formats []string) ([]any, *failure.Failure) {
	if len(paths) == 0 {
		return nil, failure.Invalid(failure.Path("sources"), nil, "provide artifact paths or --evidence EVIDENCE_ID")
	}
	if len(formats) > 1 && len(formats) != len(paths) {
		return nil, failure.Invalid(failure.Path("format"), nil,
			"--format is given %d times for %d paths; give it once for all paths or once per path", len(formats), len(paths))
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
	return sources, nil
}

// analyzeArguments builds the tool arguments the MCP tool would receive.
// namePath adds the path and the OS's reason to a failure that names a path source the
// CLI was given and cannot read: a person at the CLI gave that path, while MCP messages
// stay path-free (seed 000).
func namePath(f *failure.Failure, sources []any) {
	if f.Code != gen.FailureCodeMissingOrChangedInput {
		return
	}
	i, ok := f.Details["source_index"].(int)
	if !ok || i < 0 || i >= len(sources) {
		return
	}
	src, _ := sources[i].(map[string]any)
	path, _ := src["path"].(string)
	if path == "" {
		return
	}
	_, err := os.Stat(path)
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return
	}
	f.Message += " (" + path + ": " + pe.Err.Error() + ")"
	f.With("path", path)
}

func analyzeArguments(sources []any, arguments, token string) ([]byte, *failure.Failure) {
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
	Command     string         `json:"command"`
	Argv        []string       `json:"argv"`
	Environment map[string]any `json:"environment,omitempty"`
}

// cliEnvelope is a CLI analysis result in the contract's field order: no process-local
// analysis_id, the continuation visible, and next_page as an executable argv.
type cliEnvelope struct {
	Status       string            `json:"status"`
	Operation    string            `json:"operation"`
	Provider     gen.Provider      `json:"provider"`
	Inputs       []gen.Input       `json:"inputs"`
	Blocks       []any             `json:"blocks"`
	Coverage     gen.Coverage      `json:"coverage"`
	Truncation   *gen.Truncation   `json:"truncation"`
	Limitations  []string          `json:"limitations"`
	Continuation *string           `json:"continuation"`
	NextPage     *CLINextPage      `json:"next_page"`
	Preserved    *gen.Preserved    `json:"preserved,omitempty"`
	Rescued      *gen.RescueResult `json:"rescued,omitempty"`
}

// cliResult projects a runtime result for the CLI.
func cliResult(res *runtime.Result) *cliEnvelope {
	out := &cliEnvelope{Status: res.Status, Operation: res.Operation, Provider: res.Provider, Inputs: res.Inputs,
		Blocks: res.Blocks, Coverage: res.Coverage, Truncation: res.Truncation, Limitations: res.Limitations}
	if res.Token != "" {
		tok := res.Token
		out.Continuation = &tok
		out.NextPage = cliNextPage(res.Operation, res.NextPage.Arguments, nil)
	}
	return out
}

// cliNextPage turns next_page arguments into an argv: the paths with their formats, or
// --evidence when every source reads one preserved record.
func cliNextPage(operation string, args map[string]any, env map[string]any) *CLINextPage {
	argv := []string{"analyze", operation}
	var b []byte
	b, _ = json.Marshal(args["sources"])
	var sources []map[string]any
	_ = json.Unmarshal(b, &sources)
	evidence := ""
	for _, s := range sources {
		if s["kind"] == "evidence" {
			evidence, _ = s["evidence_id"].(string)
		}
	}
	if evidence != "" {
		argv = append(argv, "--evidence", evidence)
	} else {
		var formats []string
		for _, m := range sources {
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
	return &CLINextPage{Command: "flameox", Argv: argv, Environment: env}
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

// writeJSON prints v as indented JSON in its contract order: envelope fields as the
// contract declares them, rows in the catalog's field order, map keys sorted.
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		// Nothing half-written reaches the output; the failure is typed.
		return failure.Unencodable(err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// asFailure is err as the CLI reports it: a failure as it is; cobra's own usage errors
// (an unknown command or flag, a missing argument), which carry no host data, as
// INVALID_INPUT whose next step is the help of the command that ran (c; nil: the root).
func asFailure(c *cobra.Command, err error) *failure.Failure {
	var f *failure.Failure
	if errors.As(err, &f) {
		return f
	}
	f = failure.Invalid(failure.Path(), nil, "%s", err.Error())
	f.NextAction = usageHelp(c)
	return f
}

// usageHelp points at the help of c (nil: the root command).
func usageHelp(c *cobra.Command) *gen.NextAction {
	path := "flameox"
	if c != nil {
		path = c.CommandPath()
	}
	return &gen.NextAction{AdjustRequest: &gen.AdjustRequest{Kind: "adjust_request",
		Message: "Run `" + path + " --help` for its usage, then run the command again."}}
}

// writeFailure prints f as one line of JSON: what MCP answers for the same failure.
func writeFailure(w io.Writer, f *failure.Failure) {
	b, _ := json.Marshal(cliFailure(f))
	var x any
	_ = json.Unmarshal(b, &x)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(x)
}

// cliFailure is f as the CLI prints it: the answer MCP gives for the same failure (the
// recoverable states keep their status, unavailable or retryable; any other failure is
// the failure envelope), with a next action that calls an MCP tool the CLI has a command
// for given as that command.
func cliFailure(f *failure.Failure) any {
	if r, ok := f.Recoverable(); ok {
		r.NextAction = cliNextAction(r.NextAction)
		return r
	}
	env := f.Envelope()
	env.NextAction = cliNextAction(env.NextAction)
	return env
}

// cliNextAction is next as a CLI user takes it: a call of prepare_providers becomes an
// operator action that names `flameox prepare PROVIDER...`, which runs as given.
func cliNextAction(next *gen.NextAction) *gen.NextAction {
	if next == nil || next.CallTool == nil || next.CallTool.Tool != "prepare_providers" {
		return next
	}
	ids := providerIDs(next.CallTool.Arguments["provider_ids"])
	if len(ids) == 0 {
		return next
	}
	then := "then run the same command again"
	if next.CallTool.ThenRetry == nil {
		then = "then continue"
	}
	return &gen.NextAction{OperatorAction: &gen.OperatorAction{Kind: "operator_action",
		Message: "Run `flameox prepare " + strings.Join(ids, " ") + "` to install and verify the pinned " +
			strings.Join(ids, " and ") + ", " + then + "."}}
}

// providerIDs reads prepare_providers' provider_ids argument; nil unless every id is a
// preparable provider (a word the shell passes as it is).
func providerIDs(v any) []string {
	var ids []string
	switch v := v.(type) {
	case []string:
		ids = v
	case []gen.PreparableProvider:
		for _, id := range v {
			ids = append(ids, string(id))
		}
	case []any:
		for _, id := range v {
			s, ok := id.(string)
			if !ok {
				return nil
			}
			ids = append(ids, s)
		}
	}
	for _, id := range ids {
		if !slices.Contains(gen.PreparableProviderValues(), gen.PreparableProvider(id)) {
			return nil
		}
	}
	return ids
}
