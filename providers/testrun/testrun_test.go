package testrun

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/providerstest"
)

const conftest = `import os, pytest

LOG = os.environ["FIXTURE_LOG"]

def note(what, name):
    with open(LOG, "a") as f:
        f.write("%s %s %s\n" % (what, name, os.environ.get("PYTEST_XDIST_WORKER", "main")))

def fixture(scope, name):
    @pytest.fixture(scope=scope, name=name)
    def f():
        note("setup", name)
        yield name
        note("teardown", name)
    return f

sess = fixture("session", "sess")
mod = fixture("module", "mod")
func = fixture("function", "func")

@pytest.fixture
def broken():
    note("setup", "broken")
    raise RuntimeError("fixture broke")

@pytest.fixture
def bad_teardown():
    note("setup", "bad_teardown")
    yield 4
    note("teardown", "bad_teardown")
    raise RuntimeError("teardown broke")
`

const suite = `import os, pytest

def test_pass(func, mod, sess):
    assert func == "func"

def test_fail(mod):
    assert mod == 0

def test_error(broken):
    pass

def test_teardown_error(bad_teardown):
    pass

@pytest.mark.skip(reason="no")
def test_skip():
    pass

@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False

@pytest.mark.xfail(reason="unknown")
def test_xpass():
    pass

@pytest.mark.xfail(strict=True, reason="strict")
def test_xpass_strict():
    pass

@pytest.mark.parametrize("n", [1, 2])
def test_param(n, func):
    assert n
`

// flaky fails its first attempt and passes its rerun (pytest-rerunfailures).
const flaky = `import os, pytest

@pytest.mark.flaky(reruns=2)
def test_flaky(mod):
    p = os.environ["FLAKY_COUNT"]
    n = int(open(p).read()) if os.path.exists(p) else 0
    open(p, "w").write(str(n + 1))
    assert n >= 1
`

const collectError = `import nosuchmodule_flameox

def test_never():
    pass
`

func requirePytest(t *testing.T, modules ...string) {
	t.Helper()
	testtool.Short(t, "runs pytest")
	for _, m := range append([]string{"pytest"}, modules...) {
		if exec.Command("/usr/bin/python3", "-c", "import "+m).Run() != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("CI runs real pytest suites: install Debian's python3-pytest, python3-pytest-xdist and python3-pytest-rerunfailures (%s is missing)", m)
			}
			t.Skipf("/usr/bin/python3 cannot import %s", m)
		}
	}
}

// runPytest runs pytest with the plugin on files in a fresh directory and returns the
// directory; the stream is pytest.jsonl, pytest's JUnit XML junit.xml.
func runPytest(t *testing.T, files map[string]string, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lib := filepath.Join(dir, "lib")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lib, "flameox_pytest_plugin.py"), pytestPlugin, 0o644); err != nil {
		t.Fatal(err)
	}
	argv := append([]string{"-m", "pytest", "-p", "flameox_pytest_plugin", "-p", "no:cacheprovider",
		"--junitxml=" + filepath.Join(dir, "junit.xml"), "-q"}, args...)
	cmd := exec.Command("/usr/bin/python3", argv...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONPATH="+lib, "FLAMEOX_PYTEST_OUTPUT="+filepath.Join(dir, "pytest.jsonl"),
		"FIXTURE_LOG="+filepath.Join(dir, "fixtures.log"), "FLAKY_COUNT="+filepath.Join(dir, "flaky.count"))
	out, _ := cmd.CombinedOutput()
	if _, err := os.Stat(filepath.Join(dir, "pytest.jsonl")); err != nil {
		t.Fatalf("no stream: %s", out)
	}
	return dir
}

// junit is pytest's own JUnit XML: each test case's outcome.
type junit struct {
	Cases []struct {
		Classname string    `xml:"classname,attr"`
		Name      string    `xml:"name,attr"`
		Failure   *struct{} `xml:"failure"`
		Error     *struct{} `xml:"error"`
		Skipped   *struct{} `xml:"skipped"`
	} `xml:"testsuite>testcase"`
}

