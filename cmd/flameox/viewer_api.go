package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/flameox/flameox/contracts"
	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
)

// The viewer API is routed by the operations of contracts/openapi.json, the contract
// generated from CUE (decision 0070): a path template, a method, the query parameters
// with their types, and whether a JSON body is required. The document is read on the
// viewer's first API request, so no other call pays for it; viewerAPIHandlers maps each
// operationId to its handler, and a test checks that both name the same operations.

// apiOperation is one operation of the viewer API's OpenAPI document.
type apiOperation struct {
	id     string
	method string
	// segments is the path template split on "/": a literal, or "{name}" for a path
	// parameter.
	segments []string
	// query maps each query parameter to its JSON Schema type ("integer" is read as
	// one; any other is passed on as text).
	query map[string]string
	body  bool
}

// apiRequest is a request matched to an operation: its path parameters (unescaped),
// query parameters (typed as the document declares them) and JSON object body.
type apiRequest struct {
	path  map[string]string
	query map[string]any
	body  json.RawMessage
}

// viewerAPIHandlers are the handlers of the document's operations, by operationId.
var viewerAPIHandlers = map[string]func(v *viewer, w http.ResponseWriter, r *http.Request, in apiRequest){
	"listEvidence": (*viewer).listEvidence,
	"getEvidence":  (*viewer).getEvidence,
	"getArtifact":  (*viewer).getArtifact,
	"analyze":      (*viewer).analyze,
}

// apiOperations reads the operations of contracts/openapi.json once.
var apiOperations = sync.OnceValues(func() ([]apiOperation, error) {
	raw, err := contracts.FS.ReadFile("openapi.json")
	if err != nil {
		return nil, err
	}
	return parseAPIOperations(raw)
})

