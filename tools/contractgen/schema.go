package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/encoding/jsonschema"
)

// schema is a decoded JSON Schema object.
type schema = map[string]any

// defSchema returns the JSON Schema of definition #name with every $ref inlined, integer
// bounds flattened, descriptions cleaned and scalar defaults injected from CUE.
func (m *model) defSchema(name string) (schema, error) {
	v := m.def(name)
	if err := v.Err(); err != nil {
		return nil, err
	}
	return m.valueSchema(v)
}

func (m *model) valueSchema(v cue.Value) (schema, error) {
	expr, err := jsonschema.Generate(v, nil)
	if err != nil {
		return nil, err
	}
	b, err := v.Context().BuildExpr(expr).MarshalJSON()
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var s schema
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	defs, _ := s["$defs"].(schema)
	delete(s, "$defs")
	delete(s, "$schema")
	m.nameDefinitions(defs)
	out := normalize(inline(s, defs)).(schema)
	m.injectDefaults(v, out)
	return out, nil
}

// nameDefinitions records the rendering of each definition in defs, without descriptions,
// so that a subschema shared under $defs can take the name of the definition it renders.
func (m *model) nameDefinitions(defs schema) {
	if m.defNames == nil {
		m.defNames = map[string]string{}
	}
	for _, name := range sortedKeys(defs) {
		body := normalize(inline(schema{"$ref": "#/$defs/" + name}, defs))
		key := canonical(stripDescriptions(body))
		if _, ok := m.defNames[key]; !ok {
			m.defNames[key] = strings.TrimPrefix(name, "#")
		}
	}
}

// schemaPatches add keywords encoding/jsonschema cannot derive from CUE, by definition.
var schemaPatches = map[string]schema{
	// struct.MaxFields(32) has no JSON Schema rendering; the runtime checks it again after
	// merging experiment-case overrides.
	"Environment": {"maxProperties": 32},
}

