package testrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"unicode/utf8"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// maxEntries bounds the distinct tests, collection errors and fixture invocations one
// stream may hold.
const maxEntries = 1_000_000

// event is one line of Flameox's pytest event stream; each kind uses some fields.
type event struct {
	Event        string  `json:"event"`
	Nodeid       *string `json:"nodeid"`
	Phase        string  `json:"phase"`
	Outcome      string  `json:"outcome"`
	DurationNS   *int64  `json:"duration_ns"`
	WorkerID     *string `json:"worker_id"`
	Attempt      int64   `json:"attempt"`
	Xfail        bool    `json:"xfail"`
	Exitstatus   *int64  `json:"exitstatus"`
	Fixture      string  `json:"fixture"`
	Scope        string  `json:"scope"`
	InvocationID string  `json:"invocation_id"`
	Message      *string `json:"message"`
}

// testEntry is one test (or collection error) in first-seen order.
type testEntry struct {
	index     int
	nodeid    string
	collected bool
	collect   bool // a collection error, not a test
	attempt   int64
	attempts  int64
	// outcomes of the last attempt's phases.
	outcomes map[string]string
	// failure is the first failed phase of the last attempt that failed (attempt
	// failAttempt), and its message when the stream records one.
	failure     string
	failAttempt int64
	message     *string
}

// invocation is one fixture setup and its teardown.
type invocation struct {
	id, fixture, scope, worker string
	index                      int
	nodeid                     *string
	setup, teardown            *int64
	setupOut, teardownOut      *string
}

// run is what a pytest stream says.
type run struct {
	entries      []*testEntry
	byNode       map[string]*testEntry
	collectErr   map[string]*testEntry
	invocations  []*invocation
	byInvocation map[string]*invocation

	finished      bool
	exitStatus    *int64
	interrupted   bool
	internalError bool
	unknown       map[string]int64
	events        int64
	tornLastLine  bool
}

func (r *run) entry(source int, nodeid string, collect bool) (*testEntry, error) {
	m := r.byNode
	if collect {
		m = r.collectErr
	}
	if e := m[nodeid]; e != nil {
		return e, nil
	}
	if len(r.entries) >= maxEntries {
		return nil, &providers.LimitError{Source: source, Limit: maxEntries, Unit: "tests",
			Message: fmt.Sprintf("the stream names more than %d tests and collection errors", maxEntries)}
	}
	e := &testEntry{index: len(r.entries), nodeid: nodeid, collect: collect}
	r.entries = append(r.entries, e)
	m[nodeid] = e
	return e, nil
}

var phases = []string{"setup", "call", "teardown"}

func validPhase(p string) bool { return p == "setup" || p == "call" || p == "teardown" }

// phaseOrder is a phase's position in a test's run; an unknown phase comes last.
func phaseOrder(p string) int {
	for i, q := range phases {
		if p == q {
			return i
		}
	}
	return len(phases)
}

