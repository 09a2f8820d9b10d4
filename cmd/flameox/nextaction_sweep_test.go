package main

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/runtime"
)

// The next-action sweep (issue 33, item 3): "Every call_tool is executable as given ...
// Every next action carries complete arguments; a test executes every next_action the
// corpus and the failure tests produce and checks it does not fail validation." Done
// when "every next action in the test suite executes".
//
// The sweep drives the runtime through the MCP server (the same in-process entry the
// served tools use: newServer over newRuntime with providers/all) and walks each whole
// structuredContent for next_action (at any depth) and next_page. Each call_tool must
// name a catalog tool and carry arguments that pass that tool's input validation (the
// server's own: Tool.Validate); where running it is safe and cheap (analysis tools,
// preview_artifact, inspect_evidence, query_evidence, preserve_evidence in the test's
// store) it runs, and its result must not be INVALID_INPUT, and must be complete unless
// the case says the follow-up was designed to fail again and how. prepare_providers is
// validated, not run (it installs a pinned collector), and its then_retry must name the
// call that asked for it. Every other kind must be complete: preserve_then_analyze's
// preserve_arguments pass preserve_evidence's validation and are followed (preserve,
// inspect, reanalyse the evidence's analysis_sources), an adjust_request's field_path
// names a field of the request or of the tool's input schema, environments are
// non-empty, every message says something. Besides the sweep, every result any MCP test
// of this package gets through its session has its call_tool, preserve_then_analyze and
// next_page arguments validated the same way (session.validateActions).

// sweeper is an MCP session over a runtime whose tools the sweep validates against.
type sweeper struct {
	rt *runtime.Runtime
	s  *session
	// done holds the outcome of each follow-up call already run, by tool and arguments:
	// the corpus produces the same next action from many operations.
	done map[string]map[string]any
	// counts of what the sweep checked, logged at the end.
	validated, executed int
	kinds               map[string]int
}

// newSweeper starts the sweep's runtime and session. inProcess runs every analysis in
// the test process (FLAMEOX_ANALYSIS_IN_PROCESS=1) instead of a worker process for each
// input over 256 KiB: the corpus sweep runs hundreds of analyses.
func newSweeper(t *testing.T, inProcess bool) *sweeper {
	t.Helper()
	store := filepath.Join(t.TempDir(), "store")
	return newSweeperWith(t, inProcess, store, runtime.WithStoreDir(store))
}

func newSweeperWith(t *testing.T, inProcess bool, store string, opts ...runtime.Option) *sweeper {
	t.Helper()
	if inProcess {
		t.Setenv("FLAMEOX_ANALYSIS_IN_PROCESS", "1")
	}
	rt, err := newRuntime(nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	s := serveSession(t, rt, store, "sweep", nil)
	return &sweeper{rt: rt, s: s, done: map[string]map[string]any{}, kinds: map[string]int{}}
}

// call calls tool through MCP, reporting to t. A result that is not complete (a
// failure, a recoverable state, a partial capture: what carries a next_action) must match
// the tool's output schema, which types next_action; complete results' rows are the
// business of the operations' own tests.
func (w *sweeper) call(t *testing.T, tool string, args any) map[string]any {
	t.Helper()
	res, err := w.s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: plain(t, args)})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: structuredContent %s: %v", tool, b, err)
	}
	if outcome(out) == "complete" {
		return out
	}
	inst, _ := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
	for _, sch := range []*jsonschema.Schema{w.s.out[tool], w.s.rich[tool]} {
		if sch == nil {
			continue // UNKNOWN_TOOL: a tool the catalog does not have
		}
		if err := sch.Validate(inst); err != nil {
			t.Errorf("%s result does not match its output schema: %v\n%s", tool, err, b)
		}
	}
	return out
}

// plain is v as JSON decodes it (maps, []any, float64), so paths index it uniformly.
func plain(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// outcome is "complete", or "status/CODE" of a failed or recoverable result.
func outcome(res map[string]any) string {
	st, _ := res["status"].(string)
	if code, _ := res["code"].(string); code != "" {
		return st + "/" + code
	}
	return st
}

// found is one next action or next page in a result.
type found struct {
	at     string // JSON path in the result
	action map[string]any
	page   bool
}

// collect walks v for next_action and next_page objects at any depth, except in the
// blocks of a result, whose rows hold the artifact's own data (a previewed JSON file may
// have a next_page key).
func collect(v any, at string, out *[]found) {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			if k != "blocks" {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if at != "" {
				p = at + "." + k
			}
			if m, ok := v[k].(map[string]any); ok && (k == "next_action" || k == "next_page") {
				*out = append(*out, found{at: p, action: m, page: k == "next_page"})
			}
			collect(v[k], p, out)
		}
	case []any:
		for i, e := range v {
			collect(e, fmt.Sprintf("%s[%d]", at, i), out)
		}
	}
}

// describe is how a case lists the next actions it expects: "next_action call_tool
// preview_artifact", "next_page preview_artifact", "next_action adjust_request".
func describe(f found) string {
	if f.page {
		return "next_page " + str(f.action["tool"])
	}
	d := f.at + " " + str(f.action["kind"])
	if tool := str(f.action["tool"]); tool != "" {
		d += " " + tool
	}
	return d
}

func str(v any) string { s, _ := v.(string); return s }

// executable reports whether the sweep runs a call_tool of tool: analysis tools and the
// evidence tools that only read or write the test's own store. prepare_providers would
// install a collector; a capture would run a workload no next action carries.
func (w *sweeper) executable(tool string) bool {
	t, ok := w.rt.Tool(tool)
	if !ok {
		return false
	}
	switch tool {
	case "inspect_evidence", "query_evidence", "preserve_evidence":
		return true
	}
	return t.Family == "analysis"
}

