package memory

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/broker"
	"github.com/flameox/flameox/internal/prepare"
	"github.com/flameox/flameox/providers"
)

//go:embed python/flameox_memray_read.py
var memrayReader []byte

// memrayMagic starts every memray capture: memray's MAGIC, "memray" and its NUL
// (src/memray/_memray/records.cpp), the first field of the header record.
var memrayMagic = []byte("memray\x00")

// memrayPythonVariable names the interpreter that reads memray captures; when unset, the
// memray prepare_providers installed (decision 0053), else python3 on PATH. It is the
// server's setting, never the caller's: an analysis tool runs no executable a request
// names.
const memrayPythonVariable = "FLAMEOX_MEMRAY_PYTHON"

// memrayTool is memray's record (decision 0068): Flameox installs the reader
// (decision 0053); a capture needs memray in the workload's own Python.
var memrayTool = prepare.Tool{ID: gen.PreparableProviderMemray, Class: prepare.Managed, Variable: memrayPythonVariable, Formats: []gen.Format{gen.FormatMemray},
	Note: "Flameox installs memray " + prepare.MemrayVersion + " with python3 -m pip or uv into a virtual environment in its own tools directory and reads memray captures with it (unless " +
		memrayPythonVariable + " names another Python).",
	Workload: "A memray capture runs memray inside the workload: the workload's Python interpreter needs memray>=" + minMemray +
		" (<python> -m pip install 'memray>=" + minMemray + "'); a capture reads its file with that interpreter."}

// Which record set a ranking reads.
const (
	memrayHighWatermark = "high_watermark"
	memrayLeaked        = "leaked"
)

// maxMemrayLine bounds one line the reader prints (a frame's function and file names).
const maxMemrayLine = 1 << 20

// memrayOrigin is where the Python that reads a memray source came from; it decides
// who can resolve its unavailability.
type memrayOrigin int

const (
	// memrayBound: the runtime bound it (in.Reader): the workload's Python a capture of
	// this session recorded, or the memray prepare_providers installed and verified.
	memrayBound memrayOrigin = iota
	// memrayConfigured: the operator's $FLAMEOX_MEMRAY_PYTHON.
	memrayConfigured
	// memrayFound: python3 on PATH, a guess that prepare_providers can replace.
	memrayFound
)

// memrayUnavailable is the unavailable state of memray's reader. Where Flameox chose the
// interpreter itself (python3 on PATH) it is retryable after prepare_providers installs
// the pinned memray; an interpreter the operator or a capture chose is theirs to fix.
func memrayUnavailable(origin memrayOrigin, why string) *providers.UnavailableError {
	e := &providers.UnavailableError{Provider: "memray", Module: "memray",
		Message: "memray captures are read with memray's own reader: " + why,
		Details: map[string]any{"pinned_version": prepare.MemrayVersion}}
	switch origin {
	case memrayFound:
		e.Preparable = true
		e.Remediation = "Call prepare_providers with provider_ids [\"memray\"] (or run `flameox prepare memray`) to install memray " + prepare.MemrayVersion +
			" for Flameox's reader, or start Flameox with " + memrayPythonVariable + " naming the absolute path of a Python that has memray>=" + minMemray + "; then retry the same call."
	case memrayConfigured:
		e.Remediation = "Install memray>=" + minMemray + " in the Python " + memrayPythonVariable + " names (<python> -m pip install 'memray>=" + minMemray +
			"'), or start Flameox without " + memrayPythonVariable + " and call prepare_providers with provider_ids [\"memray\"]; then retry."
	default:
		e.Remediation = "Capture again (a capture is read by the workload's own Python), or run `flameox prepare memray` again if it was the prepared memray that changed; then retry."
	}
	return e
}

// minMemray is the oldest memray whose FileReader the reader script uses (catalog §3.2).
const minMemray = "1.17"

// memrayVersionOK reports whether a memray version string is at least minMemray.
func memrayVersionOK(v string) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	digits := parts[1]
	if i := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		digits = digits[:i] // 17rc1, 17+local
	}
	minor, err2 := strconv.Atoi(digits)
	if err1 != nil || err2 != nil {
		return false
	}
	return major > 1 || major == 1 && minor >= 17
}