// junitOutcomes maps node ids (module.py::name) to failed, errored, skipped or passed.
func junitOutcomes(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var j junit
	if err := xml.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range j.Cases {
		id := c.Classname + ".py::" + c.Name
		if c.Classname == "" { // a collection error names the module
			id = c.Name + ".py"
		}
		switch {
		case c.Failure != nil:
			out[id] = "failed"
		case c.Error != nil:
			out[id] = "errored"
		case c.Skipped != nil:
			out[id] = "skipped"
		default:
			out[id] = "passed"
		}
	}
	return out
}

func analyze(t *testing.T, op func(context.Context, *providers.Request[gen.NoFields]) (*providers.Analysis, error), path string, format gen.Format) (*providers.Analysis, []map[string]any) {
	t.Helper()
	a, err := providerstest.AnalyzeLimits(t, op, nil, gen.EffectiveLimits{MaxInputBytes: 64 << 20}, providerstest.Input(t, path, format))
	if err != nil {
		t.Fatal(err)
	}
	return a, rows(t, a)
}

// rows is every row of a.
func rows(t *testing.T, a *providers.Analysis) []map[string]any {
	t.Helper()
	return providerstest.Maps(t, providerstest.Rows(t, a.Rows, 100))
}

// flameoxOutcomes is Flameox's outcome per test: failed and errored rows by node id;
// the counts of passed and skipped tests.
func flameoxOutcomes(a *providers.Analysis, rs []map[string]any) (problems map[string]string, counts map[string]int64) {
	problems = map[string]string{}
	for _, r := range rs {
		problems[r["nodeid"].(string)] = r["classification"].(string)
	}
	counts = map[string]int64{}
	for _, k := range []string{"passed", "failed", "skipped", "errored", "flaky", "retried", "collected", "executed", "unexecuted"} {
		counts[k] = a.Metrics[k].(int64)
	}
	return problems, counts
}

func collectErrors(j map[string]string) []string {
	var out []string
	for id := range j {
		if !strings.Contains(id, "::") {
			out = append(out, id)
		}
	}
	return out
}

func truthCounts(j map[string]string) map[string]int64 {
	c := map[string]int64{}
	for _, o := range j {
		c[o]++
	}
	return c
}

func problemsOf(j map[string]string) map[string]string {
	p := map[string]string{}
	for id, o := range j {
		if o == "failed" || o == "errored" {
			p[id] = o
		}
	}
	return p
}

func TestSummarizePytestAgainstJUnit(t *testing.T) {
	requirePytest(t, "xdist")
	tests := []struct {
		name  string
		files map[string]string
		args  []string
	}{
		{"serial", map[string]string{"conftest.py": conftest, "test_suite.py": suite}, nil},
		{"xdist", map[string]string{"conftest.py": conftest, "test_suite.py": suite}, []string{"-n", "2"}},
		{"collection error", map[string]string{"conftest.py": conftest, "test_suite.py": suite, "test_broken.py": collectError}, nil},
		{"collection error continued", map[string]string{"conftest.py": conftest, "test_suite.py": suite, "test_broken.py": collectError}, []string{"--continue-on-collection-errors"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := runPytest(t, tc.files, tc.args...)
			truth := junitOutcomes(t, filepath.Join(dir, "junit.xml"))
			a, rs := analyze(t, summarize, filepath.Join(dir, "pytest.jsonl"), gen.FormatPytest)
			problems, counts := flameoxOutcomes(a, rs)
			var unexecuted int64
			for id, c := range problems {
				if c == "unexecuted" {
					delete(problems, id)
					unexecuted++
				}
			}
			// Tests pytest collected but never ran have no JUnit test case.
			if want := counts["collected"] - int64(len(truth)-len(collectErrors(truth))); unexecuted != want || counts["unexecuted"] != want {
				t.Errorf("unexecuted rows %d, metric %d, collected minus JUnit cases %d", unexecuted, counts["unexecuted"], want)
			}
			if diff := cmp.Diff(problemsOf(truth), problems); diff != "" {
				t.Errorf("failed and errored tests (-junit +flameox):\n%s", diff)
			}
			tc := truthCounts(truth)
			for _, k := range []string{"passed", "failed", "skipped", "errored"} {
				if counts[k] != tc[k] {
					t.Errorf("%s: flameox %d, junit %d", k, counts[k], tc[k])
				}
			}
			if counts["flaky"] != 0 || counts["retried"] != 0 {
				t.Errorf("no rerun happened: %v", counts)
			}
		})
	}
}