// check finds every next action and next page in res (the result of tool on args),
// checks each and runs the safe ones; again lists the outcomes a follow-up may have
// besides complete, because the case was designed to fail again. It returns the
// descriptions of what it found.
func (w *sweeper) check(t *testing.T, tool string, args any, res map[string]any, again []string, depth int) []string {
	t.Helper()
	var all []found
	collect(res, "", &all)
	var got []string
	for _, f := range all {
		got = append(got, describe(f))
		if f.page {
			w.checkPage(t, f)
			continue
		}
		kind := str(f.action["kind"])
		w.kinds[kind]++
		if strings.TrimSpace(str(f.action["message"])) == "" {
			t.Errorf("%s of %s: %s has no message: %v", f.at, tool, kind, f.action)
		}
		switch kind {
		case "call_tool":
			w.checkCallTool(t, tool, f, again, depth)
		case "preserve_then_analyze":
			w.checkPreserveThenAnalyze(t, tool, f, again, depth)
		case "adjust_request":
			w.checkAdjust(t, tool, args, res, f)
		case "configure_environment", "restart_reconnect":
			env, _ := f.action["environment"].(map[string]any)
			if len(env) == 0 {
				t.Errorf("%s of %s: %s names no environment: %v", f.at, tool, kind, f.action)
			}
			for k, v := range env {
				if k == "" || str(v) == "" {
					t.Errorf("%s of %s: %s has an empty variable %q=%v", f.at, tool, kind, k, v)
				}
			}
		case "reconnect_mcp":
			if n := str(f.action["necessity"]); n != "required" && n != "conditional" {
				t.Errorf("%s of %s: reconnect_mcp necessity %q", f.at, tool, n)
			}
		case "operator_action", "wait_and_retry":
			// A message is all they carry.
		default:
			t.Errorf("%s of %s: unknown next action kind %q: %v", f.at, tool, kind, f.action)
		}
	}
	return got
}

// validate checks args against tool's input schema as the server does, and reports
// whether they pass.
func (w *sweeper) validate(t *testing.T, at, tool string, args any) bool {
	t.Helper()
	w.validated++
	return validateArguments(t, w.rt, at, tool, args)
}

// validateArguments checks that tool is in rt's catalog and that args pass its input
// validation, the server's own (Tool.Validate), and reports whether they do.
func validateArguments(t *testing.T, rt *runtime.Runtime, at, tool string, args any) bool {
	t.Helper()
	tl, ok := rt.Tool(tool)
	if !ok {
		t.Errorf("%s: %q is not a tool of the catalog %v", at, tool, rt.ToolNames())
		return false
	}
	if _, isMap := args.(map[string]any); !isMap {
		t.Errorf("%s: arguments of %s are %T (%v), not an object", at, tool, args, args)
		return false
	}
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	if _, f := tl.Validate(raw); f != nil {
		t.Errorf("%s: %s %s does not pass the input validation (issue 33: every call_tool is executable as given): %s %s at %v",
			at, tool, raw, f.Code, f.Message, f.FieldPath)
		return false
	}
	return true
}

// validateActions checks every call_tool (its tool and then_retry in the catalog, its
// arguments valid for its tool), preserve_then_analyze and next_page in res, the result
// of one call of any MCP test's session: every next action of the test suite at least
// passes validation (issue 33 item 3). The sweep tests also run them.
func (s *session) validateActions(tool string, res map[string]any) {
	t := s.t
	t.Helper()
	if s.rt == nil {
		return
	}
	var all []found
	collect(res, "", &all)
	for _, f := range all {
		at := fmt.Sprintf("%s of %s", f.at, tool)
		switch {
		case f.page:
			validateArguments(t, s.rt, at, str(f.action["tool"]), f.action["arguments"])
		case f.action["kind"] == "call_tool":
			validateArguments(t, s.rt, at, str(f.action["tool"]), f.action["arguments"])
			if then, ok := f.action["then_retry"]; ok {
				if _, known := s.rt.Tool(str(then)); !known {
					t.Errorf("%s: then_retry %v is not a tool of the catalog", at, then)
				}
			}
		case f.action["kind"] == "preserve_then_analyze":
			validateArguments(t, s.rt, at, "preserve_evidence", f.action["preserve_arguments"])
		}
	}
}

// follow runs tool on args once per distinct call (later ones reuse the outcome), checks
// the next actions of its result, and asserts the outcome is complete or one of again.
func (w *sweeper) follow(t *testing.T, at, tool string, args any, again []string, depth int) map[string]any {
	t.Helper()
	b, _ := json.Marshal(args)
	key := tool + " " + string(b)
	res, ok := w.done[key]
	if !ok {
		w.executed++
		res = w.call(t, tool, args)
		w.done[key] = res
		if depth < 2 {
			w.check(t, tool, args, res, again, depth+1)
		}
	}
	switch o := outcome(res); {
	case res["code"] == string(gen.FailureCodeInvalidInput):
		t.Errorf("%s: %s %s fails validation (issue 33: every call_tool is executable as given): %v", at, tool, b, res["message"])
	case o != "complete" && !slices.Contains(again, o):
		t.Errorf("%s: %s %s = %s (%v); this case expects complete or %v", at, tool, b, o, res["message"], again)
	}
	return res
}

