package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
)

// TestHumanFailure: a failure printed for a person says what went wrong with its code,
// the field, what is accepted there and the next step (issue 35 item 5: "on a TTY,
// failures and reports print as sentences with the next step").
func TestHumanFailure(t *testing.T) {
	accepted := make([]string, 15)
	for i := range accepted {
		accepted[i] = string(rune('a' + i))
	}
	tests := []struct {
		name string
		f    *failure.Failure
		want string
	}{{
		name: "field and accepted values, bounded",
		f:    failure.Invalid(failure.Path("sources", 0, "format"), accepted, "the format is not read by this operation"),
		want: "flameox: the format is not read by this operation. (INVALID_INPUT)\n" +
			"  field:    sources[0].format\n" +
			"  accepted: a, b, c, d, e, f, g, h, i, j, k, l and 3 more\n" +
			"  next:     change sources[0].format and run the command again.\n",
	}, {
		name: "a tool call names the call",
		f: func() *failure.Failure {
			f := failure.New(gen.FailureCodeUnsupportedFormat, "source 0 is pstats, not pprof")
			f.NextAction = &gen.NextAction{CallTool: &gen.CallTool{Kind: "call_tool", Tool: "preview_artifact",
				Arguments: map[string]any{"sources": []any{map[string]any{"path": "/x"}}}, Message: "preview it"}}
			return f
		}(),
		want: "flameox: source 0 is pstats, not pprof. (UNSUPPORTED_FORMAT)\n" +
			"  next:     preview it. (MCP: preview_artifact {\"sources\":[{\"path\":\"/x\"}]})\n",
	}, {
		name: "a provider to prepare becomes the CLI command",
		f: func() *failure.Failure {
			f := failure.New(gen.FailureCodeUnavailableCapability, "py-spy is not installed")
			f.NextAction = &gen.NextAction{CallTool: &gen.CallTool{Kind: "call_tool", Tool: "prepare_providers",
				Arguments: map[string]any{"provider_ids": []any{"py-spy"}}, Message: "prepare"}}
			return f
		}(),
		want: "flameox: py-spy is not installed. (unavailable, UNAVAILABLE_CAPABILITY)\n" +
			"  next:     Run `flameox prepare py-spy` to install and verify the pinned py-spy, then continue.\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			writeHumanFailure(&b, tt.f)
			if d := cmp.Diff(tt.want, b.String()); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestCLIUsageErrorsAreTyped: cobra's own errors (an unknown flag or command, a missing
// argument) are INVALID_INPUT whose next step is the help of the command that ran, in
// JSON when stderr is not a terminal.
func TestCLIUsageErrorsAreTyped(t *testing.T) {
	for _, tt := range []struct {
		args []string
		help string
	}{
		{[]string{"--nope"}, "flameox --help"},
		{[]string{"nope"}, "flameox --help"},
		{[]string{"analyze"}, "flameox analyze --help"},
		{[]string{"analyze", "--nope", "x"}, "flameox analyze --help"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tt.args, strings.NewReader(""), &stdout, &stderr); code != 1 || stdout.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q", tt.args, code, stdout.String())
		}
		var f gen.Failure
		if err := json.Unmarshal(stderr.Bytes(), &f); err != nil {
			t.Fatalf("%v: stderr is not one JSON failure: %v\n%s", tt.args, err, stderr.String())
		}
		if f.Code != gen.FailureCodeInvalidInput || f.NextAction == nil || f.NextAction.AdjustRequest == nil ||
			!strings.Contains(f.NextAction.AdjustRequest.Message, "`"+tt.help+"`") {
			t.Errorf("%v: failure = %s", tt.args, stderr.String())
		}
	}
}

// TestAnalyzeHelpListsOperations: `analyze --help` lists every released operation with
// a line (issue 35 item 5), and `capture --help` those with a capture tool and the
// providers.
func TestAnalyzeHelpListsOperations(t *testing.T) {
	var stdout bytes.Buffer
	if code := run([]string{"analyze", "--help"}, strings.NewReader(""), &stdout, &stdout); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, d := range gen.Operations {
		if d.Released && !strings.Contains(stdout.String(), "  "+string(d.Name)+" ") {
			t.Errorf("analyze --help lacks %s", d.Name)
		}
	}
	if !strings.Contains(stdout.String(), "rank_cpu_hotspots               Rank the functions of one CPU profile") {
		t.Errorf("analyze --help:\n%s", stdout.String())
	}
	stdout.Reset()
	if code := run([]string{"capture", "--help"}, strings.NewReader(""), &stdout, &stdout); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if s := stdout.String(); !strings.Contains(s, "Providers: direct, ") || strings.Contains(s, "  summarize_inference ") {
		t.Errorf("capture --help:\n%s", s)
	}
}

// TestCompletion: shell completion knows the operations, formats, providers, clients and
// toolsets (issue 35 item 5), through cobra's __complete protocol that the generated scripts call.
func TestCompletion(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"__complete", "analyze", "rank_"}, "rank_cpu_hotspots\tRank the functions of one CPU profile"},
		{[]string{"__complete", "analyze", "--format", ""}, "nsys-parquet"},
		{[]string{"__complete", "capture", "--provider", ""}, "py-spy"},
		{[]string{"__complete", "capture", "--operation", ""}, "rank_cpu_hotspots"},
		{[]string{"__complete", "mcp", "serve", "--toolsets", ""}, "trace"},
		{[]string{"__complete", "prepare", ""}, "memray"},
		{[]string{"__complete", "setup", "--client", ""}, "claude-desktop"},
		{[]string{"__complete", "setup", "--provider", ""}, "py-spy"},
		{[]string{"__complete", "update", "--client", ""}, "vscode"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tt.args, strings.NewReader(""), &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d: %s", tt.args, code, stderr.String())
		}
		if !strings.Contains(stdout.String(), tt.want) {
			t.Errorf("%v: completions lack %q:\n%s", tt.args, tt.want, stdout.String())
		}
	}
}

// TestFailureOnATerminal: a person at a terminal reads the failure as sentences, naming
// the path they gave and the OS's reason; --json gives the JSON line MCP would answer,
// and a pipe gets that line too (TestCLIUsageErrorsAreTyped).
func TestFailureOnATerminal(t *testing.T) {
	home := t.TempDir()
	missing := home + "/nowhere/cpu.pstats"
	r := startPTY(t, cliEnv(home), "analyze", "rank_cpu_hotspots", missing)
	if code := r.wait(); code != 1 || r.stdout.Len() != 0 {
		t.Fatalf("exit %d, stdout %q", code, r.stdout.String())
	}
	screen := strings.ReplaceAll(r.shown(), "\r\n", "\n")
	want := "flameox: source 0 does not exist or cannot be read (" + missing + ": no such file or directory). (MISSING_OR_CHANGED_INPUT)\n" +
		"  field:    sources[0].path\n" +
		"  next:     change sources[0].path and run the command again.\n"
	if screen != want {
		t.Errorf("terminal showed:\n%s\nwant:\n%s", screen, want)
	}

	r = startPTY(t, cliEnv(home), "analyze", "--json", "rank_cpu_hotspots", missing)
	if code := r.wait(); code != 1 {
		t.Fatalf("exit %d", code)
	}
	var f gen.Failure
	if err := json.Unmarshal([]byte(r.shown()), &f); err != nil || f.Code != gen.FailureCodeMissingOrChangedInput {
		t.Errorf("--json on a terminal showed %q (%v)", r.shown(), err)
	}
}
