package main

import (
	"fmt"
	"strings"
)

// The evidence viewer's HTTP contract (contracts/openapi.json, decision 0029). Its
// parameters and the documents it names come from the same CUE definitions as the MCP
// tools: query parameters are the properties of #QueryEvidenceArguments, the digest
// pattern is #Sha256's, and each response document is rendered from its definition.
// The viewer routes its API by this document (cmd/flameox/viewer_api.go, decision 0070),
// and its tests validate every response against the components.

// openAPIDocuments are the response and request documents of the viewer, by component
// name: the CUE definition each renders.
var openAPIDocuments = []string{"QueryResult", "EvidenceProjection", "AnalysisResult", "Failure"}

// openAPIOpenDocuments are published as open objects in the OpenAPI document: the OpenAPI
// 3.0 dialect cannot carry their CUE renderings faithfully (2020-12 unions of
// const-discriminated arms without a discriminator, null in type unions, free-form rows),
// and OpenAPI generators would model them as types that drop fields they do not know. The
// server returns the runtime's exact JSON and the full schema stays in x-flameox-schema
// for readers and validators.
var openAPIOpenDocuments = map[string]bool{"AnalysisResult": true}

// openAPIFile renders contracts/openapi.json.
func (m *model) openAPIFile() ([]byte, error) {
	components := schema{}
	for _, name := range openAPIDocuments {
		s, err := m.defSchema(name)
		if err != nil {
			return nil, fmt.Errorf("openapi #%s: %w", name, err)
		}
		if openAPIOpenDocuments[name] {
			components[name] = schema{
				"type":                 "object",
				"additionalProperties": true,
				"description":          "The JSON of #" + name + " (contracts/tools); its JSON Schema 2020-12 rendering is x-flameox-schema.",
				"x-flameox-schema":     s,
			}
			continue
		}
		components[name] = oas30(s)
	}
	if err := m.unenumFormats(components); err != nil {
		return nil, err
	}
	components["AnalyzeArguments"] = schema{
		"type":                 "object",
		"additionalProperties": true,
		"description":          "The analysis tool's arguments (contracts/tools/<operation>.input.json); every source must be an evidence source.",
	}
	query, err := m.defSchema("QueryEvidenceArguments")
	if err != nil {
		return nil, err
	}
	var params []any
	props := query["properties"].(schema)
	for _, name := range sortedKeys(props) {
		p := oas30(deepCopy(props[name]).(schema))
		desc, _ := p["description"].(string)
		delete(p, "description")
		if p["type"] == nil {
			p["type"] = "string"
		}
		params = append(params, schema{"name": name, "in": "query", "required": false, "description": desc, "schema": p})
	}
	sha, err := m.defSchema("Sha256")
	if err != nil {
		return nil, err
	}
	failure := func(desc string) schema {
		return schema{"description": desc, "content": schema{"application/json": schema{"schema": ref("Failure")}}}
	}
	jsonOK := func(desc, name string) schema {
		return schema{"description": desc, "content": schema{"application/json": schema{"schema": ref(name)}}}
	}
	noStore := schema{"Cache-Control": schema{"description": "Always no-store.", "schema": schema{"type": "string"}}}
	ok := func(r schema) schema { r["headers"] = noStore; return r }
	binary := schema{"application/octet-stream": schema{"schema": schema{"type": "string", "format": "binary"}}}
	doc := schema{
		"openapi": "3.0.3",
		"info": schema{
			"title":       "Flameox evidence viewer",
			"version":     "1",
			"description": "Read-only HTTP access to a Flameox evidence store (flameox evidence serve). Every response is Cache-Control: no-store; failures are the Failure envelope with a 4xx or 5xx status.",
		},
		"paths": schema{
			"/api/evidence": schema{"get": schema{
				"operationId": "listEvidence",
				"summary":     "One page of evidence manifests (the query_evidence tool: same filters and cursor).",
				"parameters":  params,
				"responses":   schema{"200": ok(jsonOK("A page of manifests.", "QueryResult")), "default": failure("A typed failure.")},
			}},
			"/api/evidence/{evidence_id}": schema{"get": schema{
				"operationId": "getEvidence",
				"summary":     "The redacted projection of one evidence bundle (the inspect_evidence tool).",
				"parameters": []any{schema{"name": "evidence_id", "in": "path", "required": true,
					"schema": oas30(deepCopy(sha).(schema))}},
				"responses": schema{"200": ok(jsonOK("The projection.", "EvidenceProjection")), "default": failure("A typed failure.")},
			}},
			"/api/artifacts/{sha256}": schema{"get": schema{
				"operationId": "getArtifact",
				"summary":     "A stored artifact's exact bytes by content digest, as a download (ETag is the SHA-256; one byte range per request; gzip is served as stored).",
				"parameters": []any{
					schema{"name": "sha256", "in": "path", "required": true, "schema": schema{"type": "string"},
						"description": "The artifact's SHA-256 (" + fmt.Sprint(sha["pattern"]) + "); anything else is a typed 400."},
					schema{"name": "evidence_id", "in": "query", "required": false, "schema": oas30(deepCopy(sha).(schema)),
						"description": "Evidence declaring the artifact: its recorded format picks the download's file extension (the body is always an application/octet-stream attachment)."},
					schema{"name": "Range", "in": "header", "required": false, "schema": schema{"type": "string"},
						"description": "One range: bytes=first-last, bytes=first- or bytes=-suffix; an invalid or unsatisfiable range is a typed 416."},
					schema{"name": "If-None-Match", "in": "header", "required": false, "schema": schema{"type": "string"}},
				},
				"responses": schema{
					"200":     schema{"description": "The artifact bytes.", "content": binary},
					"206":     schema{"description": "One byte range of the artifact.", "content": binary},
					"304":     schema{"description": "If-None-Match named the artifact's ETag."},
					"default": failure("A typed failure (416 for an unsatisfiable range)."),
				},
			}},
			"/api/analyze/{operation}": schema{"post": schema{
				"operationId": "analyze",
				"summary":     "One page of a read-only analysis over evidence sources; the same envelope as the MCP tool.",
				"parameters": []any{schema{"name": "operation", "in": "path", "required": true,
					"schema": schema{"type": "string", "pattern": "^[a-z][a-z0-9_]{0,63}$"}}},
				"requestBody": schema{"required": true, "content": schema{"application/json": schema{"schema": ref("AnalyzeArguments")}}},
				"responses":   schema{"200": ok(jsonOK("The analysis result envelope.", "AnalysisResult")), "default": failure("A typed failure.")},
			}},
		},
		"components": schema{"schemas": components},
	}
	return marshalSchema(doc), nil
}

