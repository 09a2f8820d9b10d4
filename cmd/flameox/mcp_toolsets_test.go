package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/runtime"
)

// lifecycleTools are the tools every server serves, whatever its toolsets.
var lifecycleTools = []string{"prepare_providers", "preserve_evidence", "rescue_evidence", "query_evidence", "inspect_evidence"}

// maxToolsetsCPUBytes bounds the tools array of a server started with --toolsets cpu.
const maxToolsetsCPUBytes = 60 << 10

// maxInstructionsBytes bounds the initialize result's instructions.
const maxInstructionsBytes = 800

// served is the reply of a `flameox mcp serve` run in this process.
type served struct {
	instructions string
	// tools is the tools array of tools/list, each tool compact JSON.
	tools []json.RawMessage
	names []string
	// call is the result of the tools/call the run was asked for, if any.
	call json.RawMessage
}

// serve runs `flameox mcp serve` with args through run, as main does, speaking
// newline-delimited JSON-RPC on its stdin and stdout: initialize, tools/list, and a
// tools/call of callTool when it is not empty. It returns the replies after the input
// ended and the command returned 0.
func serve(t *testing.T, args []string, callTool string) served {
	t.Helper()
	t.Setenv("FLAMEOX_DATA_DIR", filepath.Join(t.TempDir(), "store"))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		code := run(append([]string{"mcp", "serve"}, args...), inR, outW, &stderr)
		outW.Close()
		done <- code
	}()
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 8<<20)
	roundTrip := func(id int, method, params string) json.RawMessage {
		t.Helper()
		if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":`+strconv.Itoa(id)+`,"method":"`+method+`","params":`+params+"}\n"); err != nil {
			t.Fatalf("%s: %v (stderr %s)", method, err, stderr.String())
		}
		if !lines.Scan() {
			t.Fatalf("%s: no reply (stderr %s)", method, stderr.String())
		}
		var reply struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(lines.Bytes(), &reply); err != nil || reply.ID != id || reply.Error != nil {
			t.Fatalf("%s: unexpected reply %s", method, lines.Bytes())
		}
		return reply.Result
	}
	var out served
	var init struct {
		Instructions string `json:"instructions"`
	}
	if err := json.Unmarshal(roundTrip(1, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"toolsets","version":"1"}}`), &init); err != nil {
		t.Fatal(err)
	}
	out.instructions = init.Instructions
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(roundTrip(2, "tools/list", `{}`), &list); err != nil {
		t.Fatal(err)
	}
	for _, tl := range list.Tools {
		var b bytes.Buffer
		if err := json.Compact(&b, tl); err != nil {
			t.Fatal(err)
		}
		var v struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(b.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		out.tools = append(out.tools, b.Bytes())
		out.names = append(out.names, v.Name)
	}
	if callTool != "" {
		out.call = roundTrip(3, "tools/call", `{"name":"`+callTool+`","arguments":{}}`)
	}
	inW.Close()
	if code := <-done; code != 0 {
		t.Fatalf("flameox mcp serve %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
	}
	return out
}

// TestMCPServeToolsetsCPU starts the server with --toolsets cpu: tools/list holds the CPU
// operations, their capture tools and the lifecycle tools, in catalog order, in under
// 60 KB; a tool of another toolset answers UNKNOWN_TOOL naming its toolset.
func TestMCPServeToolsetsCPU(t *testing.T) {
	t.Setenv(toolsetsVariable, "")
	s := serve(t, []string{"--toolsets", "cpu"}, "summarize_trace")
	want := append([]string{"rank_cpu_hotspots", "inspect_cpu_callers",
		"capture_and_rank_cpu_hotspots", "capture_and_inspect_cpu_callers"}, lifecycleTools...)
	if !slices.Equal(s.names, want) {
		t.Fatalf("tools/list with --toolsets cpu:\n got %v\nwant %v", s.names, want)
	}
	b, err := json.Marshal(s.tools)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("tools/list with --toolsets cpu: %d tools, %d bytes", len(s.tools), len(b))
	if len(b) >= maxToolsetsCPUBytes {
		t.Errorf("tools/list with --toolsets cpu is %d bytes; it must stay under %d", len(b), maxToolsetsCPUBytes)
	}
	if !strings.Contains(s.instructions, "Toolsets loaded: cpu, evidence; not loaded: trace,") {
		t.Errorf("the instructions do not say which toolsets are loaded:\n%s", s.instructions)
	}

	var call struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Code           string         `json:"code"`
			Message        string         `json:"message"`
			AcceptedValues []string       `json:"accepted_values"`
			Details        map[string]any `json:"details"`
			NextAction     struct {
				Kind    string `json:"kind"`
				Message string `json:"message"`
			} `json:"next_action"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(s.call, &call); err != nil {
		t.Fatal(err)
	}
	f := call.StructuredContent
	if !call.IsError || f.Code != "UNKNOWN_TOOL" || f.Details["toolset"] != "trace" || !slices.Equal(f.AcceptedValues, want) ||
		f.NextAction.Kind != "operator_action" || !strings.Contains(f.NextAction.Message, "--toolsets cpu,trace") {
		t.Errorf("a call of a tool outside the loaded toolsets: %s", s.call)
	}
}