func TestSummarizePytestCompletion(t *testing.T) {
	requirePytest(t)
	// Collected is pytest's own --collect-only listing.
	killed := `import os, signal

def test_a():
    pass

def test_killed():
    os.kill(os.getpid(), signal.SIGKILL)

def test_b():
    pass
`
	interrupt := `def test_a():
    pass

def test_interrupt():
    raise KeyboardInterrupt

def test_b():
    pass
`
	failfirst := `def test_a():
    pass

def test_fail():
    assert False

def test_b():
    pass
`
	tests := []struct {
		name, body string
		args       []string
		want       map[string]any
		rows       map[string]string
	}{
		{"killed", killed, nil, map[string]any{"completion": "interrupted", "exit_status": (*int64)(nil), "executed": int64(2), "unexecuted": int64(1), "passed": int64(1)},
			map[string]string{"test_mod.py::test_killed": "interrupted", "test_mod.py::test_b": "unexecuted"}},
		{"keyboard interrupt", interrupt, nil, map[string]any{"completion": "interrupted", "executed": int64(2), "unexecuted": int64(1), "passed": int64(1)},
			map[string]string{"test_mod.py::test_interrupt": "interrupted", "test_mod.py::test_b": "unexecuted"}},
		{"deselected", interrupt, []string{"-k", "not test_interrupt"}, map[string]any{"completion": "complete", "executed": int64(2), "unexecuted": int64(0), "passed": int64(2), "exit_status": int64(0)},
			map[string]string{}},
		{"exitfirst", failfirst, []string{"-x"}, map[string]any{"completion": "incomplete", "executed": int64(2), "unexecuted": int64(1), "passed": int64(1), "failed": int64(1), "exit_status": int64(1)},
			map[string]string{"test_mod.py::test_fail": "failed", "test_mod.py::test_b": "unexecuted"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := runPytest(t, map[string]string{"test_mod.py": tc.body}, tc.args...)
			a, rs := analyze(t, summarize, filepath.Join(dir, "pytest.jsonl"), gen.FormatPytest)
			collect := exec.Command("/usr/bin/python3", append([]string{"-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"}, tc.args...)...)
			collect.Dir = dir
			out, _ := collect.Output()
			var ids int64
			for _, l := range strings.Split(string(out), "\n") {
				if strings.Contains(l, "::") {
					ids++
				}
			}
			if got := a.Metrics["collected"].(int64); got != ids {
				t.Errorf("collected %d, pytest --collect-only %d", got, ids)
			}
			for k, v := range tc.want {
				got := a.Metrics[k]
				if k == "exit_status" {
					if want, ok := v.(int64); ok {
						if got.(*int64) == nil || *got.(*int64) != want {
							t.Errorf("exit_status %v, want %d", got, want)
						}
						continue
					}
					if got.(*int64) != nil {
						t.Errorf("exit_status %v, want null", *got.(*int64))
					}
					continue
				}
				if got != v {
					t.Errorf("%s = %v, want %v", k, got, v)
				}
			}
			problems := map[string]string{}
			for _, r := range rs {
				problems[r["nodeid"].(string)] = r["classification"].(string)
			}
			if diff := cmp.Diff(tc.rows, problems); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSummarizePytestFlaky(t *testing.T) {
	requirePytest(t, "pytest_rerunfailures")
	dir := runPytest(t, map[string]string{"conftest.py": conftest, "test_flaky.py": flaky})
	truth := junitOutcomes(t, filepath.Join(dir, "junit.xml"))
	a, rs := analyze(t, summarize, filepath.Join(dir, "pytest.jsonl"), gen.FormatPytest)
	// The fixture wrote the attempt count; JUnit records the final outcome.
	n, _ := os.ReadFile(filepath.Join(dir, "flaky.count"))
	if truth["test_flaky.py::test_flaky"] != "passed" || string(n) != "2" {
		t.Fatalf("the suite did not pass on its rerun: junit %v, attempts %s", truth, n)
	}
	// The first attempt's call failed on `assert n >= 1` with n = 0: pytest's rewritten
	// assertion says so, and the row keeps that attempt's message.
	want := []map[string]any{{"index": 0.0, "nodeid": "test_flaky.py::test_flaky", "classification": "flaky", "failing_phase": nil,
		"phase_outcomes": map[string]any{"setup": "passed", "call": "passed", "teardown": "passed"}, "phase_attempts": 2.0,
		"message": "assert 0 >= 1", "message_phase": "call"}}
	if diff := cmp.Diff(want, rs); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if a.Metrics["flaky"] != int64(1) || a.Metrics["retried"] != int64(1) || a.Metrics["passed"] != int64(1) {
		t.Errorf("metrics %v", a.Metrics)
	}
}

// messages fails in every phase, with short, multi-line, non-ASCII and long messages.
const messages = `import pytest

def test_assert():
    assert 1 == 0, "one is not zero"

def test_setup(broken):
    pass

def test_call_and_teardown(bad_teardown):
    raise ValueError("call broke")

def test_missing_fixture(no_such_fixture):
    pass

def test_long():
    raise ValueError("\u00e9" * 3000 + "end")

def test_multiline():
    raise RuntimeError("first line\nsecond line \u2603")

@pytest.mark.xfail(strict=True, reason="strict")
def test_xpass_strict():
    pass
`

// junitMessage is the first failure or error pytest's JUnit XML records for a node id: its
// phase (call for a failure; setup or teardown for an error, from pytest's "failed on
// <phase> with" frame; collect for a collection error), its message without that frame, and
// the element's text (the report's full text).
type junitMessage struct{ phase, message, text string }

var junitError = regexp.MustCompile(`(?s)^failed on (setup|teardown) with "(.*)"$`)

// junitMessages reads pytest's JUnit XML: the first failure or error of each node id, in
// the file's order (a test that fails its call and its teardown is written twice).
func junitMessages(t *testing.T, path string) map[string]junitMessage {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type element struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	}
	var j struct {
		Cases []struct {
			Classname string   `xml:"classname,attr"`
			Name      string   `xml:"name,attr"`
			Failure   *element `xml:"failure"`
			Error     *element `xml:"error"`
		} `xml:"testsuite>testcase"`
	}
	if err := xml.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	out := map[string]junitMessage{}
	for _, c := range j.Cases {
		id := c.Classname + ".py::" + c.Name
		if c.Classname == "" {
			id = c.Name + ".py"
		}
		if _, seen := out[id]; seen {
			continue
		}
		switch {
		case c.Failure != nil:
			out[id] = junitMessage{"call", c.Failure.Message, c.Failure.Text}
		case c.Error != nil && c.Classname == "":
			out[id] = junitMessage{"collect", c.Error.Message, c.Error.Text}
		case c.Error != nil:
			m := junitError.FindStringSubmatch(c.Error.Message)
			if m == nil {
				t.Fatalf("%s: JUnit error message %q", id, c.Error.Message)
			}
			out[id] = junitMessage{m[1], m[2], c.Error.Text}
		}
	}
	return out
}

// TestPytestMessagesAgainstJUnit compares each failed and errored row's message and phase
// with the failure or error pytest's own JUnit XML writes for the test: the same message
// (pytest's crash message, else the report's text), cut to 1 KiB on a character boundary
// and marked; a collection error's message is a line of its report.
func TestPytestMessagesAgainstJUnit(t *testing.T) {
	requirePytest(t, "xdist")
	files := map[string]string{"conftest.py": conftest, "test_messages.py": messages, "test_broken.py": collectError}
	for _, args := range [][]string{{"--continue-on-collection-errors"}, {"--continue-on-collection-errors", "-n", "2"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			dir := runPytest(t, files, args...)
			truth := junitMessages(t, filepath.Join(dir, "junit.xml"))
			_, rs := analyze(t, summarize, filepath.Join(dir, "pytest.jsonl"), gen.FormatPytest)
			if len(truth) != 8 {
				t.Fatalf("JUnit records %d failing tests, want 8: %v", len(truth), truth)
			}
			seen := 0
			for _, r := range rs {
				id := r["nodeid"].(string)
				want, ok := truth[id]
				if !ok {
					t.Errorf("%s: a %s row pytest's JUnit XML has no failure for", id, r["classification"])
					continue
				}
				seen++
				msg, _ := r["message"].(string)
				if r["message_phase"] != want.phase || r["failing_phase"] != want.phase {
					t.Errorf("%s: message_phase %v, failing_phase %v, JUnit %s", id, r["message_phase"], r["failing_phase"], want.phase)
				}
				if want.phase == "collect" {
					// JUnit's message is "collection failure"; its text is the report.
					if msg == "" || !strings.Contains(want.text, msg) || r["message_truncated"] != nil {
						t.Errorf("%s: message %q is not a line of the report %q", id, msg, want.text)
					}
					continue
				}
				bounded, cut := boundMessage(want.message)
				if msg != bounded {
					t.Errorf("%s: message %q, JUnit %q", id, msg, want.message)
				}
				if (r["message_truncated"] == true) != cut || (!cut && r["message_truncated"] != nil) {
					t.Errorf("%s: message_truncated %v, JUnit message of %d bytes", id, r["message_truncated"], len(want.message))
				}
				if len(msg) > maxMessageBytes || !utf8.ValidString(msg) {
					t.Errorf("%s: message of %d bytes, valid UTF-8 %v", id, len(msg), utf8.ValidString(msg))
				}
			}
			if seen != len(truth) {
				t.Errorf("%d rows for %d JUnit failures", seen, len(truth))
			}
			// The long message is cut; the call-and-teardown test shows its call's message.
			byID := map[string]map[string]any{}
			for _, r := range rs {
				byID[r["nodeid"].(string)] = r
			}
			long := byID["test_messages.py::test_long"]
			if long["message_truncated"] != true || !strings.HasSuffix(long["message"].(string), "...") {
				t.Errorf("long message not marked: %v", long)
			}
			if both := byID["test_messages.py::test_call_and_teardown"]; both["message"] != "ValueError: call broke" || both["classification"] != "failed" {
				t.Errorf("call and teardown: %v", both)
			}
		})
	}
}

func TestBoundMessage(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
		cut  bool
	}{
		{"short", "assert 1 == 0", "assert 1 == 0", false},
		{"exactly the bound", strings.Repeat("a", maxMessageBytes), strings.Repeat("a", maxMessageBytes), false},
		{"one byte over", strings.Repeat("a", maxMessageBytes+1), strings.Repeat("a", maxMessageBytes-3) + "...", true},
		// 1021 bytes of 2-byte runes end mid-rune: the cut steps back to 1020.
		{"two-byte runes", strings.Repeat("é", maxMessageBytes), strings.Repeat("é", (maxMessageBytes-3)/2) + "...", true},
		// "x" then 4-byte runes: 1021 = 1 + 4*255, a boundary.
		{"four-byte runes", "x" + strings.Repeat("😀", 300), "x" + strings.Repeat("😀", 255) + "...", true},
		{"four-byte runes off boundary", "xy" + strings.Repeat("😀", 300), "xy" + strings.Repeat("😀", 254) + "...", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, cut := boundMessage(tc.in)
			if got != tc.want || cut != tc.cut {
				t.Errorf("boundMessage: %d bytes cut=%v, want %d bytes cut=%v", len(got), cut, len(tc.want), tc.cut)
			}
			if len(got) > maxMessageBytes || !utf8.ValidString(got) {
				t.Errorf("%d bytes, valid %v", len(got), utf8.ValidString(got))
			}
		})
	}
}

