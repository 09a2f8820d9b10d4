package validate

import "slices"

// deepest picks the most specific leaf error. At a union it drops the arms that fail on the
// kind discriminator when another arm accepted the kind.
func deepest(ve *schemaError) *schemaError {
	if len(ve.causes) == 0 {
		return ve
	}
	causes := ve.causes
	if isUnion(ve) {
		var kept []*schemaError
		for _, c := range causes {
			if !failsOnKind(c) {
				kept = append(kept, c)
			} else if url := onlyMissingKind(c, ve.instance); url != "" {
				// The arm would accept the object with its kind: a source with evidence_id
				// and no kind is an evidence source that omitted kind, not a path source
				// with an unknown field.
				return &schemaError{instance: ve.instance, schemaURL: url, kind: kindMissingKind}
			}
		}
		if len(kept) == 0 {
			// Every arm refused the discriminator: report the discriminator itself.
			return &schemaError{
				instance:  append(slices.Clone(ve.instance), "kind"),
				schemaURL: ve.schemaURL,
				kind:      kindUnionKind,
				names:     unionKinds(causes),
			}
		}
		causes = kept
	}
	best := deepest(causes[0])
	if isUnion(ve) && len(causes) > 1 {
		// When every arm refuses the value itself (an integer-or-decimal-string bound
		// given "01": one arm wants an integer, the other a pattern), no arm's own error
		// is the answer: name every form the union accepts.
		same := true
		for _, c := range causes {
			d := deepest(c)
			same = same && len(d.instance) == len(ve.instance) && refusesValue(d)
		}
		if same {
			return &schemaError{instance: ve.instance, schemaURL: ve.schemaURL, kind: kindValueUnion}
		}
	}
	for _, c := range causes[1:] {
		d := deepest(c)
		// Deeper wins; at one depth an unknown field wins over a missing one, since a
		// misspelt field ("source") is usually why the required one ("sources") is missing.
		if len(d.instance) > len(best.instance) ||
			len(d.instance) == len(best.instance) && isUnknownField(d) && !isUnknownField(best) {
			best = d
		}
	}
	return best
}

// isUnion reports whether ve is the error of an anyOf or a oneOf.
func isUnion(ve *schemaError) bool {
	return ve.kind == kindAnyOf || ve.kind == kindOneOf
}

// refusesValue reports whether ve refuses a value's type or range, not the members of an
// object or array.
func refusesValue(ve *schemaError) bool {
	switch ve.kind {
	case kindType, kindConst, kindEnum, kindPattern, kindMinimum, kindMaximum,
		kindExclusiveMinimum, kindExclusiveMaximum, kindMinLength, kindMaxLength:
		return true
	}
	return false
}

// isUnknownField reports whether ve refuses members that no schema admits.
func isUnknownField(ve *schemaError) bool {
	return ve.kind == kindAdditionalProperties
}

// walk calls f with e and every error beneath it, depth first, causes in order.
func walk(e *schemaError, f func(*schemaError)) {
	f(e)
	for _, c := range e.causes {
		walk(c, f)
	}
}

// onlyMissingKind returns the schema URL of a union arm that refuses the object at loc
// only because kind is missing (no other required field missing, no unknown field there;
// errors below the object may remain), or "".
func onlyMissingKind(arm *schemaError, loc []string) string {
	missing, fits, url := false, true, ""
	walk(arm, func(e *schemaError) {
		if !e.at(loc) {
			return
		}
		switch e.kind {
		case kindRequired:
			for _, m := range e.names {
				if m == "kind" {
					missing, url = true, e.schemaURL
				} else {
					fits = false
				}
			}
		case kindAdditionalProperties:
			fits = false
		}
	})
	if !missing || !fits {
		return ""
	}
	return url
}

// failsOnKind reports whether ve, or an error beneath it, refuses the kind discriminator:
// a wrong kind, or a missing one.
func failsOnKind(ve *schemaError) bool {
	found := false
	walk(ve, func(e *schemaError) {
		switch e.kind {
		case kindConst:
			found = found || len(e.instance) > 0 && e.instance[len(e.instance)-1] == "kind"
		case kindRequired:
			found = found || slices.Contains(e.names, "kind")
		}
	})
	return found
}

// unionKinds lists the string constants that the arms refused a value for.
func unionKinds(arms []*schemaError) []string {
	var out []string
	for _, a := range arms {
		walk(a, func(e *schemaError) {
			if s, ok := e.want.(string); ok && e.kind == kindConst {
				out = append(out, s)
			}
		})
	}
	return out
}