func (w *sweeper) checkCallTool(t *testing.T, from string, f found, again []string, depth int) {
	t.Helper()
	tool := str(f.action["tool"])
	at := fmt.Sprintf("%s of %s", f.at, from)
	args, present := f.action["arguments"]
	if !present {
		t.Errorf("%s: call_tool %s has no arguments", at, tool)
		return
	}
	if !w.validate(t, at, tool, args) {
		return
	}
	then, hasThen := f.action["then_retry"]
	if hasThen {
		if _, ok := w.rt.Tool(str(then)); !ok {
			t.Errorf("%s: then_retry %v is not a tool of the catalog", at, then)
		}
	}
	if tool == "prepare_providers" {
		// Validated only: preparing installs the pinned collector. The call to retry is
		// the one that asked for it.
		if str(then) != from {
			t.Errorf("%s: prepare_providers then_retry = %v, want %s", at, then, from)
		}
		return
	}
	if !w.executable(tool) {
		t.Logf("%s: call_tool %s validated, not run", at, tool)
		return
	}
	res := w.follow(t, at, tool, args, again, depth)
	if !hasThen || outcome(res) != "complete" {
		return
	}
	// inspect_evidence, then_retry: the operation on the evidence's analysis_sources.
	if tool != "inspect_evidence" {
		t.Errorf("%s: then_retry %v after %s, which gives no analysis_sources", at, then, tool)
		return
	}
	w.reanalyze(t, at, str(then), res, again, depth)
}

// reanalyze calls operation on the analysis_sources of an inspect_evidence result.
func (w *sweeper) reanalyze(t *testing.T, at, operation string, view map[string]any, again []string, depth int) {
	t.Helper()
	sources, _ := view["analysis_sources"].([]any)
	if len(sources) == 0 {
		t.Errorf("%s: the evidence has no analysis_sources to call %s on: %v", at, operation, view)
		return
	}
	args := map[string]any{"sources": sources}
	if w.validate(t, at+" (then_retry)", operation, args) {
		w.follow(t, at+" (then_retry)", operation, args, again, depth)
	}
}

func (w *sweeper) checkPreserveThenAnalyze(t *testing.T, from string, f found, again []string, depth int) {
	t.Helper()
	at := fmt.Sprintf("%s of %s", f.at, from)
	args := f.action["preserve_arguments"]
	if !w.validate(t, at, "preserve_evidence", args) {
		return
	}
	// The message names the operation to call on the preserved evidence.
	var operation string
	for _, name := range w.rt.OperationNames() {
		if strings.Contains(str(f.action["message"]), name) && (operation == "" || len(name) > len(operation)) {
			operation = name
		}
	}
	if operation == "" {
		t.Errorf("%s: preserve_then_analyze names no operation to analyse with: %v", at, f.action["message"])
	}
	p := w.follow(t, at, "preserve_evidence", args, nil, depth)
	id := str(p["evidence_id"])
	if id == "" {
		return
	}
	view := w.follow(t, at, "inspect_evidence", map[string]any{"evidence_id": id}, nil, depth)
	if operation != "" && outcome(view) == "complete" {
		w.reanalyze(t, at, operation, view, again, depth)
	}
}

func (w *sweeper) checkAdjust(t *testing.T, from string, args any, res map[string]any, f found) {
	t.Helper()
	path, ok := f.action["field_path"].([]any)
	if !ok {
		if f.action["field_path"] != nil {
			t.Errorf("%s of %s: field_path %v is not a path", f.at, from, f.action["field_path"])
		}
		return
	}
	tl, known := w.rt.Tool(from)
	if !known {
		// UNKNOWN_TOOL: the field to change is the tool's name.
		if res["code"] != string(gen.FailureCodeUnknownTool) || !cmp.Equal(path, []any{"name"}) {
			t.Errorf("%s of unknown tool %s: field_path %v", f.at, from, path)
		}
		return
	}
	var schema map[string]any
	if err := json.Unmarshal(tl.Input(), &schema); err != nil {
		t.Fatal(err)
	}
	if !inValue(args, path) && !(schemaDoc{schema}).has(schema, path) {
		t.Errorf("%s of %s: adjust_request field_path %v names no field of the request or of the input schema", f.at, from, path)
	}
}

func (w *sweeper) checkPage(t *testing.T, f found) {
	t.Helper()
	tool := str(f.action["tool"])
	w.validate(t, f.at+" ("+tool+")", tool, f.action["arguments"])
}

// inValue reports whether path locates a value in v.
func inValue(v any, path []any) bool {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return false
			}
			if v, ok = m[k]; !ok {
				return false
			}
		case float64:
			a, ok := v.([]any)
			if !ok || int(k) < 0 || int(k) >= len(a) {
				return false
			}
			v = a[int(k)]
		default:
			return false
		}
	}
	return true
}

// schemaDoc resolves field paths in a tool's input schema.
type schemaDoc struct{ root map[string]any }

func (d schemaDoc) deref(n map[string]any) map[string]any {
	for i := 0; i < 8; i++ {
		ref, ok := n["$ref"].(string)
		if !ok {
			break
		}
		defs, _ := d.root["$defs"].(map[string]any)
		next, ok := defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
		if !ok {
			break
		}
		n = next
	}
	return n
}