func ref(name string) schema { return schema{"$ref": "#/components/schemas/" + name} }

// oas30 rewrites a JSON Schema 2020-12 rendering into the OpenAPI 3.0 dialect:
// a numeric exclusive bound becomes the bound with a boolean flag, and const becomes a
// one-value enum.
func oas30(s schema) schema {
	for _, k := range sortedKeys(s) {
		switch v := s[k].(type) {
		case schema:
			s[k] = oas30(v)
		case []any:
			for i, e := range v {
				if es, ok := e.(schema); ok {
					v[i] = oas30(es)
				}
			}
		}
	}
	for _, bound := range []string{"Minimum", "Maximum"} {
		k := "exclusive" + bound
		if n, ok := s[k]; ok {
			if _, isBool := n.(bool); !isBool {
				s[k] = true
				s[map[string]string{"Minimum": "minimum", "Maximum": "maximum"}[bound]] = n
			}
		}
	}
	if c, ok := s["const"]; ok {
		delete(s, "const")
		s["enum"] = []any{c}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		arms, ok := s[k].([]any)
		if !ok {
			continue
		}
		// 3.0 has no null type: an arm {type: null} becomes nullable on the others.
		var kept []any
		nullable := false
		for _, a := range arms {
			if as, ok := a.(schema); ok && as["type"] == "null" && len(as) == 1 {
				nullable = true
				continue
			}
			kept = append(kept, a)
		}
		if !nullable {
			continue
		}
		if len(kept) == 1 {
			delete(s, k)
			for ak, av := range kept[0].(schema) {
				if _, taken := s[ak]; !taken {
					s[ak] = av
				}
			}
		} else {
			s[k] = kept
		}
		s["nullable"] = true
	}
	// A free-form object ({...} in CUE) renders without properties: an explicit
	// additionalProperties keeps OpenAPI generators from modelling it as an empty struct
	// that drops its content.
	if s["type"] == "object" && s["properties"] == nil && s["additionalProperties"] == nil {
		s["additionalProperties"] = true
	}
	// Object arms told apart by a constant kind are one of them, not any of them.
	if arms, ok := s["anyOf"].([]any); ok && allKinded(arms) {
		delete(s, "anyOf")
		s["oneOf"] = arms
	}
	if e, ok := s["enum"].([]any); ok && s["type"] == nil && len(e) > 0 {
		if _, isString := e[0].(string); isString {
			s["type"] = "string"
		}
	}
	return s
}

// allKinded reports whether every arm is an object whose kind property is one constant.
func allKinded(arms []any) bool {
	for _, a := range arms {
		as, _ := a.(schema)
		props, _ := as["properties"].(schema)
		kind, _ := props["kind"].(schema)
		if e, ok := kind["enum"].([]any); !ok || len(e) != 1 {
			return false
		}
	}
	return len(arms) > 0
}

// unenumFormats replaces every format name in the viewer's documents with a plain string
// (issue 37, item 5): evidence may be of any format, and a format added to
// the catalog then does not change this document.
func (m *model) unenumFormats(n any) error {
	f, err := m.defSchema("Format")
	if err != nil {
		return err
	}
	all := fmt.Sprint(f["pattern"])
	var walk func(any)
	walk = func(n any) {
		switch v := n.(type) {
		case schema:
			for k, c := range v {
				if cs, ok := c.(schema); ok && cs["pattern"] != nil && fmt.Sprint(cs["pattern"]) == all {
					desc, _ := cs["description"].(string)
					v[k] = schema{"type": "string", "description": strings.TrimSpace(desc + " A format name (contracts/catalog.json lists each operation's accepted_formats).")}
					continue
				}
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(n)
	return nil
}
