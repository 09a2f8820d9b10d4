package validate

// acceptsNull reports whether a property schema accepts null itself.
func (s *Schema) acceptsNull(m map[string]any) bool {
	m = s.resolve(m)
	switch t := m["type"].(type) {
	case string:
		if t == "null" {
			return true
		}
	case []any:
		for _, x := range t {
			if x == "null" {
				return true
			}
		}
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		arms, _ := m[key].([]any)
		for _, a := range arms {
			if arm, ok := a.(map[string]any); ok && s.acceptsNull(arm) {
				return true
			}
		}
	}
	return false
}

// dropNulls removes, recursively, the null members of objects whose property schemas do
// not accept null and that are not required: an optional field sent as null is omitted.
func (s *Schema) dropNulls(inst any, sch any) {
	m := s.resolve(asMap(sch))
	if m == nil {
		return
	}
	switch x := inst.(type) {
	case map[string]any:
		for _, key := range []string{"anyOf", "oneOf"} {
			arms, _ := m[key].([]any)
			for _, a := range arms {
				arm := s.resolve(asMap(a))
				props, _ := arm["properties"].(map[string]any)
				k, _ := s.resolve(asMap(props["kind"]))["const"].(string)
				if k != "" && (x["kind"] == k || x["kind"] == nil && impliedArm(arm, x)) {
					s.dropNulls(inst, arm)
				}
			}
		}
		props, _ := m["properties"].(map[string]any)
		required := map[string]bool{}
		if r, ok := m["required"].([]any); ok {
			for _, n := range r {
				if name, ok := n.(string); ok {
					required[name] = true
				}
			}
		}
		for k, v := range x {
			p, ok := props[k]
			if !ok {
				continue
			}
			if v == nil && !required[k] && !s.acceptsNull(asMap(p)) {
				delete(x, k)
				continue
			}
			s.dropNulls(v, p)
		}
	case []any:
		for _, v := range x {
			s.dropNulls(v, m["items"])
		}
	}
}

// impliedArm reports whether arm, a union arm whose kind is not required, is the arm of
// object x that omits kind: x holds every field the arm requires.
func impliedArm(arm, x map[string]any) bool {
	req, _ := arm["required"].([]any)
	if len(req) == 0 {
		return false
	}
	for _, r := range req {
		name, _ := r.(string)
		if name == "kind" {
			return false
		}
		if _, ok := x[name]; !ok {
			return false
		}
	}
	return true
}

// asMap returns v as a JSON object, or nil.
func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