// TestMCPServeToolsetsEnvironment: FLAMEOX_TOOLSETS selects the toolsets when --toolsets
// is not given, and --toolsets wins over it.
func TestMCPServeToolsetsEnvironment(t *testing.T) {
	t.Setenv(toolsetsVariable, " memory,test ")
	s := serve(t, nil, "")
	want := append([]string{"rank_allocation_hotspots", "rank_retained_memory",
		"summarize_failures", "inspect_pytest_fixtures", "summarize_coverage",
		"capture_and_rank_allocation_hotspots", "capture_and_rank_retained_memory",
		"capture_and_summarize_failures", "capture_and_inspect_pytest_fixtures", "capture_and_summarize_coverage"},
		lifecycleTools...)
	if !slices.Equal(s.names, want) {
		t.Fatalf("tools/list with %s=memory,test:\n got %v\nwant %v", toolsetsVariable, s.names, want)
	}

	s = serve(t, []string{"--toolsets", "static"}, "")
	want = append([]string{"inspect_performance_candidates"}, lifecycleTools...)
	if !slices.Equal(s.names, want) {
		t.Fatalf("--toolsets static with %s=memory,test:\n got %v\nwant %v", toolsetsVariable, s.names, want)
	}

	// evidence alone serves the lifecycle tools; all serves the whole catalog.
	if s = serve(t, []string{"--toolsets", "evidence"}, ""); !slices.Equal(s.names, lifecycleTools) {
		t.Errorf("--toolsets evidence: %v", s.names)
	}
	rt, err := newRuntime(nil, runtime.WithStoreDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if s = serve(t, []string{"--toolsets", "all"}, ""); !slices.Equal(s.names, rt.ToolNames()) {
		t.Errorf("--toolsets all: %v", s.names)
	}
}

// TestMCPServeUnknownToolsetFailsAtStart: an unknown name in --toolsets or
// FLAMEOX_TOOLSETS ends the command with a typed failure listing the accepted names,
// before anything is served.
func TestMCPServeUnknownToolsetFailsAtStart(t *testing.T) {
	accepted := []string{"all", "trace", "cpu", "memory", "benchmark", "inference", "gpu", "test", "static", "preview", "evidence"}
	for _, c := range []struct {
		name, env string
		args      []string
		source    string
	}{
		{name: "flag", args: []string{"--toolsets", "cpu,gpus"}, source: "--toolsets"},
		{name: "environment", env: "cpu,gpus", source: toolsetsVariable},
		{name: "flag wins", env: "cpu", args: []string{"--toolsets", "gpus"}, source: "--toolsets"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(toolsetsVariable, c.env)
			// A request waits on stdin: a server that started would answer it.
			stdin := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}` + "\n")
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"mcp", "serve"}, c.args...), stdin, &stdout, &stderr)
			if code == 0 || stdout.Len() != 0 {
				t.Fatalf("exit %d, stdout %q: the server started", code, stdout.String())
			}
			var f struct {
				Code           string         `json:"code"`
				Message        string         `json:"message"`
				FieldPath      []any          `json:"field_path"`
				AcceptedValues []string       `json:"accepted_values"`
				Details        map[string]any `json:"details"`
			}
			if err := json.Unmarshal(stderr.Bytes(), &f); err != nil {
				t.Fatalf("stderr is not one failure envelope: %v\n%s", err, stderr.String())
			}
			if f.Code != "INVALID_INPUT" || !slices.Equal(f.AcceptedValues, accepted) || len(f.FieldPath) != 1 || f.FieldPath[0] != "toolsets" ||
				f.Details["requested_toolset"] != "gpus" || f.Details["source"] != c.source ||
				!strings.Contains(f.Message, `"gpus"`) || !strings.Contains(f.Message, strings.Join(accepted, ", ")) {
				t.Errorf("failure: %s", stderr.String())
			}
		})
	}
}

// TestMCPInitializeInstructions: the initialize result carries the server's orientation,
// under 800 bytes whichever toolsets are loaded.
func TestMCPInitializeInstructions(t *testing.T) {
	s := connect(t, "")
	got := s.cs.InitializeResult().Instructions
	for _, want := range []string{"rank_*", "capture_and_X", "next_page.arguments unchanged", "preserve",
		"durable evidence", "filter", "Toolsets loaded: all (trace, cpu,"} {
		if !strings.Contains(got, want) {
			t.Errorf("instructions lack %q:\n%s", want, got)
		}
	}
	t.Logf("instructions, %d bytes: %s", len(got), got)
	if len(got) > maxInstructionsBytes {
		t.Errorf("instructions are %d bytes; at most %d", len(got), maxInstructionsBytes)
	}
	for _, ts := range gen.ToolsetValues() {
		sel, f := resolveToolsets(string(ts), true, "")
		if f != nil {
			t.Fatal(f)
		}
		if n := len(sel.instructions()); n > maxInstructionsBytes {
			t.Errorf("instructions with --toolsets %s are %d bytes; at most %d", ts, n, maxInstructionsBytes)
		}
	}
}

// TestToolsetsCoverTheCatalog: every tool has a toolset, an analysis tool's is its
// operation's, a capture tool's its operation's, the lifecycle tools' evidence, and every
// toolset but evidence holds at least one operation.
func TestToolsetsCoverTheCatalog(t *testing.T) {
	rt, err := newRuntime(nil, runtime.WithStoreDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	used := map[gen.Toolset]bool{}
	for _, tl := range rt.Tools() {
		if !slices.Contains(gen.ToolsetValues(), tl.Toolset) {
			t.Errorf("%s has toolset %q", tl.Name, tl.Toolset)
		}
		used[tl.Toolset] = true
		switch tl.Family {
		case "lifecycle":
			if tl.Toolset != gen.ToolsetEvidence || !slices.Contains(lifecycleTools, tl.Name) {
				t.Errorf("lifecycle tool %s: toolset %s", tl.Name, tl.Toolset)
			}
		default:
			if tl.Toolset != tl.Operation.Toolset || tl.Toolset == gen.ToolsetEvidence {
				t.Errorf("%s: toolset %s, its operation's %s", tl.Name, tl.Toolset, tl.Operation.Toolset)
			}
		}
	}
	for _, ts := range gen.ToolsetValues() {
		if !used[ts] {
			t.Errorf("toolset %s holds no tool", ts)
		}
	}
	// The in-memory server serves the subset too.
	sel, _ := resolveToolsets("gpu", true, "")
	st, ct := mcp.NewInMemoryTransports()
	ss, err := newServer(rt, sel).Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		if x, _ := rt.Tool(tl.Name); x.Toolset != gen.ToolsetGPU && x.Toolset != gen.ToolsetEvidence {
			t.Errorf("--toolsets gpu serves %s (toolset %s)", tl.Name, x.Toolset)
		}
	}
}