// memrayInterpreter chooses the Python that reads memray source in: the one the runtime
// bound (in.Reader: the workload's Python a capture of this session recorded, else the
// memray prepare_providers installed, unless $FLAMEOX_MEMRAY_PYTHON is set), re-hashed;
// else $FLAMEOX_MEMRAY_PYTHON; else python3 on PATH. It is run as named (a virtual
// environment's python is a symlink whose own directory makes the environment) and
// hashed as resolved.
func memrayInterpreter(in providers.Input) (named string, exe *providers.Executable, origin memrayOrigin, err error) {
	if r := in.Reader; r != nil {
		exe, err = providers.Bind(r.Path, func() error {
			return memrayUnavailable(memrayBound, "the interpreter bound to read it (the capture's workload Python, or the prepared memray) is gone")
		})
		if err != nil {
			return "", nil, memrayBound, err
		}
		if exe.SHA256 != r.SHA256 {
			return "", nil, memrayBound, memrayUnavailable(memrayBound, "the interpreter bound to read it (the capture's workload Python, or the prepared memray) changed since it was bound (its SHA-256 differs)")
		}
		return r.Path, exe, memrayBound, nil
	}
	switch {
	case os.Getenv(memrayPythonVariable) != "":
		named, origin = os.Getenv(memrayPythonVariable), memrayConfigured
		if !filepath.IsAbs(named) {
			return "", nil, origin, memrayUnavailable(origin, memrayPythonVariable+" is not an absolute path")
		}
	default:
		origin = memrayFound
		p, lerr := exec.LookPath("python3")
		if lerr != nil {
			return "", nil, origin, memrayUnavailable(origin, "no python3 is on PATH")
		}
		if named, lerr = filepath.Abs(p); lerr != nil {
			return "", nil, origin, memrayUnavailable(origin, "python3 on PATH cannot be located")
		}
	}
	exe, err = providers.Bind(named, func() error {
		return memrayUnavailable(origin, "the interpreter cannot be read")
	})
	if err != nil {
		return "", nil, origin, err
	}
	return named, exe, origin, nil
}

// memrayFrame is one aggregated frame the reader prints.
type memrayFrame struct {
	Frame     *int64 `json:"frame"`
	Function  string `json:"function"`
	File      string `json:"file"`
	Line      int64  `json:"line"`
	Self      int64  `json:"self"`
	Inclusive int64  `json:"inclusive"`
	Count     int64  `json:"count"`
}

type memrayLine struct {
	memrayFrame
	Version *string        `json:"memray_version"`
	Metrics map[string]any `json:"metrics"`
	Error   string         `json:"error"`
}

// rankMemray reads one memray capture with memray's FileReader in the chosen Python,
// bounded by the request's timeout, memory and output limits, and ranks its frames
// (self bytes first when self is set).
func rankMemray(ctx context.Context, in providers.Input, limits gen.EffectiveLimits, which string, self bool) (*providers.Analysis, error) {
	named, exe, origin, err := memrayInterpreter(in)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "flameox-memray-")
	if err != nil {
		return nil, &providers.DecodeError{Source: in.Index, Message: "the memray reader could not start", Err: err}
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "flameox_memray_read.py")
	if err := os.WriteFile(script, memrayReader, 0o600); err != nil {
		return nil, &providers.DecodeError{Source: in.Index, Message: "the memray reader could not start", Err: err}
	}
	out := filepath.Join(dir, "stdout")
	res, err := broker.Run(ctx, broker.Spec{Path: named, Args: []string{named, "-I", script, in.Path, which}, Dir: dir,
		Env: providers.ToolEnv(dir), StdoutFile: out, StderrFile: filepath.Join(dir, "stderr"),
		MaxOutputBytes: limits.MaxOutputBytes, Timeout: time.Duration(limits.TimeoutSeconds * float64(time.Second)),
		MaxRSSBytes: limits.MaxMemoryBytes})
	switch {
	case err != nil:
		return nil, memrayUnavailable(origin, "the interpreter could not be started")
	case res.Cancelled:
		return nil, context.Canceled
	case res.Limit != nil:
		return nil, &providers.LimitError{Source: in.Index, Message: fmt.Sprintf("source %d: the memray reader stopped at its %s", in.Index, res.Limit.Bound()),
			Details: map[string]any{"limit_kind": res.Limit.Kind, "configured": res.Limit.Configured, "unit": res.Limit.Unit}}
	case res.ExitCode != nil && *res.ExitCode == 3:
		return nil, memrayUnavailable(origin, filepath.Base(named)+" cannot import memray")
	case res.ExitCode != nil && *res.ExitCode == 4:
		return nil, &providers.DecodeError{Source: in.Index, Message: fmt.Sprintf("source %d: memray's FileReader cannot read it as a memray capture", in.Index)}
	case res.ExitCode == nil || *res.ExitCode != 0:
		return nil, &providers.DecodeError{Source: in.Index, Message: fmt.Sprintf("source %d: the memray reader failed", in.Index), Details: map[string]any{"exit_code": res.ExitCode}}
	}
	a, err := decodeMemrayOutput(out, in, origin, self)
	if err != nil {
		return nil, err
	}
	a.Implementation = map[string]string{"memray-python": exe.SHA256, "memray": a.Provider.Version}
	return a, nil
}

