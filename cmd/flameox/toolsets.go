package main

import (
	"fmt"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/runtime"
)

// toolsetsVariable names the toolsets a server loads when --toolsets is not given
// (decision 0039).
const toolsetsVariable = "FLAMEOX_TOOLSETS"

// allToolsetsName loads every toolset; it is the default.
const allToolsetsName = "all"

// toolsets is the selection of toolsets a server loads: the contract's groups of tools
// (gen.Toolset, an operation's toolset in cue/contracts/operations.cue). A capture tool
// comes with its operation's toolset; evidence (the lifecycle tools) is always loaded.
type toolsets struct {
	loaded map[gen.Toolset]bool
}

// allToolsets selects every tool.
func allToolsets() toolsets {
	s := toolsets{loaded: map[gen.Toolset]bool{}}
	for _, t := range gen.ToolsetValues() {
		s.loaded[t] = true
	}
	return s
}

// acceptedToolsets are the names --toolsets and FLAMEOX_TOOLSETS accept.
func acceptedToolsets() []string {
	out := []string{allToolsetsName}
	for _, t := range gen.ToolsetValues() {
		out = append(out, string(t))
	}
	return out
}

// resolveToolsets reads the selection: the --toolsets value when the flag was given, else
// a non-empty FLAMEOX_TOOLSETS, else every toolset. A list is comma-separated; blanks
// around names and empty items are ignored; an unknown name, or a flag naming none, is
// INVALID_INPUT listing the accepted names.
func resolveToolsets(flag string, flagGiven bool, env string) (toolsets, *failure.Failure) {
	switch {
	case flagGiven:
		return parseToolsets(flag, "--toolsets")
	case strings.TrimSpace(env) != "":
		return parseToolsets(env, toolsetsVariable)
	}
	return allToolsets(), nil
}

func parseToolsets(list, from string) (toolsets, *failure.Failure) {
	s := toolsets{loaded: map[gen.Toolset]bool{gen.ToolsetEvidence: true}}
	known := map[string]bool{}
	for _, t := range gen.ToolsetValues() {
		known[string(t)] = true
	}
	named := 0
	for _, item := range strings.Split(list, ",") {
		name := strings.TrimSpace(item)
		switch {
		case name == "":
			continue
		case name == allToolsetsName:
			s = allToolsets()
		case known[name]:
			s.loaded[gen.Toolset(name)] = true
		default:
			return toolsets{}, failure.Invalid(failure.Path("toolsets"), acceptedToolsets(),
				"%s names unknown toolset %q; accepted: %s", from, name, strings.Join(acceptedToolsets(), ", ")).
				With("requested_toolset", name).With("source", from)
		}
		named++
	}
	if named == 0 {
		return toolsets{}, failure.Invalid(failure.Path("toolsets"), acceptedToolsets(),
			"%s names no toolset; accepted: %s", from, strings.Join(acceptedToolsets(), ", ")).With("source", from)
	}
	return s, nil
}

// all reports whether every toolset is loaded.
func (s toolsets) all() bool {
	for _, t := range gen.ToolsetValues() {
		if !s.loaded[t] {
			return false
		}
	}
	return true
}

// has reports whether the selection loads the tool.
func (s toolsets) has(t *runtime.Tool) bool { return s.loaded[t.Toolset] }

// names lists the loaded toolsets in declaration order.
func (s toolsets) names() []string {
	var out []string
	for _, t := range gen.ToolsetValues() {
		if s.loaded[t] {
			out = append(out, string(t))
		}
	}
	return out
}

// tools lists the loaded tools in catalog order.
func (s toolsets) tools(rt *runtime.Runtime) []*runtime.Tool {
	var out []*runtime.Tool
	for _, t := range rt.Tools() {
		if s.has(t) {
			out = append(out, t)
		}
	}
	return out
}

// unloaded is the failure of a call of a catalog tool whose toolset the server did not
// load: UNKNOWN_TOOL, as for a name the catalog lacks, with the toolset that holds it and
// what a person must change to load it.
func (s toolsets) unloaded(t *runtime.Tool, loadedTools []string) *failure.Failure {
	var sets []string
	for _, n := range s.names() {
		if n != string(gen.ToolsetEvidence) {
			sets = append(sets, n)
		}
	}
	with := strings.Join(append(sets, string(t.Toolset)), ",")
	f := failure.New(gen.FailureCodeUnknownTool,
		"%s is in the %s toolset, which this server did not load (loaded: %s)", t.Name, t.Toolset, strings.Join(s.names(), ", ")).
		Field(failure.Path("name"), loadedTools).
		With("requested_tool", t.Name).With("toolset", string(t.Toolset)).With("loaded_toolsets", s.names())
	f.NextAction = &gen.NextAction{OperatorAction: &gen.OperatorAction{Kind: "operator_action",
		Message: fmt.Sprintf("Restart the server with flameox mcp serve --toolsets %s (or %s=%s) to load %s; meanwhile use the loaded tools.",
			with, toolsetsVariable, with, t.Name)}}
	return f
}

// instructions is the server's orientation for a client (the initialize result's
// instructions): how to choose among the loaded tools, paging, preservation, and which
// toolsets are loaded. It stays under 800 bytes with every toolset loaded.
func (s toolsets) instructions() string {
	var b strings.Builder
	b.WriteString("Flameox reads profiler, trace, benchmark, inference, test and GPU artifacts. " +
		"Pick the tool whose description names your artifact's format: rank_* and summarize_trace_operations rank by cost, " +
		"summarize_*/inspect_* list rows, compare_* compare against a baseline, " +
		"capture_and_X runs a command under a collector, then does X. " +
		"Prefer ranking tools and filter fields to paging raw rows. " +
		"next_page is exact: call next_page.tool with next_page.arguments unchanged. " +
		"preserve: true (capture) or preserve_evidence (analysis_id) makes a result durable evidence; query_evidence finds it. ")
	if s.all() {
		b.WriteString("Toolsets loaded: all (" + strings.Join(s.names(), ", ") + ").")
		return b.String()
	}
	var off []string
	for _, t := range gen.ToolsetValues() {
		if !s.loaded[t] {
			off = append(off, string(t))
		}
	}
	fmt.Fprintf(&b, "Toolsets loaded: %s; not loaded: %s (set by --toolsets or %s).",
		strings.Join(s.names(), ", "), strings.Join(off, ", "), toolsetsVariable)
	return b.String()
}

// toolsetsUsage is the --toolsets help of mcp serve and mcp inspect.
func toolsetsUsage() string {
	sets := toolsetNames()
	return "comma-separated toolsets to load, default all (or " + toolsetsVariable + "): " + strings.Join(sets, ", ") +
		"; a capture tool comes with its operation's toolset, and evidence (the lifecycle tools) is always loaded"
}