// parseAPIOperations reads an OpenAPI document's operations in path order.
func parseAPIOperations(raw []byte) ([]apiOperation, error) {
	type param struct {
		Name   string `json:"name"`
		In     string `json:"in"`
		Schema struct {
			Type string `json:"type"`
		} `json:"schema"`
	}
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string           `json:"operationId"`
			Parameters  []param          `json:"parameters"`
			RequestBody *json.RawMessage `json:"requestBody"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	var ops []apiOperation
	for path, methods := range doc.Paths {
		for method, o := range methods {
			if o.OperationID == "" {
				return nil, fmt.Errorf("%s %s has no operationId", method, path)
			}
			op := apiOperation{id: o.OperationID, method: strings.ToUpper(method),
				segments: strings.Split(strings.TrimPrefix(path, "/"), "/"), query: map[string]string{}, body: o.RequestBody != nil}
			for _, p := range o.Parameters {
				if p.In == "query" {
					op.query[p.Name] = p.Schema.Type
				}
			}
			ops = append(ops, op)
		}
	}
	sort.Slice(ops, func(i, j int) bool {
		return strings.Join(ops[i].segments, "/")+" "+ops[i].method < strings.Join(ops[j].segments, "/")+" "+ops[j].method
	})
	return ops, nil
}

// match reports whether the escaped path segments fit the operation's template, and its
// path parameters unescaped. A parameter is one non-empty segment: an encoded slash is
// part of it, a literal one is another segment.
func (op *apiOperation) match(segments []string) (map[string]string, *failure.Failure, bool) {
	if len(segments) != len(op.segments) {
		return nil, nil, false
	}
	params := map[string]string{}
	var bad *failure.Failure
	for i, t := range op.segments {
		name, isParam := strings.CutPrefix(t, "{")
		if !isParam {
			if segments[i] != t {
				return nil, nil, false
			}
			continue
		}
		if segments[i] == "" {
			return nil, nil, false
		}
		name = strings.TrimSuffix(name, "}")
		v, err := url.PathUnescape(segments[i])
		if err != nil && bad == nil {
			bad = failure.Invalid(failure.Path(name), nil, "path parameter %s is not a valid URL path segment", name)
		}
		params[name] = v
	}
	return params, bad, true
}

// serveAPI routes an /api/ request: a typed 404 for a path no operation has, a typed 405
// naming the allowed methods (HEAD beside GET) for a method it does not take, and a typed
// 400 for parameters or a body outside what the operation declares; then the handler.
func (v *viewer) serveAPI(w http.ResponseWriter, r *http.Request) {
	ops, err := apiOperations()
	if err != nil {
		httpFailure(w, http.StatusInternalServerError, failure.Wrap(err, gen.FailureCodeInternalFailure, "the viewer API's contract could not be read"))
		return
	}
	segments := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	method := r.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	var allowed []string
	for i := range ops {
		op := &ops[i]
		params, bad, ok := op.match(segments)
		if !ok {
			continue
		}
		if op.method != method {
			allowed = append(allowed, op.method)
			if op.method == http.MethodGet {
				allowed = append(allowed, http.MethodHead)
			}
			continue
		}
		if bad != nil {
			httpFailure(w, http.StatusBadRequest, bad)
			return
		}
		in, f := op.request(r)
		if f != nil {
			httpFailure(w, httpStatus(f.Code), f)
			return
		}
		in.path = params
		viewerAPIHandlers[op.id](v, w, r, in)
		return
	}
	if len(allowed) == 0 {
		unknownRoute(w, "there is no viewer endpoint at this path")
		return
	}
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	httpFailure(w, http.StatusMethodNotAllowed, failure.Invalid(failure.Path("method"), allowed,
		"the viewer is read-only: this endpoint accepts %s", strings.Join(allowed, ", ")))
}

// request reads the operation's query parameters and body. A query parameter the
// operation does not declare, one given twice, or an integer that does not parse is
// INVALID_INPUT at its name; the document declares no other non-string query parameter,
// and the values' bounds, patterns and enums are the runtime's to check, as for the same
// tool called over MCP. A body must be a JSON object
// sent as application/json, of at most maxViewerRequestBytes.
func (op *apiOperation) request(r *http.Request) (apiRequest, *failure.Failure) {
	in := apiRequest{query: map[string]any{}}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return in, failure.Invalid(failure.Path("query"), nil, "the query string is not valid URL encoding")
	}
	names := slices.Sorted(maps.Keys(op.query))
	for _, k := range slices.Sorted(maps.Keys(q)) {
		typ, ok := op.query[k]
		if !ok {
			if len(names) == 0 {
				return in, failure.Invalid(failure.Path(k), nil, "this endpoint takes no query parameters")
			}
			return in, failure.Invalid(failure.Path(k), names, "query parameter %s is not one of this endpoint's: %s", k, strings.Join(names, ", "))
		}
		if len(q[k]) != 1 {
			return in, failure.Invalid(failure.Path(k), nil, "query parameter %s is given %d times; give it once", k, len(q[k]))
		}
		s := q[k][0]
		switch typ {
		case "integer":
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return in, failure.Invalid(failure.Path(k), nil, "query parameter %s must be an integer", k)
			}
			in.query[k] = n
		default:
			in.query[k] = s
		}
	}
	if !op.body {
		return in, nil
	}
	if ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || ct != "application/json" {
		return in, failure.Invalid(failure.Path("content-type"), []string{"application/json"}, "the request body must be sent as application/json")
	}
	body, err := io.ReadAll(r.Body)
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		return in, failure.New(gen.FailureCodeLimitExceeded, "the request body exceeds %d bytes", maxViewerRequestBytes).
			Field(failure.Path("body"), nil)
	}
	if err != nil {
		return in, failure.Invalid(failure.Path("body"), nil, "the request body could not be read")
	}
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) == 0 || t[0] != '{' || !json.Valid(body) {
		return in, failure.Invalid(failure.Path("body"), nil, "the request body is not a JSON object")
	}
	in.body = body
	return in, nil
}

// writeAPIJSON writes a success document with its length; net/http sends no body for HEAD.
func writeAPIJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		f := failure.Unencodable(err)
		httpFailure(w, httpStatus(f.Code), f)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// listEvidence is query_evidence over the query parameters (its arguments).
func (v *viewer) listEvidence(w http.ResponseWriter, r *http.Request, in apiRequest) {
	raw, _ := json.Marshal(in.query)
	v.callTool(w, r, "query_evidence", raw)
}

// getEvidence is inspect_evidence's redacted projection.
func (v *viewer) getEvidence(w http.ResponseWriter, r *http.Request, in apiRequest) {
	raw, _ := json.Marshal(map[string]any{"evidence_id": in.path["evidence_id"]})
	v.callTool(w, r, "inspect_evidence", raw)
}

func (v *viewer) callTool(w http.ResponseWriter, r *http.Request, tool string, raw []byte) {
	res, f := v.rt.Call(r.Context(), tool, raw)
	if f != nil {
		httpFailure(w, httpStatus(f.Code), f)
		return
	}
	writeAPIJSON(w, res)
}

// analyze runs an operation over evidence sources (runtime.AnalyzeEvidence), uncached.
func (v *viewer) analyze(w http.ResponseWriter, r *http.Request, in apiRequest) {
	res, f := v.rt.AnalyzeEvidence(r.Context(), in.path["operation"], in.body)
	if f != nil {
		httpFailure(w, httpStatus(f.Code), f)
		return
	}
	writeAPIJSON(w, res)
}