// decodeMemrayOutput reads the reader's JSON lines into the analysis ranked by inclusive,
// then self bytes (self, then inclusive when self is set), then frame id.
func decodeMemrayOutput(path string, in providers.Input, origin memrayOrigin, self bool) (*providers.Analysis, error) {
	bad := func(what string) error {
		return &providers.DecodeError{Source: in.Index, Message: fmt.Sprintf("source %d: the memray reader's output is malformed (%s)", in.Index, what)}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, bad("unreadable")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxMemrayLine)
	var version *string
	var metrics map[string]any
	var frames []memrayFrame
	for sc.Scan() {
		var l memrayLine
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.UseNumber()
		if err := dec.Decode(&l); err != nil {
			return nil, bad("a line is not JSON")
		}
		switch {
		case l.Version != nil:
			version = l.Version
		case l.Metrics != nil:
			metrics = l.Metrics
		case l.Frame != nil:
			if version == nil || metrics != nil || *l.Frame != int64(len(frames)) {
				return nil, bad("frames out of order")
			}
			frames = append(frames, l.memrayFrame)
		default:
			return nil, bad("an unknown line")
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &providers.LimitError{Source: in.Index, Limit: maxMemrayLine, Unit: "bytes",
				Message: fmt.Sprintf("source %d: a frame of the memray capture is longer than %d bytes", in.Index, maxMemrayLine)}
		}
		return nil, bad("unreadable")
	}
	if version == nil || metrics == nil {
		return nil, bad("incomplete")
	}
	if !memrayVersionOK(*version) {
		return nil, memrayUnavailable(origin, fmt.Sprintf("the reading Python has memray %q; memray>=%s is needed", *version, minMemray))
	}
	order := make([]int, len(frames))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int {
		a, b := &frames[x], &frames[y]
		if self {
			return cmp.Or(cmp.Compare(b.Self, a.Self), cmp.Compare(b.Inclusive, a.Inclusive), cmp.Compare(*a.Frame, *b.Frame))
		}
		return cmp.Or(cmp.Compare(b.Inclusive, a.Inclusive), cmp.Compare(b.Self, a.Self), cmp.Compare(*a.Frame, *b.Frame))
	})
	a := &providers.Analysis{Provider: gen.Provider{ID: "memray", Version: *version}, Metrics: metrics}
	if len(frames) == 0 {
		a.Limitations = append(a.Limitations, "The capture holds no allocation with a Python stack in the ranked record set.")
	}
	a.Rows = providers.Project(len(order), func(i int) gen.AllocationHotspotRow {
		h := &frames[order[i]]
		c := h.Count
		return gen.AllocationHotspotRow{Rank: int64(i + 1), Function: h.Function, File: providers.Nullable(h.File), Line: providers.Nullable(h.Line),
			SelfBytes: h.Self, InclusiveBytes: h.Inclusive, AllocationCount: &c, FrameID: *h.Frame}
	})
	return a, nil
}

// workloadPython is argv[0] as an absolute path, not symlink-resolved: absolute as given,
// or a bare name looked up on PATH.
func workloadPython(argv0 string) (string, bool) {
	switch {
	case filepath.IsAbs(argv0):
		return argv0, true
	case !strings.Contains(argv0, "/"):
		p, err := exec.LookPath(argv0)
		if err != nil {
			return "", false
		}
		if p, err = filepath.Abs(p); err != nil {
			return "", false
		}
		return p, true
	}
	return "", false
}