// inline replaces every {"$ref": "#/$defs/X", ...} with the definition merged with the
// sibling keywords (a sibling description wins). The contracts are acyclic.
func inline(n any, defs schema) any {
	switch x := n.(type) {
	case schema:
		if ref, ok := x["$ref"].(string); ok {
			name := strings.TrimPrefix(ref, "#/$defs/")
			def, ok := defs[name].(schema)
			if !ok {
				panic("unresolved $ref " + ref)
			}
			merged := schema{}
			for k, v := range inline(deepCopy(def), defs).(schema) {
				merged[k] = v
			}
			for k, v := range schemaPatches[strings.TrimPrefix(name, "#")] {
				merged[k] = v
			}
			siblings := schema{}
			for k, v := range x {
				if k != "$ref" {
					siblings[k] = inline(v, defs)
				}
			}
			return mergeSiblings(merged, siblings)
		}
		out := schema{}
		for k, v := range x {
			out[k] = inline(v, defs)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, v := range x {
			out[i] = inline(v, defs)
		}
		return out
	}
	return n
}

// mergeSiblings merges the keywords beside a $ref into the referenced definition: an
// embedding struct (#RescueResult embeds #PreservationResult) adds its properties and
// requirements to the embedded ones; any other sibling keyword wins.
func mergeSiblings(def, siblings schema) schema {
	for k, v := range siblings {
		switch k {
		case "properties", "patternProperties":
			base, _ := def[k].(schema)
			props := schema{}
			for p, ps := range base {
				props[p] = ps
			}
			for p, ps := range v.(schema) {
				props[p] = ps
			}
			def[k] = props
		case "required":
			req := toStrings(def[k])
			seen := map[string]bool{}
			for _, r := range req {
				seen[r] = true
			}
			for _, r := range toStrings(v) {
				if !seen[r] {
					req = append(req, r)
					seen[r] = true
				}
			}
			sort.Strings(req)
			def[k] = toAny(req)
		default:
			def[k] = v
		}
	}
	return def
}

func deepCopy(n any) any {
	b, _ := json.Marshal(n)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	_ = dec.Decode(&out)
	return out
}

var (
	maxInt64 = new(big.Rat).SetInt64(math.MaxInt64)
	minInt64 = new(big.Rat).SetInt64(math.MinInt64)
)

var defPrefix = regexp.MustCompile(`^#([A-Z][A-Za-z0-9]*)`)

// normalize rewrites encoding/jsonschema output into the published shape: bounded
// integers' allOf[{type:number},{type:integer,...}] become one integer schema, const
// objects become object schemas, a prefixItems that repeats items is dropped, and the '#'
// of definition names leaves descriptions.
func normalize(n any) any {
	switch x := n.(type) {
	case schema:
		for k, v := range x {
			x[k] = normalize(v)
		}
		if all, ok := x["allOf"].([]any); ok && len(all) == 2 {
			a, _ := all[0].(schema)
			b, _ := all[1].(schema)
			if a != nil && b != nil && a["type"] == "number" && len(a) == 1 {
				delete(x, "allOf")
				for k, v := range b {
					x[k] = v
				}
			}
		}
		// CUE renders an open struct with no fields, {...}, as const {}: it means any object.
		if c, ok := x["const"].(schema); ok && len(c) == 0 {
			delete(x, "const")
			x["type"] = "object"
		} else if ok {
			// A closed struct whose fields are all concrete (a provider object with only its
			// kind) renders as a const object; publish it as an object of const properties so
			// validation reports the failing field.
			delete(x, "const")
			props := schema{}
			var required []any
			for k, v := range c {
				props[k] = schema{"const": v}
				required = append(required, k)
			}
			sort.Slice(required, func(i, j int) bool { return required[i].(string) < required[j].(string) })
			x["type"], x["properties"], x["required"], x["additionalProperties"] = "object", props, required, false
		}
		// [#T, ...#T] renders as prefixItems [T] beside items T: the prefix says nothing the
		// items do not, so keep items alone (minItems already holds the bound).
		if pre, ok := x["prefixItems"].([]any); ok {
			items, _ := json.Marshal(x["items"])
			same := true
			for _, p := range pre {
				b, _ := json.Marshal(p)
				same = same && bytes.Equal(b, items)
			}
			if same {
				delete(x, "prefixItems")
			}
		}
		// A union of scalar consts ("cpu" | "cuda") is an enum: one keyword, and a refused
		// value is answered with every accepted one.
		if arms, ok := x["anyOf"].([]any); ok && len(arms) > 1 {
			var values []any
			for _, a := range arms {
				arm, _ := a.(schema)
				c, ok := arm["const"]
				if len(arm) != 1 || !ok {
					values = nil
					break
				}
				switch c.(type) {
				case string, json.Number, bool:
					values = append(values, c)
				}
			}
			if len(values) == len(arms) {
				delete(x, "anyOf")
				x["enum"] = values
			}
		}
		// CUE renders large integer bounds in exponent form, an int64 bound through
		// float64 (9223372036854775807 becomes 9.223372036854776E+18, which is 2^63):
		// write an integer schema's bounds as integers (1E+6 as 1000000), one at or past
		// the int64 range as its end, so the schema admits exactly what it says and a
		// failure quotes the figure in full.
		if x["type"] == "integer" {
			for _, k := range []string{"maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum"} {
				n, ok := x[k].(json.Number)
				if !ok {
					continue
				}
				r, ok := new(big.Rat).SetString(string(n))
				switch {
				case !ok:
				case r.Cmp(maxInt64) >= 0:
					x[k] = json.Number(maxInt64.Num().String())
				case r.Cmp(minInt64) <= 0:
					x[k] = json.Number(minInt64.Num().String())
				case r.IsInt():
					x[k] = json.Number(r.Num().String())
				}
			}
		}
		if d, ok := x["description"].(string); ok {
			x["description"] = defPrefix.ReplaceAllString(d, "$1")
		}
		return x
	case []any:
		for i, v := range x {
			x[i] = normalize(v)
		}
	}
	return n
}

// injectDefaults adds "default" to each property whose CUE field has a scalar default.
func (m *model) injectDefaults(v cue.Value, s schema) {
	props, _ := s["properties"].(schema)
	for name, p := range props {
		ps, ok := p.(schema)
		if !ok {
			continue
		}
		f := v.LookupPath(cue.MakePath(cue.Str(name).Optional()))
		if !f.Exists() {
			continue
		}
		d, ok := f.Default()
		if !ok || !d.IsConcrete() {
			continue
		}
		switch d.Kind() {
		case cue.IntKind, cue.FloatKind, cue.NumberKind, cue.StringKind, cue.BoolKind:
			var val any
			if err := d.Decode(&val); err == nil {
				ps["default"] = val
			}
		}
	}
}

// marshalSchema renders s as indented JSON with sorted keys and a trailing newline.
func marshalSchema(s any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// toolInputSchema composes the input schema of an analysis tool: the shared transport
// fields, the operation's cardinality and accepted formats, and its fields at top level.
func (m *model) toolInputSchema(op operation) (schema, error) {
	s, err := m.defSchema("AnalysisArguments")
	if err != nil {
		return nil, err
	}
	fields, err := m.valueSchema(op.fields)
	if err != nil {
		return nil, fmt.Errorf("%s fields: %w", op.Name, err)
	}
	untitled(s)
	props := s["properties"].(schema)
	sources := props["sources"].(schema)
	sources["minItems"] = op.MinSources
	sources["maxItems"] = op.MaxSources
	items := sources["items"].(schema)
	arms, _ := items["anyOf"].([]any)
	if len(arms) == 0 {
		return nil, fmt.Errorf("sources items are not a union")
	}
	for _, a := range arms {
		arm := a.(schema)
		ap := arm["properties"].(schema)
		if k, _ := ap["kind"].(schema); k["const"] == "path" {
			f := ap["format"].(schema)
			enum := make([]any, len(op.Formats))
			for i, v := range op.Formats {
				enum[i] = v
			}
			ap["format"] = schema{"description": f["description"], "enum": enum}
		}
	}
	required := toStrings(s["required"])
	if fp, ok := fields["properties"].(schema); ok {
		for k, v := range fp {
			if _, dup := props[k]; dup {
				return nil, fmt.Errorf("%s: field %q collides with a transport field", op.Name, k)
			}
			props[k] = v
		}
	}
	required = append(required, toStrings(fields["required"])...)
	s["required"] = toAny(required)
	return m.compactInput(s)
}

// toolOutputSchema is the rich result schema of an analysis tool: the union of the success
// envelope, the recoverable states and the failure envelope, every definition inlined and
// described, rows typed by the operation's row definitions. It uses only keywords common
// to draft-07 and 2020-12 and no $ref.
func (m *model) toolOutputSchema(op operation) (schema, error) {
	s, err := m.defSchema("AnalysisResult")
	if err != nil {
		return nil, err
	}
	p := s["properties"].(schema)
	p["operation"] = schema{"const": op.Name, "description": "Operation (task name) that produced the result."}
	if err := m.typeRows(s, op); err != nil {
		return nil, err
	}
	if err := narrowInputFormats(s, op.Formats); err != nil {
		return nil, fmt.Errorf("%s: %w", op.Name, err)
	}
	return m.outputUnion(op.Name, s)
}

// narrowInputFormats makes the format of a success envelope's inputs the formats the tool
// can report (issue 37, item 5): the operation's own, so adding a format changes only the
// schemas of the operations that read it, not every result schema.
func narrowInputFormats(result schema, formats []string) error {
	inputs, _ := result["properties"].(schema)["inputs"].(schema)
	items, _ := inputs["items"].(schema)
	props, _ := items["properties"].(schema)
	f, _ := props["format"].(schema)
	if f == nil {
		return fmt.Errorf("the success envelope has no inputs[].format to narrow")
	}
	enum := make([]any, 0, len(formats))
	seen := map[string]bool{}
	for _, v := range formats {
		if !seen[v] {
			seen[v] = true
			enum = append(enum, v)
		}
	}
	props["format"] = schema{"description": f["description"], "enum": enum}
	return nil
}

// typeRows makes the table block's rows of a rich success envelope the union of the
// operation's row definitions and any extra ones; an operation without row definitions
// keeps open rows.
func (m *model) typeRows(result schema, op operation, extra ...string) error {
	if len(op.Rows) == 0 {
		return nil
	}
	var rows []any
	for _, name := range append(append([]string{}, op.Rows...), extra...) {
		r, err := m.defSchema(name)
		if err != nil {
			return fmt.Errorf("%s rows #%s: %w", op.Name, name, err)
		}
		r["title"] = name
		rows = append(rows, r)
	}
	items := schema{"anyOf": rows}
	if len(rows) == 1 {
		items = rows[0].(schema)
	}
	blocks, _ := result["properties"].(schema)["blocks"].(schema)
	arms, _ := blocks["items"].(schema)["anyOf"].([]any)
	for _, a := range arms {
		arm, _ := a.(schema)
		props, _ := arm["properties"].(schema)
		if t, _ := props["type"].(schema); t["const"] == "table" {
			rowsSchema, _ := props["rows"].(schema)
			if rowsSchema == nil {
				break
			}
			rowsSchema["items"] = items
			return nil
		}
	}
	return fmt.Errorf("%s: the success envelope has no table block rows to type", op.Name)
}

// outputUnion is the output schema of a tool whose success envelope is result.
func (m *model) outputUnion(tool string, result schema) (schema, error) {
	arms := []any{result}
	for _, name := range []string{"Recoverable", "Failure"} {
		s, err := m.defSchema(name)
		if err != nil {
			return nil, err
		}
		arms = append(arms, s)
	}
	return schema{
		"type":        "object",
		"description": "Result of " + tool + ": a complete result, a recoverable state (retryable or unavailable) or a failure.",
		"anyOf":       arms,
	}, nil
}

func toStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		out = append(out, x.(string))
	}
	return out
}

func toAny(l []string) []any {
	out := make([]any, len(l))
	for i, v := range l {
		out[i] = v
	}
	return out
}
