package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/flameox/flameox/contracts"
	"github.com/flameox/flameox/runtime"
)

// session is an in-memory MCP client session over a runtime whose evidence store is a
// test directory.
type session struct {
	t     *testing.T
	cs    *mcp.ClientSession
	out   map[string]*jsonschema.Schema
	rich  map[string]*jsonschema.Schema
	store string
	// rt is the served runtime, whose input validation every next action of every
	// result must pass (validateActions).
	rt *runtime.Runtime
}

func connect(t *testing.T, limits string) *session {
	t.Helper()
	return connectStore(t, limits, filepath.Join(t.TempDir(), "store"))
}

func connectStore(t *testing.T, limits, store string) *session {
	t.Helper()
	return connectWith(t, limits, store, nil)
}

func connectWith(t *testing.T, limits, store string, opts *mcp.ClientOptions) *session {
	t.Helper()
	rt, err := newRuntime([]byte(limits), runtime.WithStoreDir(store))
	if err != nil {
		t.Fatal(err)
	}
	return serveSession(t, rt, store, "test", opts)
}

// serveSession serves rt's tools to an in-memory MCP client named client and returns the
// session, its tools listed; store is rt's evidence store.
func serveSession(t *testing.T, rt *runtime.Runtime, store, client string, opts *mcp.ClientOptions) *session {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := newServer(rt, allToolsets()).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: client, Version: "1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	s := &session{t: t, cs: cs, out: map[string]*jsonschema.Schema{}, rich: map[string]*jsonschema.Schema{}, store: store, rt: rt}
	s.listTools()
	return s
}

// call invokes a tool and checks that the text block and structuredContent carry the same
// object, which also validates against the tool's advertised output schema.
func (s *session) call(tool string, args any) (map[string]any, bool) {
	s.t.Helper()
	return s.callParams(&mcp.CallToolParams{Name: tool, Arguments: args})
}

func (s *session) callParams(params *mcp.CallToolParams) (map[string]any, bool) {
	t := s.t
	t.Helper()
	tool := params.Name
	res, err := s.cs.CallTool(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("want one content block, got %d", len(res.Content))
	}
	text := res.Content[0].(*mcp.TextContent).Text
	var fromText, fromStructured map[string]any
	if err := json.Unmarshal([]byte(text), &fromText); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &fromStructured); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fromText, fromStructured); diff != "" {
		t.Fatalf("text and structuredContent differ:\n%s", diff)
	}
	s.validateActions(tool, fromText)
	inst, _ := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if s.out[tool] == nil {
		// A tool the catalog does not have has no output schema to check against.
		return fromText, res.IsError
	}
	if err := s.out[tool].Validate(inst); err != nil {
		t.Fatalf("%s result does not match the output schema: %v\n%s", tool, err, text)
	}
	if err := s.rich[tool].Validate(inst); err != nil {
		t.Fatalf("%s result does not match the rich result schema: %v\n%s", tool, err, text)
	}
	return fromText, res.IsError
}

// nextArgs returns res's next_page.arguments after checking that next_page names tool, or
// nil when the result is the last page.
func (s *session) nextArgs(res map[string]any, tool string) any {
	s.t.Helper()
	next, _ := res["next_page"].(map[string]any)
	if next == nil {
		return nil
	}
	if next["tool"] != tool {
		s.t.Fatalf("next_page.tool = %v, want %s", next["tool"], tool)
	}
	return next["arguments"]
}

// preview calls preview_artifact.
func (s *session) preview(args any) (map[string]any, bool) {
	s.t.Helper()
	return s.call("preview_artifact", args)
}

