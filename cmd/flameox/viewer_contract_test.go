package main

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/flameox/flameox/contracts"
)

// TestViewerRoutesFollowOpenAPI checks that the viewer's router serves exactly the
// operations of contracts/openapi.json, and reads their templates, methods, query
// parameters and bodies as the document declares them.
func TestViewerRoutesFollowOpenAPI(t *testing.T) {
	ops, err := apiOperations()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	got := map[string]string{}
	for _, op := range ops {
		ids = append(ids, op.id)
		names := slices.Sorted(maps.Keys(op.query))
		var q []string
		for _, n := range names {
			q = append(q, n+":"+op.query[n])
		}
		got[op.id] = op.method + " /" + strings.Join(op.segments, "/") + " ?" + strings.Join(q, ",") + " body=" + map[bool]string{true: "yes", false: "no"}[op.body]
	}
	if d := cmp.Diff(slices.Sorted(maps.Keys(viewerAPIHandlers)), slices.Sorted(slices.Values(ids))); d != "" {
		t.Errorf("handlers and the document's operations differ (-handlers +document):\n%s", d)
	}
	want := map[string]string{
		"listEvidence": "GET /api/evidence ?created_after:string,created_before:string,cursor:string,evidence_kind:string," +
			"input_sha256:string,operation:string,page_size:integer,provider_id:string body=no",
		"getEvidence": "GET /api/evidence/{evidence_id} ? body=no",
		"getArtifact": "GET /api/artifacts/{sha256} ?evidence_id:string body=no",
		"analyze":     "POST /api/analyze/{operation} ? body=yes",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("operations (-want +got):\n%s", d)
	}
	// The query parameters are query_evidence's arguments, as decision 0029 publishes them.
	var in struct{ Properties map[string]any }
	if err := json.Unmarshal(mustRead(t, "tools/query_evidence.input.json"), &in); err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if op.id == "listEvidence" {
			if d := cmp.Diff(slices.Sorted(maps.Keys(in.Properties)), slices.Sorted(maps.Keys(op.query))); d != "" {
				t.Errorf("listEvidence's parameters are not query_evidence's arguments (-tool +document):\n%s", d)
			}
		}
	}
}

