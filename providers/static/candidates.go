package static

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// candidates is what one SARIF log yields: the kept rows (sorted), the counts and the
// runs' metadata.
type candidates struct {
	meta *logMeta
	rows []gen.SarifCandidateRow

	results, normalized, excluded, defaultExcluded, invalid, omitted, suppressed int64
	unresolvedBases                                                              int64
	levels                                                                       map[string]int64
	// firstInvalid says where and why the first invalid result was skipped.
	firstInvalid string
}

// readCandidates reads the log in two passes: the runs' metadata (analyzer, rules, URI
// bases, artifacts, invocations), then the results one at a time, each normalized,
// filtered and kept while fewer than maxRows are kept. Memory holds the metadata and the
// kept rows, never the log.
func readCandidates(ctx context.Context, in providers.Input, maxInput int64, o *options, maxRows int) (*candidates, error) {
	if in.Size > maxSarifBytes {
		return nil, &providers.LimitError{Source: in.Index, Limit: maxSarifBytes, Unit: "bytes", Details: map[string]any{"size_bytes": in.Size},
			Message: fmt.Sprintf("source %d is %d bytes; SARIF logs are read up to %d bytes", in.Index, in.Size, maxSarifBytes)}
	}
	bound := int64(maxSarifBytes)
	if maxInput > 0 {
		bound = min(bound, maxInput)
	}
	f, err := providers.OpenBounded(ctx, in, bound)
	if err != nil {
		return nil, err
	}
	meta, err := readMeta(ctx, f, in.Index)
	f.Close()
	if err != nil {
		return nil, err
	}
	c := &candidates{meta: meta, levels: map[string]int64{}}
	f, err = providers.OpenBounded(ctx, in, bound)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	err = readResults(ctx, f, in.Index, func(ri, i int, v jsontext.Value) error {
		if ri >= len(meta.runs) {
			return &providers.InputError{Source: in.Index, Message: fmt.Sprintf("source %d changed while it was read", in.Index)}
		}
		c.results++
		row, reason := normalize(meta.runs[ri], ri, i, v, o.resolver, &c.unresolvedBases)
		if reason != "" {
			c.invalid++
			if c.firstInvalid == "" {
				c.firstInvalid = fmt.Sprintf("run %d result %d: %s", ri, i, reason)
			}
			return nil
		}
		switch o.excluded(row.File) {
		case "default":
			c.defaultExcluded++
			c.excluded++
			return nil
		case "filter":
			c.excluded++
			return nil
		}
		c.normalized++
		c.levels[row.Level]++
		if row.Suppressed {
			c.suppressed++
		}
		if len(c.rows) >= maxRows {
			c.omitted++
			return nil
		}
		c.rows = append(c.rows, row)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(c.rows, compareRows)
	return c, nil
}

// compareRows orders candidates: unsuppressed first, then by level severity, file (none
// last), start line and column (none last), rule and position in the log.
func compareRows(a, b gen.SarifCandidateRow) int {
	if a.Suppressed != b.Suppressed {
		if a.Suppressed {
			return 1
		}
		return -1
	}
	if c := cmp.Compare(levelRank[a.Level], levelRank[b.Level]); c != 0 {
		return c
	}
	if c := nullsLast(a.File, b.File); c != 0 {
		return c
	}
	if c := nullsLast(a.StartLine, b.StartLine); c != 0 {
		return c
	}
	if c := nullsLast(a.StartColumn, b.StartColumn); c != 0 {
		return c
	}
	if c := nullsLast(a.RuleID, b.RuleID); c != 0 {
		return c
	}
	if c := cmp.Compare(a.RunIndex, b.RunIndex); c != 0 {
		return c
	}
	return cmp.Compare(a.ResultIndex, b.ResultIndex)
}

func nullsLast[T cmp.Ordered](a, b *T) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return cmp.Compare(*a, *b)
}

// normalize turns one raw result into a candidate, or says why it is invalid.
func normalize(ru *run, ri, i int, v jsontext.Value, rs resolver, unresolved *int64) (gen.SarifCandidateRow, string) {
	var res sarifResult
	if v.Kind() != '{' {
		return gen.SarifCandidateRow{}, "the result is not an object"
	}
	if err := json.Unmarshal(v, &res); err != nil {
		return gen.SarifCandidateRow{}, "a property has the wrong type"
	}
	row := gen.SarifCandidateRow{RunIndex: int64(ri), ResultIndex: int64(i), Analyzer: ru.name,
		AnalyzerVersion: providers.Nullable(ru.version)}

	// The rule: ruleIndex (or rule.index) into the driver's rules, else the rule id.
	var rl *rule
	idx := res.RuleIndex
	ruleID := res.RuleID
	if res.Rule != nil {
		if res.Rule.ToolComponent == nil && idx == nil {
			idx = res.Rule.Index
		}
		if ruleID == nil {
			ruleID = res.Rule.ID
		}
	}
	extension := res.Rule != nil && res.Rule.ToolComponent != nil
	if extension {
		// The rule belongs to an extension whose rules are not read.
	} else if idx != nil && *idx >= 0 && *idx < int64(len(ru.rules)) {
		rl = &ru.rules[*idx]
	} else if ruleID != nil {
		if k, ok := ru.ruleByID[*ruleID]; ok {
			rl = &ru.rules[k]
		}
	}
	if ruleID == nil && rl != nil && rl.id != "" {
		ruleID = &rl.id
	}
	row.RuleID = ruleID
	if rl != nil {
		row.RuleName = providers.Nullable(rl.name)
	}

	row.Kind = "fail"
	if res.Kind != nil {
		if !kinds[*res.Kind] {
			return row, "its kind is not a SARIF kind"
		}
		row.Kind = *res.Kind
	}
	switch {
	case res.Level != nil:
		if _, ok := levelRank[*res.Level]; !ok {
			return row, "its level is not error, warning, note or none"
		}
		row.Level = *res.Level
	case row.Kind != "fail":
		row.Level = "none"
	case rl != nil && validLevel(rl.level):
		row.Level = rl.level
	default:
		row.Level = "warning"
	}

	// The message: text, else the rule's message string of that id, else markdown.
	m := res.Message
	switch {
	case m == nil:
		return row, "it has no message"
	case m.Text != nil:
		row.Message = formatMessage(*m.Text, m.Arguments)
	case m.ID != nil && rl != nil && rl.messages[*m.ID] != "":
		row.Message = formatMessage(rl.messages[*m.ID], m.Arguments)
	case m.Markdown != nil:
		row.Message = formatMessage(*m.Markdown, m.Arguments)
	default:
		return row, "its message has neither text nor a message string the rule defines"
	}

	if len(res.Locations) > 0 && res.Locations[0].Physical != nil {
		ph := res.Locations[0].Physical
		if a := ph.Artifact; a != nil {
			loc := *a
			if loc.URI == nil && loc.Index != nil {
				if *loc.Index < 0 || *loc.Index >= int64(len(ru.artifacts)) {
					return row, "its artifact index names no artifact of the run"
				}
				loc = ru.artifacts[*loc.Index]
			}
			if loc.URI != nil {
				file, ok := rs.resolve(ru, loc)
				if !ok {
					*unresolved++
				}
				row.File = &file
			}
		}
		if rg := ph.Region; rg != nil {
			for _, n := range []*int64{rg.StartLine, rg.StartColumn, rg.EndLine, rg.EndColumn} {
				if n != nil && *n < 1 {
					return row, "its region has a line or column below 1"
				}
			}
			row.StartLine, row.StartColumn, row.EndLine, row.EndColumn = rg.StartLine, rg.StartColumn, rg.EndLine, rg.EndColumn
			if row.StartLine != nil {
				// SARIF 3.30.5-3.30.7: startColumn defaults to 1, endLine to startLine.
				if row.StartColumn == nil {
					one := int64(1)
					row.StartColumn = &one
				}
				if row.EndLine == nil {
					row.EndLine = row.StartLine
				}
			}
		}
	}

	// Suppressed when a suppression is accepted or has no status (SARIF 3.27.23, 3.35.3).
	for _, s := range res.Suppressions {
		if s.Status == nil || *s.Status == "accepted" {
			row.Suppressed = true
		}
	}
	if res.BaselineState != nil {
		if !baselineStates[*res.BaselineState] {
			return row, "its baselineState is not a SARIF baseline state"
		}
		row.BaselineState = res.BaselineState
	}
	row.Fingerprint = firstValue(res.PartialFingerprints)
	if row.Fingerprint == nil {
		row.Fingerprint = firstValue(res.Fingerprints)
	}
	row.CodeFlowCount = int64(len(res.CodeFlows))
	row.RelatedLocationCount = int64(len(res.RelatedLocations))
	return row, ""
}

// exitStatus summarizes how the runs' analyzers ended: failed when an invocation says
// its execution was not successful, succeeded when every invocation says it was, else
// not_reported; the exit code is the first non-zero one reported, else 0 when one is.
func (c *candidates) exitStatus() (string, *int64) {
	status := "not_reported"
	var code *int64
	for _, ru := range c.meta.runs {
		for _, inv := range ru.invocations {
			if inv.ExitCode != nil && (code == nil || *code == 0) {
				code = inv.ExitCode
			}
			switch {
			case inv.ExecutionSuccessful != nil && !*inv.ExecutionSuccessful:
				status = "failed"
			case inv.ExecutionSuccessful != nil && status == "not_reported":
				status = "succeeded"
			}
		}
	}
	return status, code
}

func (c *candidates) metrics() map[string]any {
	status, code := c.exitStatus()
	type analyzer struct {
		Name        string  `json:"name"`
		Version     *string `json:"version"`
		RunCount    int64   `json:"run_count"`
		ResultCount int64   `json:"result_count"`
	}
	var analyzers []*analyzer
	for _, ru := range c.meta.runs {
		var a *analyzer
		for _, x := range analyzers {
			if x.Name == ru.name && (x.Version == nil) == (ru.version == "") && (x.Version == nil || *x.Version == ru.version) {
				a = x
			}
		}
		if a == nil {
			if len(analyzers) >= maxAnalyzers {
				continue
			}
			a = &analyzer{Name: ru.name, Version: providers.Nullable(ru.version)}
			analyzers = append(analyzers, a)
		}
		a.RunCount++
		a.ResultCount += ru.resultCount
	}
	if analyzers == nil {
		analyzers = []*analyzer{}
	}
	return map[string]any{
		"run_count":              int64(len(c.meta.runs)),
		"result_count":           c.results,
		"normalized_count":       c.normalized,
		"excluded_count":         c.excluded,
		"default_excluded_count": c.defaultExcluded,
		"invalid_count":          c.invalid,
		"omitted_count":          c.omitted,
		"suppressed_count":       c.suppressed,
		"level_counts": map[string]int64{"error": c.levels["error"], "warning": c.levels["warning"],
			"note": c.levels["note"], "none": c.levels["none"]},
		"exit_status": status,
		"exit_code":   code,
		"analyzers":   analyzers,
	}
}

// maxAnalyzers bounds the distinct analyzers the metrics list.
const maxAnalyzers = 64

// maxFailedRuns bounds the runs whose failure is spelled out in the limitations.
const maxFailedRuns = 8

func (c *candidates) limitations() []string {
	var out []string
	failed := 0
	for ri, ru := range c.meta.runs {
		for _, inv := range ru.invocations {
			if inv.ExecutionSuccessful == nil || *inv.ExecutionSuccessful {
				continue
			}
			failed++
			if failed > maxFailedRuns {
				break
			}
			s := fmt.Sprintf("analyzer_failed: run %d (%s) reports an unsuccessful execution", ri, truncate(ru.name, 80))
			if inv.ExitCode != nil {
				s += fmt.Sprintf(" with exit code %d", *inv.ExitCode)
			}
			s += "; its results may be incomplete"
			for _, n := range inv.Notifications {
				if n.Level == "error" && n.Message.Text != "" {
					s += fmt.Sprintf(". Its first error notification: %q", truncate(n.Message.Text, 200))
					break
				}
			}
			out = append(out, s+".")
			break
		}
	}
	if c.invalid > 0 {
		out = append(out, fmt.Sprintf("invalid_results: %d results were malformed and skipped; the first, %s.", c.invalid, c.firstInvalid))
	}
	if c.omitted > 0 {
		out = append(out, fmt.Sprintf("provider_limit: %d normalized results beyond the first %d in log order are counted in omitted_count but not listed; narrow include_paths to see them.", c.omitted, len(c.rows)))
	}
	if c.unresolvedBases > 0 {
		out = append(out, fmt.Sprintf("unresolved_uri_base: %d results name a uriBaseId the log does not define in originalUriBaseIds; their file is relative to that base.", c.unresolvedBases))
	}
	if len(c.meta.runs) == 0 {
		out = append(out, "no_runs: the log holds no runs.")
	} else if c.results == 0 {
		out = append(out, "no_results: the log's runs hold no results.")
	}
	return out
}

func validLevel(l string) bool {
	_, ok := levelRank[l]
	return ok
}