// has reports whether the schema node n describes a value at path.
func (d schemaDoc) has(n map[string]any, path []any) bool {
	if len(path) == 0 {
		return true
	}
	n = d.deref(n)
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		branches, _ := n[k].([]any)
		for _, b := range branches {
			if m, ok := b.(map[string]any); ok && d.has(m, path) {
				return true
			}
		}
	}
	switch p := path[0].(type) {
	case string:
		if props, ok := n["properties"].(map[string]any); ok {
			if c, ok := props[p].(map[string]any); ok && d.has(c, path[1:]) {
				return true
			}
		}
		if pp, ok := n["patternProperties"].(map[string]any); ok {
			for pat, c := range pp {
				if re, err := regexp.Compile(pat); err == nil && re.MatchString(p) {
					if m, ok := c.(map[string]any); ok && d.has(m, path[1:]) {
						return true
					}
				}
			}
		}
		if ap, ok := n["additionalProperties"].(map[string]any); ok && d.has(ap, path[1:]) {
			return true
		}
	case float64:
		if pi, ok := n["prefixItems"].([]any); ok && int(p) < len(pi) {
			if m, ok := pi[int(p)].(map[string]any); ok && d.has(m, path[1:]) {
				return true
			}
		}
		if it, ok := n["items"].(map[string]any); ok && d.has(it, path[1:]) {
			return true
		}
	}
	return false
}

// src is a path source, with an optional declared format.
func src(path string, format ...string) map[string]any {
	m := map[string]any{"kind": "path", "path": path}
	if len(format) > 0 {
		m["format"] = format[0]
	}
	return m
}

func srcs(s ...map[string]any) []any {
	out := make([]any, len(s))
	for i := range s {
		out[i] = s[i]
	}
	return out
}

// TestNextActionSweepCorpus calls every analysis tool on every corpus file without a
// declared format, and every next action it answers with must execute (issue 33 item 3:
// "a test executes every next_action the corpus ... produce[s]"). A detected format the
// tool does not read answers call_tool with the tool that reads it and the source as
// given; the sweep runs it, and it completes unless corpusFailsAgain says why not.
func TestNextActionSweepCorpus(t *testing.T) {
	testtool.Short(t, "runs every next action the corpus produces")
	dir := corpusDir(t)
	w := newSweeper(t, true)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The outcomes a follow-up on a corpus file may have besides complete: the tool
	// that reads the detected format cannot read this file either, for the reason given.
	unavailable := "unavailable/" + string(gen.FailureCodeUnavailableCapability)
	corpusFailsAgain := map[string][]string{
		// A Python 2 pstats file: rank_cpu_hotspots refuses it and says to re-profile
		// with Python 3.
		"gprof2dot__cProfile-py2.pstats": {"failed/" + string(gen.FailureCodeDecodeFailure)},
		// Native Nsight Compute reports need ncu, which a test machine may lack.
		"h200__ncu-saxpy.ncu-rep":             {unavailable},
		"h200__ncu-torch-matmul-gelu.ncu-rep": {unavailable},
		// Evented Speedscope profiles are detected as py-spy's container, which
		// rank_cpu_hotspots reads only when sampled: it says so (UNSUPPORTED_FORMAT).
		"speedscope__evented_0.0.1.speedscope.json":               {"failed/" + string(gen.FailureCodeUnsupportedFormat)},
		"speedscope__invalid_out-of-order-events.speedscope.json": {"failed/" + string(gen.FailureCodeUnsupportedFormat)},
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		t.Run(e.Name(), func(t *testing.T) {
			for _, tl := range w.rt.Tools() {
				if tl.Family != "analysis" {
					continue
				}
				// One row a page: the sweep is after next actions and next pages, and
				// small pages keep hundreds of results cheap.
				args := map[string]any{"sources": srcs(src(path)), "page_size": 1}
				switch tl.Name {
				case "compare_benchmarks", "compare_inference", "compare_kernel_validation":
					args["sources"] = srcs(src(path), src(path))
				case "analyze_benchmark_scaling":
					args["input_dimension"] = "n"
				case "inspect_trace_window":
					args["start_ns"], args["end_ns"] = 0, int64(1)<<62
				}
				res := w.call(t, tl.Name, args)
				w.check(t, tl.Name, plain(t, args), res, corpusFailsAgain[e.Name()], 0)
			}
		})
	}
	t.Logf("corpus: %d call_tool and next_page arguments validated, %d follow-ups run, next actions %v", w.validated, w.executed, w.kinds)
}

// sweepFiles writes the small inputs of the failure sweep into dir.
type sweepFiles struct {
	dir, text, gz, chrome, jsonl, missing string
	// large is a text file past the size an analysis runs in process (256 KiB).
	large string
}