// readPytest reads one pytest event stream.
func readPytest(ctx context.Context, in providers.Input, maxBytes int64) (*run, error) {
	f, err := providers.OpenBounded(ctx, in, maxBytes)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := &run{byNode: map[string]*testEntry{}, collectErr: map[string]*testEntry{},
		byInvocation: map[string]*invocation{}, unknown: map[string]int64{}}
	lr := newLineReader(f, in.Index, "pytest event")
	for {
		line, idx, err := lr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil || ev.Event == "" {
			if !lr.Terminated() {
				// A run killed mid-write leaves a torn last line.
				r.tornLastLine = true
				break
			}
			return nil, lr.lineError(idx, "not a JSON object with an event name")
		}
		r.events++
		if err := r.apply(in.Index, lr, idx, &ev); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *run) apply(source int, lr *lineReader, idx int, ev *event) error {
	switch ev.Event {
	case "run_started":
	case "test_collected":
		if ev.Nodeid == nil {
			return lr.lineError(idx, "test_collected without nodeid")
		}
		e, err := r.entry(source, *ev.Nodeid, false)
		if err != nil {
			return err
		}
		e.collected = true
	case "test_phase":
		if ev.Nodeid == nil || !validPhase(ev.Phase) || ev.Outcome == "" {
			return lr.lineError(idx, "test_phase needs nodeid, phase (setup, call or teardown) and outcome")
		}
		e, err := r.entry(source, *ev.Nodeid, false)
		if err != nil {
			return err
		}
		attempt := max(ev.Attempt, 1)
		if attempt != e.attempt || e.outcomes == nil {
			e.attempt, e.outcomes = attempt, map[string]string{}
			e.attempts++
		}
		e.outcomes[ev.Phase] = ev.Outcome
		// pytest-rerunfailures reports a failed attempt it runs again as rerun.
		if (ev.Outcome == "failed" || ev.Outcome == "rerun") && (e.failAttempt != attempt || phaseOrder(ev.Phase) < phaseOrder(e.failure)) {
			e.failure, e.failAttempt, e.message = ev.Phase, attempt, ev.Message
		}
	case "collection_error":
		id := ""
		if ev.Nodeid != nil {
			id = *ev.Nodeid
		}
		e, err := r.entry(source, id, true)
		if err != nil {
			return err
		}
		if e.message == nil {
			e.failure, e.message = "collect", ev.Message
		}
	case "fixture_phase":
		if ev.Fixture == "" || ev.InvocationID == "" || (ev.Phase != "setup" && ev.Phase != "teardown") {
			return lr.lineError(idx, "fixture_phase needs fixture, invocation_id and phase (setup or teardown)")
		}
		inv := r.byInvocation[ev.InvocationID]
		if inv == nil {
			if len(r.invocations) >= maxEntries {
				return &providers.LimitError{Source: source, Limit: maxEntries, Unit: "invocations",
					Message: fmt.Sprintf("the stream holds more than %d fixture invocations", maxEntries)}
			}
			inv = &invocation{id: ev.InvocationID, fixture: ev.Fixture, scope: ev.Scope, index: len(r.invocations), nodeid: ev.Nodeid}
			if ev.WorkerID != nil {
				inv.worker = *ev.WorkerID
			}
			r.invocations = append(r.invocations, inv)
			r.byInvocation[inv.id] = inv
		}
		out := ev.Outcome
		d := int64(0)
		if ev.DurationNS != nil && *ev.DurationNS > 0 {
			d = *ev.DurationNS
		}
		if ev.Phase == "setup" {
			inv.setup, inv.setupOut = &d, &out
		} else {
			inv.teardown, inv.teardownOut = &d, &out
		}
	case "run_finished":
		r.finished = true
		r.exitStatus = ev.Exitstatus
	case "interrupted":
		r.interrupted = true
	case "internal_error":
		r.internalError = true
	default:
		if len(r.unknown) < 64 {
			r.unknown[ev.Event]++
		} else {
			r.unknown["(other)"]++
		}
	}
	return nil
}

// classify returns a test's classification, failing phase and final outcome bucket
// (passed, failed, skipped, errored or "" for a test that did not finish).
func (r *run) classify(e *testEntry) (class string, failing *string, bucket string) {
	if e.collect {
		p := "collect"
		return "errored", &p, "errored"
	}
	if e.attempts == 0 {
		return "unexecuted", nil, ""
	}
	for _, p := range phases {
		if e.outcomes[p] == "failed" {
			p := p
			if p == "call" {
				return "failed", &p, "failed"
			}
			return "errored", &p, "errored"
		}
	}
	if _, done := e.outcomes["teardown"]; !done {
		if r.internalError {
			return "internal_error", nil, ""
		}
		return "interrupted", nil, ""
	}
	skipped := e.outcomes["setup"] == "skipped" || e.outcomes["call"] == "skipped"
	switch {
	case skipped:
		bucket = "skipped"
	default:
		bucket = "passed"
	}
	if e.attempts > 1 && bucket == "passed" {
		return "flaky", nil, bucket
	}
	return "", nil, bucket
}

// completion is complete, incomplete, interrupted or failed (decision 0019).
func (r *run) completion(unexecuted, unfinished int64) string {
	switch {
	case r.interrupted || !r.finished:
		return "interrupted"
	case r.internalError || (r.exitStatus != nil && *r.exitStatus >= 2 && *r.exitStatus <= 4):
		return "failed"
	case unexecuted > 0 || unfinished > 0:
		return "incomplete"
	}
	return "complete"
}

func (r *run) limitations() []string {
	var lim []string
	if r.tornLastLine {
		lim = append(lim, "The stream's last line was torn (the run was killed while writing it); it was dropped.")
	}
	if !r.finished {
		lim = append(lim, "The stream has no run_finished event: the run was killed or crashed, so its events stop where it stopped and exit_status is null.")
	}
	if len(r.unknown) > 0 {
		kinds := make([]string, 0, len(r.unknown))
		for k := range r.unknown {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		lim = append(lim, fmt.Sprintf("%d events of unknown kinds were skipped: %v.", sumCounts(r.unknown), kinds))
	}
	return lim
}

func sumCounts(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

func summarizePytest(ctx context.Context, in providers.Input, limits gen.EffectiveLimits) (*providers.Analysis, error) {
	r, err := readPytest(ctx, in, limits.MaxInputBytes)
	if err != nil {
		return nil, err
	}
	var collected, executed, unexecuted, unfinished, passed, failed, skipped, errored, retried, flaky, silent int64
	var rows []gen.PytestFailureRow
	for _, e := range r.entries {
		class, failing, bucket := r.classify(e)
		if !e.collect {
			if e.collected {
				collected++
			}
			if e.attempts > 0 {
				executed++
			} else {
				unexecuted++
			}
			if e.attempts > 1 {
				retried++
			}
		}
		switch bucket {
		case "passed":
			passed++
		case "failed":
			failed++
		case "skipped":
			skipped++
		case "errored":
			errored++
		case "":
			if e.attempts > 0 {
				unfinished++
			}
		}
		if class == "flaky" {
			flaky++
		}
		if class == "" {
			continue
		}
		outcomes := map[string]any{}
		for k, v := range e.outcomes {
			outcomes[k] = v
		}
		row := gen.PytestFailureRow{Index: int64(e.index), Nodeid: e.nodeid, Classification: class,
			FailingPhase: failing, PhaseOutcomes: outcomes, PhaseAttempts: e.attempts}
		if e.message != nil {
			msg, cut := boundMessage(*e.message)
			phase := e.failure
			row.Message, row.MessagePhase = &msg, &phase
			if cut {
				row.MessageTruncated = &cut
			}
		} else if failing != nil {
			silent++
		}
		rows = append(rows, row)
	}
	lim := r.limitations()
	if silent > 0 {
		lim = append(lim, fmt.Sprintf("%d failed or errored rows carry no message: the stream records none for them (it was written before flameox_pytest_plugin recorded messages).", silent))
	}
	m := map[string]any{
		"completion": r.completion(unexecuted, unfinished),
		"collected":  collected, "executed": executed, "unexecuted": unexecuted,
		"passed": passed, "failed": failed, "skipped": skipped, "errored": errored,
		"retried": retried, "flaky": flaky, "exit_status": r.exitStatus,
	}
	return &providers.Analysis{Provider: provider(), Metrics: m, Limitations: lim,
		Rows: providers.ProjectSlice(rows, func(x gen.PytestFailureRow) gen.PytestFailureRow { return x })}, nil
}

// maxMessageBytes bounds a row's message, in bytes of UTF-8.
const maxMessageBytes = 1024

// messageCut marks the end of a message cut to maxMessageBytes.
const messageCut = "..."

// boundMessage returns s cut to at most maxMessageBytes on a character boundary, ending
// with messageCut, and whether it cut.
func boundMessage(s string) (string, bool) {
	if len(s) <= maxMessageBytes {
		return s, false
	}
	cut := maxMessageBytes - len(messageCut)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + messageCut, true
}

// aggregate is one fixture (name and scope) over its invocations.
type aggregate struct {
	fixture, scope    string
	count, incomplete int64
	workers           map[string]bool
	setup, teardown   int64
}

func inspectFixtures(ctx context.Context, req *providers.Request[gen.NoFields]) (*providers.Analysis, error) {
	in := req.Inputs[0]
	r, err := readPytest(ctx, in, req.Limits.MaxInputBytes)
	if err != nil {
		return nil, err
	}
	type key struct{ fixture, scope string }
	aggs := map[key]*aggregate{}
	var list []*aggregate
	workers := map[string]int64{}
	var incomplete, teardownFailures, summed int64
	for _, inv := range r.invocations {
		k := key{inv.fixture, inv.scope}
		a := aggs[k]
		if a == nil {
			a = &aggregate{fixture: inv.fixture, scope: inv.scope, workers: map[string]bool{}}
			aggs[k] = a
			list = append(list, a)
		}
		a.count++
		a.workers[inv.worker] = true
		work := known(inv)
		if inv.setup != nil {
			a.setup += *inv.setup
		}
		if inv.teardown != nil {
			a.teardown += *inv.teardown
		}
		if !complete(inv) {
			a.incomplete++
			incomplete++
		}
		if inv.teardownOut != nil && *inv.teardownOut == "failed" {
			teardownFailures++
		}
		summed += work
		workers[inv.worker] += work
	}
	sort.SliceStable(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if ka, kb := a.setup+a.teardown, b.setup+b.teardown; ka != kb {
			return ka > kb
		}
		if a.fixture != b.fixture {
			return a.fixture < b.fixture
		}
		return a.scope < b.scope
	})
	var maxWorker int64
	for _, w := range workers {
		maxWorker = max(maxWorker, w)
	}
	var unexecuted, unfinished int64
	for _, e := range r.entries {
		if e.collect {
			continue
		}
		if e.attempts == 0 {
			unexecuted++
		} else if _, done := e.outcomes["teardown"]; !done {
			unfinished++
		}
	}
	m := map[string]any{
		"completion":    r.completion(unexecuted, unfinished),
		"fixture_count": len(list), "invocation_count": len(r.invocations), "worker_count": len(workers),
		"incomplete_invocation_count": incomplete, "teardown_failure_count": teardownFailures,
		"summed_fixture_work_ns": summed, "max_worker_fixture_work_ns": maxWorker, "exit_status": r.exitStatus,
	}
	n := len(list) + len(r.invocations)
	return &providers.Analysis{Provider: provider(), Metrics: m, Limitations: r.limitations(),
		Rows: providers.Project(n, func(i int) any {
			if i < len(list) {
				a := list[i]
				return gen.PytestFixtureAggregateRow{RowKind: "fixture_aggregate", Fixture: a.fixture, Scope: a.scope,
					InvocationCount: a.count, WorkerCount: int64(len(a.workers)), SetupWorkNS: a.setup,
					TeardownWorkNS: a.teardown, KnownWorkNS: a.setup + a.teardown, IncompleteInvocationCount: a.incomplete}
			}
			inv := r.invocations[i-len(list)]
			return gen.PytestFixtureInvocationRow{RowKind: "fixture_invocation", InvocationID: inv.id, Index: int64(inv.index),
				Fixture: inv.fixture, Scope: inv.scope, WorkerID: inv.worker, Nodeid: inv.nodeid,
				SetupDurationNS: nullable(inv.setup), TeardownDurationNS: nullable(inv.teardown),
				SetupOutcome: inv.setupOut, TeardownOutcome: inv.teardownOut, KnownWorkNS: known(inv),
				TeardownFailureReported: inv.teardownOut != nil && *inv.teardownOut == "failed", Complete: complete(inv)}
		})}, nil
}

func known(inv *invocation) int64 {
	var n int64
	if inv.setup != nil {
		n += *inv.setup
	}
	if inv.teardown != nil {
		n += *inv.teardown
	}
	return n
}

func complete(inv *invocation) bool { return inv.setup != nil && inv.teardown != nil }

func nullable(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}