// TestViewerRequestRefusals checks the typed refusals of the router itself: what the
// document does not declare, given twice, or not of the declared type.
func TestViewerRequestRefusals(t *testing.T) {
	fx := newViewerFixture(t)
	for _, c := range []struct {
		name, method, path, contentType, body string
		status                                int
		field                                 string
		accepted                              []string
	}{
		{"unknown query parameter", "GET", "/api/evidence?pagesize=3", "", "", 400, "pagesize",
			[]string{"created_after", "created_before", "cursor", "evidence_kind", "input_sha256", "operation", "page_size", "provider_id"}},
		{"parameter given twice", "GET", "/api/evidence?page_size=3&page_size=4", "", "", 400, "page_size", nil},
		{"integer that does not parse", "GET", "/api/evidence?page_size=three", "", "", 400, "page_size", nil},
		{"bad query encoding", "GET", "/api/evidence?page_size=%zz", "", "", 400, "query", nil},
		{"query on an endpoint without parameters", "GET", "/api/evidence/" + fx.evidence[0] + "?full=1", "", "", 400, "full", nil},
		{"enum outside the contract", "GET", "/api/evidence?evidence_kind=other", "", "", 400, "evidence_kind", []string{"analysis", "capture"}},
		{"body not sent as JSON", "POST", "/api/analyze/rank_cpu_hotspots", "text/plain", `{"sources":[]}`, 400, "content-type", []string{"application/json"}},
		{"empty body", "POST", "/api/analyze/rank_cpu_hotspots", "application/json", "", 400, "body", nil},
		{"truncated JSON", "POST", "/api/analyze/rank_cpu_hotspots", "application/json", `{"sources":[`, 400, "body", nil},
		{"body over the bound", "POST", "/api/analyze/rank_cpu_hotspots", "application/json",
			`{"x":"` + strings.Repeat("a", maxViewerRequestBytes) + `"}`, 400, "body", nil},
		{"empty path parameter", "GET", "/api/evidence/", "", "", 404, "path", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := viewerHTTPRequest(t, fx.base, c.method, c.path, nil, c.body)
			req.Header.Del("Content-Type")
			if c.contentType != "" {
				req.Header.Set("Content-Type", c.contentType)
			}
			resp, b := doViewer(t, req)
			if resp.StatusCode != c.status {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, c.status, b)
			}
			env := checkViewerDocument(t, b, "Failure").(map[string]any)
			path, _ := env["field_path"].([]any)
			if len(path) != 1 || path[0] != c.field {
				t.Errorf("field_path %v, want [%s]: %s", path, c.field, b)
			}
			var accepted []string
			for _, a := range asSlice(env["accepted_values"]) {
				accepted = append(accepted, a.(string))
			}
			if c.accepted != nil {
				if d := cmp.Diff(c.accepted, accepted); d != "" {
					t.Errorf("accepted_values (-want +got):\n%s", d)
				}
			}
		})
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := contracts.FS.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func doViewer(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// viewerDocument sends a request that must succeed with a JSON document valid against
// the OpenAPI document's component schema (AnalysisResult: the full 2020-12 schema the
// document keeps beside its open rendering) and returns the document decoded.
func viewerDocument(t *testing.T, base, method, path, body, schema string) (*http.Response, any) {
	t.Helper()
	resp, b := viewerRequest(t, base, method, path, nil, body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%s %s: status %d, Content-Type %q: %s", method, path, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return resp, checkViewerDocument(t, b, schema)
}

// checkViewerDocument validates a response body against a component schema of
// contracts/openapi.json and returns it decoded.
func checkViewerDocument(t *testing.T, b []byte, schema string) any {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	s := openAPISchemas(t)[schema]
	if s == nil {
		t.Fatalf("no schema %s", schema)
	}
	if err := s.Validate(inst); err != nil {
		t.Errorf("the body does not match the OpenAPI document's %s: %v\n%s", schema, err, b)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

var (
	openAPIOnce    sync.Once
	openAPICompile map[string]*jsonschema.Schema
	openAPIErr     error
)

// openAPISchemas compiles the component schemas of contracts/openapi.json, rewritten
// from the OpenAPI 3.0 dialect to JSON Schema 2020-12 (oas30To2020).
func openAPISchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	openAPIOnce.Do(func() {
		raw, err := contracts.FS.ReadFile("openapi.json")
		if err != nil {
			openAPIErr = err
			return
		}
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
		if err != nil {
			openAPIErr = err
			return
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		if openAPIErr = c.AddResource("openapi.json", oas30To2020(doc)); openAPIErr != nil {
			return
		}
		openAPICompile = map[string]*jsonschema.Schema{}
		for _, name := range []string{"QueryResult", "EvidenceProjection", "Failure", "AnalysisResult"} {
			loc := "openapi.json#/components/schemas/" + name
			if name == "AnalysisResult" {
				loc += "/x-flameox-schema"
			}
			if openAPICompile[name], openAPIErr = c.Compile(loc); openAPIErr != nil {
				return
			}
		}
	})
	if openAPIErr != nil {
		t.Fatal(openAPIErr)
	}
	return openAPICompile
}

// oas30To2020 rewrites the OpenAPI 3.0 forms contractgen emits (decision 0029) back to
// JSON Schema 2020-12: nullable as a null arm, and the boolean exclusive bounds as
// numeric ones.
func oas30To2020(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = oas30To2020(e)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = oas30To2020(e)
		}
		for _, b := range []struct{ exclusive, bound string }{{"exclusiveMinimum", "minimum"}, {"exclusiveMaximum", "maximum"}} {
			if ex, ok := out[b.exclusive].(bool); ok {
				delete(out, b.exclusive)
				if ex {
					out[b.exclusive] = out[b.bound]
					delete(out, b.bound)
				}
			}
		}
		if n, ok := out["nullable"].(bool); ok {
			delete(out, "nullable")
			if n {
				return map[string]any{"anyOf": []any{out, map[string]any{"type": "null"}}}
			}
		}
		return out
	}
	return v
}