func writeSweepFiles(t *testing.T) sweepFiles {
	t.Helper()
	dir := t.TempDir()
	f := sweepFiles{
		dir:     dir,
		text:    filepath.Join(dir, "notes.txt"),
		gz:      filepath.Join(dir, "notes.txt.gz"),
		chrome:  filepath.Join(dir, "trace.json"),
		jsonl:   filepath.Join(dir, "records.jsonl"),
		missing: filepath.Join(dir, "absent.json"),
		large:   filepath.Join(dir, "large.log"),
	}
	var lines strings.Builder
	for i := range 60 {
		fmt.Fprintf(&lines, "line %d of a plain text file\n", i)
	}
	write := func(path, body string) {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(f.text, lines.String())
	write(f.large, strings.Repeat(lines.String(), 300))
	write(f.chrome, `{"traceEvents":[{"name":"main","ph":"X","ts":1,"dur":50,"pid":1,"tid":1},{"name":"work","ph":"X","ts":10,"dur":20,"pid":1,"tid":1}]}`)
	write(f.jsonl, "{\"a\":1}\n{\"a\":2}\n")
	gzf, err := os.Create(f.gz)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(gzf)
	zw.Write([]byte(lines.String()))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	gzf.Close()
	return f
}

// sweepCase is one request of the failure sweep: what it answers and which next actions.
type sweepCase struct {
	name string
	tool string
	args map[string]any
	// want is the result's outcome: complete, partial, or status/CODE.
	want string
	// actions are the next actions and pages found, as describe writes them.
	actions []string
	// again lists the outcomes the followed call_tool may have besides complete: the
	// request was designed so that it fails again (and how).
	again []string
	slow  bool
}

// TestNextActionSweepFailures drives the failure paths that answer with a next action
// (issue 33 item 3: "a test executes every next_action the corpus and the failure tests
// produce") and checks each action as the sweep does.
func TestNextActionSweepFailures(t *testing.T) {
	w := newSweeper(t, false)
	f := writeSweepFiles(t)
	unknownID := strings.Repeat("a", 64)

	// A paged live analysis, and its preservation, for the continuation and evidence cases.
	page1 := w.call(t, "preview_artifact", map[string]any{"sources": srcs(src(f.text)), "page_size": 5})
	if outcome(page1) != "complete" || page1["next_page"] == nil {
		t.Fatalf("paged preview: %v", page1)
	}
	cont := page1["next_page"].(map[string]any)["arguments"].(map[string]any)["continuation"]
	kept := w.call(t, "preserve_evidence", map[string]any{"analysis_id": page1["analysis_id"]})
	evidenceID := str(kept["evidence_id"])
	other := w.call(t, "preview_artifact", map[string]any{"sources": srcs(src(f.jsonl)), "page_size": 1})
	if evidenceID == "" || other["next_page"] == nil {
		t.Fatalf("preserve_evidence: %v; paged jsonl preview: %v", kept, other)
	}
	// A query cursor that a later preservation makes stale.
	w.call(t, "preserve_evidence", map[string]any{"analysis_id": other["analysis_id"]})
	queried := w.call(t, "query_evidence", map[string]any{"page_size": 1})
	if queried["next_page"] == nil {
		t.Fatalf("query_evidence: %v", queried)
	}
	staleCursor := queried["next_page"].(map[string]any)["arguments"]
	third := w.call(t, "preview_artifact", map[string]any{"sources": srcs(src(f.chrome))})
	w.call(t, "preserve_evidence", map[string]any{"analysis_id": third["analysis_id"]})

	direct := map[string]any{"kind": "direct"}
	sh := func(script string) map[string]any {
		return map[string]any{"argv": []string{"sh", "-c", script}, "cwd": f.dir}
	}
	big := "head -c 5000 /dev/zero | tr '\\0' x"
	rescueTo := filepath.Join(t.TempDir(), "rescued")

	tests := []sweepCase{
		// Detected-format mismatches: the tool that reads the detected format, on the
		// source as given.
		{name: "text to summarize_failures", tool: "summarize_failures", args: map[string]any{"sources": srcs(src(f.text))},
			want: "failed/UNSUPPORTED_FORMAT", actions: []string{"next_action call_tool preview_artifact"}},
		{name: "text to rank_cpu_hotspots with paging", tool: "rank_cpu_hotspots",
			args: map[string]any{"sources": srcs(src(f.text)), "page_size": 3, "limits": map[string]any{"max_rows": 3}},
			want: "failed/UNSUPPORTED_FORMAT", actions: []string{"next_action call_tool preview_artifact"}},
		{name: "jsonl to summarize_trace", tool: "summarize_trace", args: map[string]any{"sources": srcs(src(f.jsonl))},
			want: "failed/UNSUPPORTED_FORMAT", actions: []string{"next_action call_tool preview_artifact"}},
		{name: "gzip text to summarize_trace", tool: "summarize_trace", args: map[string]any{"sources": srcs(src(f.gz))},
			want: "failed/UNSUPPORTED_FORMAT", actions: []string{"next_action call_tool preview_artifact"}},
		{name: "text to inspect_trace_window", tool: "inspect_trace_window", args: map[string]any{"sources": srcs(src(f.text)), "start_ns": 0, "end_ns": 10},
			want: "failed/UNSUPPORTED_FORMAT", actions: []string{"next_action call_tool preview_artifact"}},
		{name: "chrome trace to rank_cpu_hotspots", tool: "rank_cpu_hotspots", args: map[string]any{"sources": srcs(src(f.chrome))},
			want: "failed/UNSUPPORTED_FORMAT", actions: []string{"next_action call_tool summarize_trace"}},
		{name: "second source of compare_benchmarks", tool: "compare_benchmarks", args: map[string]any{"sources": srcs(src(f.text), src(f.jsonl))},
			want: "failed/UNSUPPORTED_FORMAT", actions: []string{"next_action call_tool preview_artifact"}},
		{name: "mismatch with producer and digest", tool: "summarize_inference",
			args: map[string]any{"sources": srcs(map[string]any{"kind": "path", "path": f.text, "producer": "someone", "expected_sha256": sweepSHA256(t, f.text)})},
			want: "failed/UNSUPPORTED_FORMAT", actions: []string{"next_action call_tool preview_artifact"}},
		{name: "directory to summarize_trace", tool: "summarize_trace", args: map[string]any{"sources": srcs(src(f.dir))},
			want: "failed/UNSUPPORTED_FORMAT", actions: []string{"next_action adjust_request"}},

		// Wrong declared formats.
		{name: "declared a format the tool does not read", tool: "rank_cpu_hotspots", args: map[string]any{"sources": srcs(src(f.chrome, "chrome-trace"))},
			want: "failed/UNSUPPORTED_FORMAT", actions: []string{"next_action adjust_request"}},
		{name: "declared an unknown format", tool: "preview_artifact", args: map[string]any{"sources": srcs(src(f.text, "bogus"))},
			want: "failed/UNSUPPORTED_FORMAT", actions: []string{"next_action adjust_request"}},
		{name: "declared perfetto on a chrome trace", tool: "summarize_trace", args: map[string]any{"sources": srcs(src(f.chrome, "perfetto"))},
			want: "failed/DECODE_FAILURE", actions: []string{"next_action adjust_request"}},
		// Text is no format summarize_trace reads: no declaration to suggest, no action.
		{name: "declared chrome-trace on text", tool: "summarize_trace", args: map[string]any{"sources": srcs(src(f.text, "chrome-trace"))},
			want: "failed/DECODE_FAILURE"},
		{name: "declared memray without its reader", tool: "rank_allocation_hotspots", args: map[string]any{"sources": srcs(src(f.text, "memray"))},
			want: "retryable/UNAVAILABLE_CAPABILITY", actions: []string{"next_action call_tool prepare_providers"}},
		// Over 256 KiB: the analysis worker's failure carries the action back.
		{name: "declared memray on a large file", tool: "rank_retained_memory", args: map[string]any{"sources": srcs(src(f.large, "memray"))},
			want: "retryable/UNAVAILABLE_CAPABILITY", actions: []string{"next_action call_tool prepare_providers"}, slow: true},
		{name: "large text to summarize_trace", tool: "summarize_trace", args: map[string]any{"sources": srcs(src(f.large))},
			want: "failed/UNSUPPORTED_FORMAT", actions: []string{"next_action call_tool preview_artifact"}},

		// Missing and changed files.
		{name: "missing file", tool: "summarize_trace", args: map[string]any{"sources": srcs(src(f.missing))},
			want: "failed/MISSING_OR_CHANGED_INPUT", actions: []string{"next_action adjust_request"}},
		{name: "relative path", tool: "preview_artifact", args: map[string]any{"sources": srcs(src("notes.txt"))},
			want: "failed/INVALID_INPUT", actions: []string{"next_action adjust_request"}},
		{name: "other digest", tool: "preview_artifact", args: map[string]any{"sources": srcs(map[string]any{"kind": "path", "path": f.text, "expected_sha256": unknownID})},
			want: "failed/MISSING_OR_CHANGED_INPUT", actions: []string{"next_action adjust_request"}},

		// Too many and too few sources, and limits.
		{name: "two sources for one", tool: "rank_cpu_hotspots", args: map[string]any{"sources": srcs(src(f.text), src(f.text))},
			want: "failed/INVALID_INPUT", actions: []string{"next_action adjust_request"}},
		{name: "no sources", tool: "preview_artifact", args: map[string]any{"sources": []any{}},
			want: "failed/INVALID_INPUT", actions: []string{"next_action adjust_request"}},
		{name: "one source to compare", tool: "compare_benchmarks", args: map[string]any{"sources": srcs(src(f.text))},
			want: "failed/INVALID_INPUT", actions: []string{"next_action adjust_request"}},
		{name: "more files than max_input_files", tool: "preview_artifact",
			args: map[string]any{"sources": srcs(src(f.text), src(f.jsonl)), "limits": map[string]any{"max_input_files": 1}},
			want: "failed/LIMIT_EXCEEDED", actions: []string{"next_action adjust_request"}},
		{name: "more bytes than max_input_bytes", tool: "preview_artifact",
			args: map[string]any{"sources": srcs(src(f.text)), "limits": map[string]any{"max_input_bytes": 1024}},
			want: "failed/LIMIT_EXCEEDED", actions: []string{"next_action adjust_request"}},

		// Bad arguments.
		{name: "unknown field", tool: "preview_artifact", args: map[string]any{"sources": srcs(src(f.text)), "bogus": 1},
			want: "failed/INVALID_INPUT", actions: []string{"next_action adjust_request"}},
		{name: "page_size 0", tool: "preview_artifact", args: map[string]any{"sources": srcs(src(f.text)), "page_size": 0},
			want: "failed/INVALID_INPUT", actions: []string{"next_action adjust_request"}},
		{name: "page_size disagrees with max_rows", tool: "preview_artifact", args: map[string]any{"sources": srcs(src(f.text)), "page_size": 2, "limits": map[string]any{"max_rows": 3}},
			want: "failed/INVALID_INPUT", actions: []string{"next_action adjust_request"}},
		{name: "window ends before it starts", tool: "inspect_trace_window", args: map[string]any{"sources": srcs(src(f.chrome)), "start_ns": 10, "end_ns": 5},
			want: "failed/INVALID_INPUT", actions: []string{"next_action adjust_request"}},
		{name: "scaling without input_dimension", tool: "analyze_benchmark_scaling", args: map[string]any{"sources": srcs(src(f.text))},
			want: "failed/INVALID_INPUT", actions: []string{"next_action adjust_request"}},
		{name: "query window reversed", tool: "query_evidence", args: map[string]any{"created_after": "2030-01-01T00:00:00Z", "created_before": "2020-01-01T00:00:00Z"},
			want: "failed/INVALID_INPUT", actions: []string{"next_action adjust_request"}},
		{name: "unknown tool", tool: "summarise_trace", args: map[string]any{"sources": srcs(src(f.chrome))},
			want: "failed/UNKNOWN_TOOL", actions: []string{"next_action adjust_request"}},
		{name: "unknown provider id", tool: "prepare_providers", args: map[string]any{"provider_ids": []string{"no-such-provider"}},
			want: "failed/INVALID_INPUT", actions: []string{"next_action adjust_request"}},
		{name: "incompatible capture provider", tool: "capture_and_rank_cpu_hotspots", args: map[string]any{"target": sh("exit 0"), "provider": map[string]any{"kind": "benchmark-samples"}},
			want: "failed/UNSUPPORTED_FORMAT", actions: []string{"next_action adjust_request"}},
		{name: "unknown capture provider", tool: "capture_and_preview_artifact", args: map[string]any{"target": sh("exit 0"), "provider": map[string]any{"kind": "nope"}},
			want: "failed/INVALID_INPUT", actions: []string{"next_action adjust_request"}},
		{name: "relative cwd", tool: "capture_and_preview_artifact", args: map[string]any{"target": map[string]any{"argv": []string{"true"}, "cwd": "rel"}, "provider": direct},
			want: "failed/INVALID_INPUT", actions: []string{"next_action adjust_request"}},
		{name: "too many experiment blocks", tool: "capture_and_preview_artifact", args: map[string]any{"target": sh("exit 0"), "provider": direct,
			"experiment": map[string]any{"blocks": 100, "seed": 1, "practical_threshold": 0, "cases": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}}},
			want: "failed/LIMIT_EXCEEDED", actions: []string{"next_action adjust_request"}},

		// Bad continuations and cursors.
		{name: "malformed continuation", tool: "preview_artifact", args: map[string]any{"sources": srcs(src(f.text)), "page_size": 5, "continuation": strings.Repeat("A", 24)},
			want: "failed/INVALID_INPUT", actions: []string{"next_action adjust_request"}},
		{name: "continuation of another page size", tool: "preview_artifact", args: map[string]any{"sources": srcs(src(f.text)), "page_size": 6, "continuation": cont},
			want: "failed/INVALID_INPUT", actions: []string{"next_action adjust_request"}},
		{name: "continuation of another source", tool: "preview_artifact", args: map[string]any{"sources": srcs(src(f.jsonl)), "page_size": 5, "continuation": cont},
			want: "failed/INVALID_INPUT", actions: []string{"next_action adjust_request"}},
		{name: "continuation of another request", tool: "preview_artifact", args: map[string]any{"sources": srcs(src(f.text)), "page_size": 5,
			"continuation": other["next_page"].(map[string]any)["arguments"].(map[string]any)["continuation"]},
			want: "failed/INVALID_INPUT", actions: []string{"next_action adjust_request"}},
		{name: "malformed query cursor", tool: "query_evidence", args: map[string]any{"cursor": "not-a-cursor"},
			want: "failed/INVALID_INPUT", actions: []string{"next_action adjust_request"}},
		{name: "stale query cursor", tool: "query_evidence", args: staleCursor.(map[string]any),
			want: "failed/INVALID_INPUT", actions: []string{"next_action adjust_request"}},

		// Unavailable providers.
		{name: "py-spy not prepared", tool: "capture_and_rank_cpu_hotspots", args: map[string]any{"target": sh("exit 0"), "provider": map[string]any{"kind": "py-spy"}},
			want: "retryable/UNAVAILABLE_CAPABILITY", actions: []string{"next_action call_tool prepare_providers"}},
		{name: "nsight systems missing", tool: "capture_and_summarize_trace", args: map[string]any{"target": sh("exit 0"), "provider": map[string]any{"kind": "nsight-systems"}},
			want: "unavailable/UNAVAILABLE_CAPABILITY", actions: []string{"next_action operator_action"}},

		// Evidence lookups of unknown ids.
		{name: "inspect unknown evidence", tool: "inspect_evidence", args: map[string]any{"evidence_id": unknownID},
			want: "failed/MISSING_EVIDENCE", actions: []string{"next_action adjust_request"}},
		{name: "analyse unknown evidence", tool: "preview_artifact", args: map[string]any{"sources": srcs(map[string]any{"kind": "evidence", "evidence_id": unknownID})},
			want: "failed/MISSING_EVIDENCE", actions: []string{"next_action adjust_request"}},
		{name: "preserve unknown analysis", tool: "preserve_evidence", args: map[string]any{"analysis_id": unknownID},
			want: "failed/EXPIRED_SESSION_ANALYSIS", actions: []string{"next_action adjust_request"}},
		{name: "rescue unknown analysis", tool: "rescue_evidence", args: map[string]any{"analysis_id": unknownID, "destination": rescueTo},
			want: "failed/EXPIRED_SESSION_ANALYSIS", actions: []string{"next_action adjust_request"}},
		{name: "malformed evidence id", tool: "inspect_evidence", args: map[string]any{"evidence_id": "xyz"},
			want: "failed/INVALID_INPUT", actions: []string{"next_action adjust_request"}},
		{name: "unknown artifact selector", tool: "preview_artifact",
			args: map[string]any{"sources": srcs(map[string]any{"kind": "evidence", "evidence_id": evidenceID, "artifact_selector": unknownID})},
			want: "failed/MISSING_EVIDENCE", actions: []string{"next_action adjust_request"}},
		{name: "preserved text to rank_cpu_hotspots", tool: "rank_cpu_hotspots", args: map[string]any{"sources": srcs(map[string]any{"kind": "evidence", "evidence_id": evidenceID})},
			want: "failed/UNSUPPORTED_FORMAT", actions: []string{"next_action adjust_request"}},

		// Capture failures (partial results, catalog section 5.3).
		{name: "workload exited 3", tool: "capture_and_preview_artifact", args: map[string]any{"target": sh("echo oops >&2; exit 3"), "provider": direct},
			want: "partial", actions: []string{"next_action call_tool preserve_evidence"}},
		{name: "workload exited 3, preserved", tool: "capture_and_preview_artifact", args: map[string]any{"target": sh("exit 3"), "provider": direct, "preserve": true},
			want: "partial", actions: []string{"next_action call_tool inspect_evidence"}},
		{name: "collector wrote nothing", tool: "capture_and_summarize_benchmarks", args: map[string]any{"target": sh("exit 0"), "provider": map[string]any{"kind": "benchmark-samples"}},
			want: "partial", actions: []string{"next_action call_tool preserve_evidence"}},
		{name: "captured analysis failed", tool: "capture_and_preview_artifact", args: map[string]any{"target": sh(big), "provider": direct, "limits": map[string]any{"max_input_bytes": 1024}},
			want: "partial", actions: []string{"next_action preserve_then_analyze"}},
		{name: "captured analysis failed, preserved", tool: "capture_and_preview_artifact", args: map[string]any{"target": sh(big), "provider": direct, "limits": map[string]any{"max_input_bytes": 1024}, "preserve": true},
			want: "partial", actions: []string{"next_action call_tool inspect_evidence"}},
		{name: "workload timed out", tool: "capture_and_preview_artifact", args: map[string]any{"target": map[string]any{"argv": []string{"sleep", "30"}, "cwd": f.dir,
			"budget": map[string]any{"timeout_seconds": 1}}, "provider": direct},
			want: "partial", actions: []string{"next_action call_tool preserve_evidence"}, slow: true},

		// Preserve and inspect flows: pages over live and preserved analyses.
		{name: "paged preview", tool: "preview_artifact", args: map[string]any{"sources": srcs(src(f.text)), "page_size": 5},
			want: "complete", actions: []string{"next_page preview_artifact"}},
		{name: "preserved paged preview", tool: "preserve_evidence", args: map[string]any{"analysis_id": page1["analysis_id"]},
			want: "complete", actions: []string{"next_page preview_artifact"}},
		{name: "rescued paged preview", tool: "rescue_evidence", args: map[string]any{"analysis_id": page1["analysis_id"], "destination": rescueTo},
			want: "complete", actions: []string{"next_action restart_reconnect", "next_page preview_artifact"}},
		{name: "query by page", tool: "query_evidence", args: map[string]any{"page_size": 1},
			want: "complete", actions: []string{"next_page query_evidence"}},
		{name: "inspect preserved", tool: "inspect_evidence", args: map[string]any{"evidence_id": evidenceID},
			want: "complete"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.slow && testing.Short() {
				t.Skip("a worker process or a capture that waits for its budget to run out: skipped in -short")
			}
			res := w.call(t, tc.tool, tc.args)
			if got := outcome(res); got != tc.want {
				t.Fatalf("outcome = %s, want %s: %v", got, tc.want, res["message"])
			}
			got := w.check(t, tc.tool, plain(t, tc.args), res, tc.again, 0)
			if diff := cmp.Diff(tc.actions, got); diff != "" {
				t.Errorf("next actions (-want +got):\n%s\nresult: %v", diff, res)
			}
			// A page is followed as given too.
			for _, a := range collectPages(res) {
				w.follow(t, "next_page of "+tc.tool, str(a["tool"]), a["arguments"], nil, 0)
			}
		})
	}
	t.Logf("failures: %d call_tool and next_page arguments validated, %d follow-ups run, next actions %v", w.validated, w.executed, w.kinds)
}