// checkCaptureDescription checks that a capture tool mentions experiments only when it
// accepts one, and then states the blocks that fit its sources with two cases, as its
// experiment.blocks description does (the schema allows 1-100, as seed 000 says;
// admission refuses more sources than fit).
func checkCaptureDescription(t *testing.T, tl *mcp.Tool) {
	t.Helper()
	b, _ := json.Marshal(tl.InputSchema)
	var in struct {
		Properties struct {
			Experiment *struct {
				AnyOf []struct {
					Properties struct {
						Blocks struct {
							Maximum     int    `json:"maximum"`
							Description string `json:"description"`
						} `json:"blocks"`
					} `json:"properties"`
				} `json:"anyOf"`
			} `json:"experiment"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	e := in.Properties.Experiment
	if e == nil {
		if strings.Contains(strings.ToLower(tl.Description), "experiment") {
			t.Errorf("%s accepts no experiment but its description mentions one: %s", tl.Name, tl.Description)
		}
		return
	}
	blocks := e.AnyOf[0].Properties.Blocks
	if blocks.Maximum != 100 {
		t.Errorf("%s: experiment.blocks maximum %d, want 100", tl.Name, blocks.Maximum)
	}
	var per, sources int
	if _, err := fmt.Sscanf(blocks.Description, "cases x blocks x %d <= %d sources", &per, &sources); err != nil || per < 1 {
		t.Fatalf("%s: experiment.blocks does not state its arithmetic: %q", tl.Name, blocks.Description)
	}
	if fit := sources / (2 * per); fit < 1 || !strings.Contains(tl.Description, fmt.Sprintf("two cases fit at most %d blocks", fit)) {
		t.Errorf("%s: experiment.blocks (%s) is not what its description states: %s", tl.Name, blocks.Description, tl.Description)
	}
}

// compileDraft7 compiles a schema of contracts/ as draft-07.
func compileDraft7(t *testing.T, path string) *jsonschema.Schema {
	t.Helper()
	b, err := fs.ReadFile(contracts.FS, path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	if err := c.AddResource("mem:///"+path, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("mem:///" + path)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// listTools checks the catalog, its annotations and cache hint, and compiles every
// output schema as draft-07, the dialect strict clients use.
func (s *session) listTools() {
	t := s.t
	t.Helper()
	tools, err := s.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if tl.Title == "" || tl.Title == tl.Name {
			t.Errorf("%s has no human title (title %q)", tl.Name, tl.Title)
		}
		a := tl.Annotations
		readOnly := tl.Name != "preserve_evidence" && tl.Name != "rescue_evidence" && tl.Name != "prepare_providers"
		if tl.Name == "prepare_providers" {
			// Preparation installs a collector: not read-only, not destructive, idempotent, open world.
			if a.ReadOnlyHint || !a.IdempotentHint || a.DestructiveHint == nil || *a.DestructiveHint || a.OpenWorldHint == nil || !*a.OpenWorldHint {
				t.Errorf("%s annotations = %+v", tl.Name, a)
			}
		} else if strings.HasPrefix(tl.Name, "capture_and_") {
			checkCaptureDescription(t, tl)
			// Capture tools execute a target: effectful, not idempotent, open world.
			if a.ReadOnlyHint || a.IdempotentHint || a.DestructiveHint == nil || !*a.DestructiveHint || a.OpenWorldHint == nil || !*a.OpenWorldHint {
				t.Errorf("%s annotations = %+v", tl.Name, a)
			}
		} else if a.ReadOnlyHint != readOnly || !a.IdempotentHint || a.OpenWorldHint == nil || *a.OpenWorldHint ||
			(!readOnly && (a.DestructiveHint == nil || *a.DestructiveHint)) {
			t.Errorf("%s annotations = %+v", tl.Name, a)
		}
		b, _ := json.Marshal(tl.OutputSchema)
		doc, _ := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft7)
		if err := c.AddResource("mem:///out.json", doc); err != nil {
			t.Fatal(err)
		}
		sch, err := c.Compile("mem:///out.json")
		if err != nil {
			t.Fatal(err)
		}
		s.out[tl.Name] = sch
	}
	// Every tool of the published catalog is served, in catalog order.
	var catalog struct {
		Tools []struct {
			Name         string `json:"name"`
			Family       string `json:"family"`
			Operation    string `json:"operation"`
			ResultSchema string `json:"result_schema"`
		} `json:"tools"`
		Operations []struct {
			Operation string `json:"operation"`
		} `json:"operations"`
	}
	b, _ := fs.ReadFile(contracts.FS, "catalog.json")
	json.Unmarshal(b, &catalog)
	// The catalog lists analysis tools, then capture tools, then lifecycle tools; analysis
	// and capture tools each follow the operation registry's order.
	registry := map[string]int{}
	for i, op := range catalog.Operations {
		registry[op.Operation] = i
	}
	family := map[string]int{"analysis": 0, "capture": 1, "lifecycle": 2}
	var want []string
	for i, tl := range catalog.Tools {
		want = append(want, tl.Name)
		s.rich[tl.Name] = compileDraft7(t, tl.ResultSchema)
		if i == 0 {
			continue
		}
		prev := catalog.Tools[i-1]
		if family[prev.Family] > family[tl.Family] ||
			(prev.Family == tl.Family && tl.Family != "lifecycle" && registry[prev.Operation] >= registry[tl.Operation]) {
			t.Errorf("catalog lists %s (%s) after %s (%s)", tl.Name, tl.Family, prev.Name, prev.Family)
		}
	}
	if len(want) < 10 {
		t.Fatalf("the catalog lists %d tools", len(want))
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("tools (-want +got):\n%s", diff)
	}
	if tools.TTLMs != 3600000 || tools.CacheScope != "public" {
		t.Errorf("cache hint = %d %q", tools.TTLMs, tools.CacheScope)
	}
}

func TestMCPPagesWithNextPageUnchanged(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lines.txt")
	var b strings.Builder
	for i := 1; i <= 25; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	s := connect(t, "")
	args := any(map[string]any{"sources": []any{map[string]any{"kind": "path", "path": path}}, "page_size": 10})
	var lines []float64
	var ids []string
	for page := 0; page < 10; page++ {
		res, isErr := s.preview(args)
		if isErr {
			t.Fatalf("page %d failed: %v", page, res)
		}
		if res["continuation"] != nil {
			t.Errorf("MCP results keep the token only in next_page")
		}
		ids = append(ids, res["analysis_id"].(string))
		for _, r := range res["blocks"].([]any)[1].(map[string]any)["rows"].([]any) {
			lines = append(lines, r.(map[string]any)["line"].(float64))
		}
		if args = s.nextArgs(res, "preview_artifact"); args == nil {
			break
		}
	}
	if len(lines) != 25 || lines[0] != 1 || lines[24] != 25 {
		t.Fatalf("lines = %v", lines)
	}
	if len(ids) != 3 || ids[0] == ids[1] || len(ids[0]) != 64 {
		t.Errorf("analysis ids = %v", ids)
	}
	// Changing the file invalidates the recorded digest in next_page sources.
	res, _ := s.preview(map[string]any{"sources": []any{map[string]any{"kind": "path", "path": path}}, "page_size": 10})
	next := res["next_page"].(map[string]any)["arguments"]
	if err := os.WriteFile(path, []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, isErr := s.preview(next)
	if !isErr || res["code"] != "MISSING_OR_CHANGED_INPUT" {
		t.Fatalf("changed input: %v", res)
	}
	if diff := cmp.Diff([]any{"sources", 0.0, "expected_sha256"}, res["field_path"]); diff != "" {
		t.Errorf("field_path (-want +got):\n%s", diff)
	}
}

func TestMCPFailuresAreStructured(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(path, []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := map[string]any{"kind": "path", "path": path}
	s := connect(t, `{"max_rows":50}`)
	tests := []struct {
		name     string
		args     any
		code     string
		path     []any
		accepted []any
	}{
		{"unknown field", map[string]any{"sources": []any{src}, "options": map[string]any{}}, "INVALID_INPUT", []any{"options"},
			[]any{"continuation", "limits", "offset", "page_size", "sources", "text_fragment_chars"}},
		{"no sources", map[string]any{}, "INVALID_INPUT", []any{"sources"}, nil},
		{"raising a limit", map[string]any{"sources": []any{src}, "limits": map[string]any{"max_rows": 100}}, "LIMIT_EXCEEDED",
			[]any{"limits", "max_rows"}, []any{"<=50"}},
		{"page size and max_rows disagree", map[string]any{"sources": []any{src}, "page_size": 5, "limits": map[string]any{"max_rows": 6}},
			"INVALID_INPUT", []any{"page_size"}, nil},
		{"wrong digest", map[string]any{"sources": []any{map[string]any{"kind": "path", "path": path, "expected_sha256": strings.Repeat("0", 64)}}},
			"MISSING_OR_CHANGED_INPUT", []any{"sources", 0.0, "expected_sha256"}, nil},
		{"missing file", map[string]any{"sources": []any{map[string]any{"kind": "path", "path": filepath.Join(dir, "secret-name.txt")}}},
			"MISSING_OR_CHANGED_INPUT", []any{"sources", 0.0, "path"}, nil},
		{"unknown evidence", map[string]any{"sources": []any{map[string]any{"kind": "evidence", "evidence_id": strings.Repeat("a", 64)}}},
			"MISSING_EVIDENCE", []any{"sources", 0.0, "evidence_id"}, nil},
		{"offset past the end", map[string]any{"sources": []any{src}, "offset": 1}, "INVALID_INPUT", []any{"offset"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, isErr := s.preview(tt.args)
			if !isErr {
				t.Fatalf("isError = false: %v", res)
			}
			if res["status"] != "failed" || res["code"] != tt.code {
				t.Fatalf("status/code = %v/%v: %v", res["status"], res["code"], res["message"])
			}
			if diff := cmp.Diff(tt.path, res["field_path"]); diff != "" {
				t.Errorf("field_path (-want +got):\n%s", diff)
			}
			if tt.accepted != nil {
				if diff := cmp.Diff(tt.accepted, res["accepted_values"]); diff != "" {
					t.Errorf("accepted_values (-want +got):\n%s", diff)
				}
			}
			b, _ := json.Marshal(res)
			if strings.Contains(string(b), dir) {
				t.Errorf("a host path reached the MCP message: %s", b)
			}
			if na, _ := res["next_action"].(map[string]any); na == nil || na["kind"] != "adjust_request" {
				t.Errorf("next_action = %v", res["next_action"])
			}
		})
	}
}

// TestMCPUnknownToolIsAStructuredFailure: a misspelt tool name is a tool result with the
// UNKNOWN_TOOL failure, the tool names and the nearest one, not a protocol error.
func TestMCPUnknownToolIsAStructuredFailure(t *testing.T) {
	s := connect(t, "")
	res, isErr := s.call("preview_artifacts", map[string]any{"sources": []any{}})
	if !isErr || res["code"] != "UNKNOWN_TOOL" || res["details"].(map[string]any)["did_you_mean"] != "preview_artifact" {
		t.Fatalf("result = %v", res)
	}
	names := res["accepted_values"].([]any)
	if len(names) < 15 || !slices.Contains(names, any("rank_cpu_hotspots")) {
		t.Errorf("accepted_values = %v", names)
	}
}

// TestMCPFailuresNameTheFix covers the failures a model hits most: a misspelt field, a
// source without kind (a path by default), nulls for optional fields, and a continuation reused with changed
// arguments, which names what changed.
func TestMCPFailuresNameTheFix(t *testing.T) {
	_, path := linesFile(t, 30)
	s := connect(t, "")
	src := map[string]any{"kind": "path", "path": path}

	res, isErr := s.preview(map[string]any{"source": []any{src}})
	if !isErr || fmt.Sprint(res["field_path"]) != "[source]" || res["details"].(map[string]any)["did_you_mean"] != "sources" {
		t.Errorf("misspelt sources: %v", res)
	}
	// kind defaults to path (decision 0051); an evidence_id without kind names the kind.
	res, isErr = s.preview(map[string]any{"sources": []any{map[string]any{"path": path}}})
	if isErr || len(rows(res)) == 0 {
		t.Errorf("source without kind: %v", res)
	}
	res, isErr = s.preview(map[string]any{"sources": []any{map[string]any{"evidence_id": strings.Repeat("a", 64)}}})
	if !isErr || !cmp.Equal(res["accepted_values"], []any{"evidence"}) {
		t.Errorf("evidence source without kind: %v", res)
	}
	res, isErr = s.preview(map[string]any{"sources": []any{src}, "page_size": nil, "limits": nil, "text_fragment_chars": nil})
	if isErr || len(rows(res)) == 0 {
		t.Errorf("nulls for optional fields: %v", res)
	}

	page1, _ := s.preview(map[string]any{"sources": []any{src}, "page_size": 10})
	next := page1["next_page"].(map[string]any)["arguments"].(map[string]any)
	next["page_size"], next["text_fragment_chars"] = 5.0, 100.0
	delete(next, "limits")
	res, isErr = s.preview(next)
	changed, _ := res["details"].(map[string]any)["changed_fields"].([]any)
	if !isErr || !slices.Contains(changed, any("limits.max_rows")) || !slices.Contains(changed, any("text_fragment_chars")) {
		t.Fatalf("changed continuation: %v", res)
	}
	if na := res["next_action"].(map[string]any); na["kind"] != "adjust_request" || fmt.Sprint(na["field_path"]) != "[continuation]" {
		t.Errorf("next_action = %v", na)
	}
}