// TestMessagesFromTheStream: a row takes the message of the first failed phase of the
// last attempt that failed; a failed row without one (an older stream) is a limitation.
func TestMessagesFromTheStream(t *testing.T) {
	phase := func(node, p, outcome string, attempt int, msg string) string {
		m := ""
		if msg != "" {
			m = `,"message":` + strconv.Quote(msg)
		}
		return fmt.Sprintf(`{"event":"test_phase","nodeid":%q,"phase":%q,"outcome":%q,"attempt":%d%s}`+"\n", node, p, outcome, attempt, m)
	}
	stream := `{"event":"test_collected","nodeid":"a"}` + "\n" +
		phase("a", "setup", "passed", 1, "") + phase("a", "call", "failed", 1, "call a") + phase("a", "teardown", "failed", 1, "teardown a") +
		phase("b", "setup", "passed", 1, "") + phase("b", "call", "rerun", 1, "first try") + phase("b", "setup", "passed", 2, "") +
		phase("b", "call", "passed", 2, "") + phase("b", "teardown", "passed", 2, "") +
		phase("c", "setup", "failed", 1, "") + phase("c", "teardown", "passed", 1, "") +
		phase("d", "setup", "passed", 1, "") + phase("d", "call", "failed", 1, strings.Repeat("x", 2000)) + phase("d", "teardown", "passed", 1, "") +
		`{"event":"collection_error","nodeid":"e.py","message":"E   ImportError: no"}` + "\n" +
		`{"event":"run_finished","exitstatus":1}` + "\n"
	a, rs := analyze(t, summarize, writeFile(t, stream), gen.FormatPytest)
	got := map[string][3]any{}
	for _, r := range rs {
		got[r["nodeid"].(string)] = [3]any{r["message"], r["message_phase"], r["message_truncated"]}
	}
	want := map[string][3]any{
		"a":    {"call a", "call", nil},
		"b":    {"first try", "call", nil},
		"c":    {nil, nil, nil},
		"d":    {strings.Repeat("x", maxMessageBytes-3) + "...", "call", true},
		"e.py": {"E   ImportError: no", "collect", nil},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	if !strings.Contains(strings.Join(a.Limitations, "\n"), "1 failed or errored rows carry no message") {
		t.Errorf("limitations %q", a.Limitations)
	}
}

// fixtureLog is what the suite's fixtures wrote: invocations per fixture and the workers
// that ran them.
func fixtureLog(t *testing.T, path string) (setups map[string]int64, workers map[string][]string) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	setups, workers = map[string]int64{}, map[string][]string{}
	seen := map[[2]string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if f[0] != "setup" {
			continue
		}
		setups[f[1]]++
		if !seen[[2]string{f[1], f[2]}] {
			seen[[2]string{f[1], f[2]}] = true
			workers[f[1]] = append(workers[f[1]], f[2])
		}
	}
	for _, w := range workers {
		sort.Strings(w)
	}
	return setups, workers
}