// sweepSHA256 is the hex SHA-256 of the file at path.
func sweepSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// collectPages is the next_page objects of res.
func collectPages(res map[string]any) []map[string]any {
	var all []found
	collect(res, "", &all)
	var out []map[string]any
	for _, f := range all {
		if f.page {
			out = append(out, f.action)
		}
	}
	return out
}

// TestNextActionSweepNoStore: without an evidence store (no FLAMEOX_DATA_DIR, HOME or
// XDG_DATA_HOME), preserving says which variable to configure (issue 33 item 3: every
// next action is complete).
func TestNextActionSweepNoStore(t *testing.T) {
	for _, v := range []string{"FLAMEOX_DATA_DIR", "HOME", "XDG_DATA_HOME"} {
		t.Setenv(v, "")
	}
	w := newSweeperWith(t, false, "")
	f := writeSweepFiles(t)
	live := w.call(t, "preview_artifact", map[string]any{"sources": srcs(src(f.text))})
	if outcome(live) != "complete" {
		t.Fatalf("preview: %v", live)
	}
	for _, tc := range []sweepCase{
		{name: "preserve", tool: "preserve_evidence", args: map[string]any{"analysis_id": live["analysis_id"]},
			want: "failed/REPOSITORY_IO_FAILURE", actions: []string{"next_action configure_environment"}},
		{name: "query", tool: "query_evidence", args: map[string]any{},
			want: "failed/REPOSITORY_IO_FAILURE", actions: []string{"next_action configure_environment"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := w.call(t, tc.tool, tc.args)
			if got := outcome(res); got != tc.want {
				t.Fatalf("outcome = %s, want %s: %v", got, tc.want, res["message"])
			}
			if diff := cmp.Diff(tc.actions, w.check(t, tc.tool, plain(t, tc.args), res, tc.again, 0)); diff != "" {
				t.Errorf("next actions (-want +got):\n%s\nresult: %v", diff, res)
			}
		})
	}
}