func TestInspectFixturesAgainstFixtureLog(t *testing.T) {
	requirePytest(t, "xdist")
	for _, args := range [][]string{nil, {"-n", "2"}} {
		t.Run(strings.Join(append([]string{"run"}, args...), " "), func(t *testing.T) {
			dir := runPytest(t, map[string]string{"conftest.py": conftest, "test_suite.py": suite}, args...)
			setups, workers := fixtureLog(t, filepath.Join(dir, "fixtures.log"))
			a, rs := analyze(t, inspectFixtures, filepath.Join(dir, "pytest.jsonl"), gen.FormatPytest)
			gotSetups, gotWorkers := map[string]int64{}, map[string][]string{}
			scopes := map[string]string{}
			var aggregates, teardownFailures int
			for i, r := range rs {
				name := r["fixture"].(string)
				if r["row_kind"] == "fixture_aggregate" {
					if aggregates != i {
						t.Errorf("aggregate row %d after invocation rows", i)
					}
					aggregates++
					if i > 0 && r["known_work_ns"].(float64) > rs[i-1]["known_work_ns"].(float64) {
						t.Errorf("aggregates not sorted by known work at %d", i)
					}
					if _, ok := setups[name]; ok {
						gotSetups[name] = int64(r["invocation_count"].(float64))
						scopes[name] = r["scope"].(string)
					}
					continue
				}
				if r["teardown_failure_reported"] == true {
					teardownFailures++
				}
				if _, ok := setups[name]; ok {
					w := r["worker_id"].(string)
					if !contains(gotWorkers[name], w) {
						gotWorkers[name] = append(gotWorkers[name], w)
						sort.Strings(gotWorkers[name])
					}
				}
			}
			if diff := cmp.Diff(setups, gotSetups); diff != "" {
				t.Errorf("invocations per fixture (-fixture log +flameox):\n%s", diff)
			}
			if diff := cmp.Diff(workers, gotWorkers); diff != "" {
				t.Errorf("workers per fixture (-fixture log +flameox):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]string{"sess": "session", "mod": "module", "func": "function", "broken": "function", "bad_teardown": "function"}, scopes); diff != "" {
				t.Errorf("scopes:\n%s", diff)
			}
			if teardownFailures != 1 || a.Metrics["teardown_failure_count"] != int64(1) {
				t.Errorf("teardown failures: rows %d, metric %v", teardownFailures, a.Metrics["teardown_failure_count"])
			}
			if a.Metrics["incomplete_invocation_count"] != int64(0) || a.Metrics["completion"] != "complete" && len(args) == 0 {
				t.Errorf("metrics %v", a.Metrics)
			}
			wantWorkers := 1
			if len(args) > 0 {
				wantWorkers = 2
			}
			if a.Metrics["worker_count"] != wantWorkers {
				t.Errorf("worker_count %v, want %d", a.Metrics["worker_count"], wantWorkers)
			}
		})
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func writeFile(t *testing.T, body string) string {
	p := filepath.Join(t.TempDir(), "stream.jsonl")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMalformedStreams(t *testing.T) {
	long := `{"event":"test_collected","nodeid":"` + strings.Repeat("x", maxLine) + "\"}\n"
	tests := []struct {
		name   string
		format gen.Format
		body   string
		want   any // *providers.DecodeError or *providers.LimitError, nil for success
	}{
		{"invalid line", gen.FormatPytest, "{\"event\":\"run_started\"}\nnot json\n{\"event\":\"run_finished\",\"exitstatus\":0}\n", &providers.DecodeError{}},
		{"phase without nodeid", gen.FormatPytest, "{\"event\":\"test_phase\",\"phase\":\"call\",\"outcome\":\"passed\"}\n", &providers.DecodeError{}},
		{"bad phase", gen.FormatPytest, "{\"event\":\"test_phase\",\"nodeid\":\"a\",\"phase\":\"run\",\"outcome\":\"passed\"}\n", &providers.DecodeError{}},
		{"long line", gen.FormatPytest, long, &providers.LimitError{}},
		{"torn last line", gen.FormatPytest, "{\"event\":\"test_collected\",\"nodeid\":\"a\"}\n{\"event\":\"test_ph", nil},
		{"unknown events", gen.FormatPytest, "{\"event\":\"later\"}\n{\"event\":\"run_finished\",\"exitstatus\":0}\n", nil},
		{"observation extra key", gen.FormatObservations, `{"name":"a","phase":"p","monotonic_ns":1,"values":{},"x":1}` + "\n", &providers.DecodeError{}},
		{"observation missing key", gen.FormatObservations, `{"name":"a","phase":"p","monotonic_ns":1}` + "\n", &providers.DecodeError{}},
		{"observation negative clock", gen.FormatObservations, `{"name":"a","phase":"p","monotonic_ns":-1,"values":{}}` + "\n", &providers.DecodeError{}},
		{"observation values not object", gen.FormatObservations, `{"name":"a","phase":"p","monotonic_ns":1,"values":[1]}` + "\n", &providers.DecodeError{}},
		{"observation torn", gen.FormatObservations, `{"name":"a","phase":"p","monotonic_ns":1,"values":{}}` + "\n" + `{"name":"a","ph`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := summarize(context.Background(), &providers.Request[gen.NoFields]{Inputs: []providers.Input{{Path: writeFile(t, tc.body), Format: tc.format}}})
			switch want := tc.want.(type) {
			case nil:
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
			case *providers.DecodeError:
				if !errors.As(err, &want) {
					t.Fatalf("want DecodeError, got %T %v", err, err)
				}
			case *providers.LimitError:
				if !errors.As(err, &want) {
					t.Fatalf("want LimitError, got %T %v", err, err)
				}
			}
		})
	}
}

func TestTornAndUnknownAreLimitations(t *testing.T) {
	a, _ := analyze(t, summarize, writeFile(t, "{\"event\":\"test_collected\",\"nodeid\":\"a\"}\n{\"event\":\"later\"}\n{\"event\":\"test_ph"), gen.FormatPytest)
	if a.Metrics["completion"] != "interrupted" || a.Metrics["unexecuted"] != int64(1) {
		t.Errorf("metrics %v", a.Metrics)
	}
	joined := strings.Join(a.Limitations, "\n")
	for _, w := range []string{"torn", "unknown kinds", "no run_finished"} {
		if !strings.Contains(joined, w) {
			t.Errorf("limitations lack %q: %s", w, joined)
		}
	}
}

func TestObservationsAgainstPython(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "observations.jsonl")
	// The workload's own record of what it wrote is the truth.
	script := `import json, os, sys, time
rows = []
with open(sys.argv[1], "a") as f:
    for i in range(5):
        o = {"name": "step", "phase": "train" if i < 3 else "eval", "monotonic_ns": time.monotonic_ns(), "values": {"loss": 1.0 / (i + 1), "i": i, "big": 2**60 + i}}
        f.write(json.dumps(o) + "\n")
        rows.append(o)
json.dump(rows, sys.stdout)
`
	out, err := exec.Command(testtool.Require(t, "python3"), "-c", script, path).Output()
	if err != nil {
		t.Fatal(err)
	}
	var truth []map[string]any
	dec := json.NewDecoder(strings.NewReader(string(out)))
	dec.UseNumber()
	if err := dec.Decode(&truth); err != nil {
		t.Fatal(err)
	}
	a, err := summarize(context.Background(), &providers.Request[gen.NoFields]{Inputs: []providers.Input{{Path: path, Format: gen.FormatObservations}}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Rows.Page(context.Background(), 0, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	for _, r := range p.Rows {
		var m map[string]any
		d := json.NewDecoder(strings.NewReader(string(r)))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			t.Fatal(err)
		}
		delete(m, "index")
		got = append(got, m)
	}
	if diff := cmp.Diff(truth, got); diff != "" {
		t.Errorf("observations (-python +flameox):\n%s", diff)
	}
	if a.Metrics["observation_count"] != int64(5) {
		t.Errorf("observation_count %v", a.Metrics["observation_count"])
	}
}

func TestDetectors(t *testing.T) {
	r := providers.NewRegistry()
	Register(r)
	for _, tc := range []struct {
		head string
		want gen.Format
	}{
		{`{"event":"run_started","schema":"flameox.pytest.v1"}` + "\n", gen.FormatPytest},
		{`{"name":"a","phase":"p","monotonic_ns":1,"values":{}}` + "\n", gen.FormatObservations},
	} {
		got := r.Detect("x.jsonl", []byte(tc.head))
		if len(got) == 0 || got[0] != tc.want {
			t.Errorf("%s: %v, want %s first", tc.head, got, tc.want)
		}
	}
}
