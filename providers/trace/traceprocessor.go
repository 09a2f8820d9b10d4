package trace

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/broker"
	"github.com/flameox/flameox/internal/prepare"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/perfetto"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// traceProcessor is Perfetto's trace_processor_shell, bound by its digest, answering a
// Perfetto trace whose data the native decoder does not read (decision 0016, item 6).
type traceProcessor struct {
	exe    *providers.Executable
	limits gen.EffectiveLimits
}

// traceProcessorExecutable is the trace processor its record locates, with whether it is
// an executable file: $FLAMEOX_TRACE_PROCESSOR when set (then the only candidate), else
// trace_processor_shell on PATH, else trace_processor on PATH (the catalog's order).
func traceProcessorExecutable() (string, bool) {
	p, ok := providers.Locate(traceProcessorTool)
	if !ok {
		return "", false
	}
	fi, err := os.Stat(p)
	return p, err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// traceProcessorNeed is what Flameox needs the trace processor for; the alternative is
// a trace the native decoder reads.
var traceProcessorNeed = prepare.Need{Purpose: "to read the trace's slices",
	Alternative: "record track events (the Perfetto SDK, Chrome tracing, torch.profiler), which the native decoder reads"}

// traceProcessorUnavailable is the trace processor's unavailable state, for the reason why.
func traceProcessorUnavailable(why string) *providers.UnavailableError {
	n := traceProcessorNeed
	n.Why = why
	return providers.Unavailable(traceProcessorTool, n)
}

// errNativeSlice stops the probe at the first slice the native decoder reads.
var errNativeSlice = errors.New("native slice")

type probeSink struct{}

func (probeSink) Slice(*tracemodel.Event) error          { return errNativeSlice }
func (probeSink) Track(tracemodel.Track)                 {}
func (probeSink) ThreadName(pid, tid int64, name string) {}
func (probeSink) ProcessName(pid int64, name string)     {}

// traceProcessorNeeded answers a Perfetto trace without track events whose data only
// Perfetto's trace_processor reads (ftrace scheduling, system counters, profiles).
// It is called only where no executable was found, so a set FLAMEOX_TRACE_PROCESSOR
// names no executable file.
func traceProcessorNeeded(in providers.Input, p *perfetto.Info) error {
	why := fmt.Sprintf("source %d holds no track events the native decoder reads, only data Perfetto's trace_processor reads (%s)", in.Index, unreadKinds(p.UnreadDataByKind()))
	if v := traceProcessorTool.Variable; os.Getenv(v) != "" {
		why += "; " + v + " is set but does not name an executable file"
	}
	e := traceProcessorUnavailable(why)
	e.Details = map[string]any{"unread_packets": p.UnreadByKind()}
	return e
}

// admitTraceProcessor returns the bound trace_processor_shell when in's source is one
// it reads (processorSource) and admits it; nil otherwise.
func admitTraceProcessor(ctx context.Context, in providers.Input, limits gen.EffectiveLimits) (*traceProcessor, error) {
	if p, ok := sourceOf(in).(processorSource); ok {
		return p.admit(ctx, limits)
	}
	return nil, nil
}

// admitPerfetto returns the bound trace_processor_shell when in is a Perfetto trace the
// native decoder cannot answer (no track events, only data it does not read) and the
// executable exists; nil otherwise (the native read then answers, or fails
// UNAVAILABLE_CAPABILITY as before). The probe stops at the first native slice, so a
// trace with track events costs a short read.
func admitPerfetto(ctx context.Context, in providers.Input, limits gen.EffectiveLimits) (*traceProcessor, error) {
	path, ok := traceProcessorExecutable()
	if !ok {
		return nil, nil
	}
	r, err := providers.OpenBounded(ctx, in, maxTraceBytes)
	if err != nil {
		return nil, err
	}
	_, info, err := perfetto.Decode(ctx, r, in.Index, perfetto.Limits{}, probeSink{})
	r.Close()
	if errors.Is(err, errNativeSlice) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !info.NothingNative() || info.UnreadDataPackets() == 0 {
		return nil, nil
	}
	exe, err := providers.Bind(path, func() error { return traceProcessorNeeded(in, info) })
	if err != nil {
		return nil, err
	}
	return &traceProcessor{exe: exe, limits: limits}, nil
}

// bind names trace_processor as the reader of a and binds its digest into the request
// identity, so a continuation fails when the executable changes.
func (tp *traceProcessor) bind(a *providers.Analysis) *providers.Analysis {
	if tp != nil {
		a.Provider = gen.Provider{ID: "perfetto-trace-processor", Version: "sha256:" + tp.exe.SHA256}
		a.Implementation = map[string]string{"trace_processor_shell": tp.exe.SHA256}
	}
	return a
}

// tpQuery selects the slices with a positive duration in start order, parent and depth
// as trace_processor nests them. trace_processor prints strings between double quotes
// without escaping, so every string leaves the query hex-encoded behind an "x": the
// output cannot be misread whatever a name holds. SQLite's hex(NULL) is the empty
// string, so a CASE keeps NULL NULL (printed "[NULL]"), apart from the empty string
// ("x").
const tpQuery = `SELECT s.id, s.parent_id, s.depth, s.ts, s.dur, s.track_id,
  CASE WHEN s.name IS NULL THEN NULL ELSE 'x' || hex(s.name) END AS name,
  CASE WHEN s.category IS NULL THEN NULL ELSE 'x' || hex(s.category) END AS category,
  tt.utid, t.upid,
  CASE WHEN t.name IS NULL THEN NULL ELSE 'x' || hex(t.name) END AS thread_name,
  CASE WHEN p.name IS NULL THEN NULL ELSE 'x' || hex(p.name) END AS process_name,
  CASE WHEN ps.name IS NULL THEN NULL ELSE 'x' || hex(ps.name) END AS parent_name
FROM slice s
LEFT JOIN slice ps ON ps.id = s.parent_id
LEFT JOIN thread_track tt ON tt.id = s.track_id
LEFT JOIN thread t USING (utid)
LEFT JOIN process p USING (upid)
WHERE s.dur > 0
ORDER BY s.ts, s.depth, s.id;
`

var tpColumns = []string{"id", "parent_id", "depth", "ts", "dur", "track_id", "name", "category", "utid", "upid", "thread_name", "process_name", "parent_name"}

// maxTPLine bounds one line of trace_processor's output.
const maxTPLine = 1 << 20

// read runs the query through the broker, bounded by the request's timeout, memory and
// output limits, and delivers every row as a Nested slice in start order.
func (tp *traceProcessor) read(ctx context.Context, in providers.Input, s *scan, visit func(*tracemodel.Nested) error) error {
	dir, err := os.MkdirTemp("", "flameox-trace-processor-")
	if err != nil {
		return &providers.DecodeError{Source: in.Index, Message: "trace_processor_shell could not be started", Err: err}
	}
	defer os.RemoveAll(dir)
	sql, out := filepath.Join(dir, "slices.sql"), filepath.Join(dir, "slices.csv")
	if err := os.WriteFile(sql, []byte(tpQuery), 0o600); err != nil {
		return &providers.DecodeError{Source: in.Index, Message: "trace_processor_shell could not be started", Err: err}
	}
	l := tp.limits
	res, err := broker.Run(ctx, broker.Spec{Path: tp.exe.Path, Args: []string{"trace_processor_shell", "--query-file", sql, in.Path}, Dir: dir,
		Env: providers.ToolEnv(dir), StdoutFile: out, StderrFile: filepath.Join(dir, "stderr"),
		MaxOutputBytes: l.MaxOutputBytes, Timeout: time.Duration(l.TimeoutSeconds * float64(time.Second)), MaxRSSBytes: l.MaxMemoryBytes})
	switch {
	case errors.Is(err, broker.ErrStart):
		return traceProcessorUnavailable(fmt.Sprintf("source %d: the trace_processor_shell executable could not be started", in.Index))
	case err != nil:
		return &providers.DecodeError{Source: in.Index, Message: "trace_processor_shell could not be started", Err: err}
	case res.Cancelled:
		return context.Canceled
	case res.Limit != nil:
		return &providers.LimitError{Source: in.Index, Message: fmt.Sprintf("trace_processor_shell stopped at its %s", res.Limit.Bound()),
			Details: map[string]any{"limit_kind": res.Limit.Kind, "configured": res.Limit.Configured, "unit": res.Limit.Unit}}
	case res.ExitCode == nil || *res.ExitCode != 0:
		return &providers.DecodeError{Source: in.Index, Message: fmt.Sprintf("trace_processor_shell could not read source %d as a Perfetto trace", in.Index),
			Details: map[string]any{"exit_code": res.ExitCode}}
	}
	f, err := os.Open(out)
	if err != nil {
		return &providers.DecodeError{Source: in.Index, Message: "the trace_processor_shell output could not be read", Err: err}
	}
	defer f.Close()
	s.stats = &tracemodel.Stats{}
	s.traceProcessor = true
	return parseTPSlices(ctx, f, in.Index, func(r *tpRow) error {
		s.stats.Events++
		s.stats.Slices++
		if _, ok := s.tracks[r.n.Track]; !ok {
			t := tracemodel.Track{ID: r.n.Track, PID: -1, TID: -1, Async: r.utid == nil}
			if r.utid != nil {
				t.TID = *r.utid
				if r.upid != nil {
					t.PID = *r.upid
				}
				if r.thread != nil {
					s.threads[[2]int64{t.PID, t.TID}] = *r.thread
				}
				if r.process != nil && r.upid != nil {
					s.processes[t.PID] = *r.process
				}
			}
			s.tracks[t.ID] = t
		}
		return visit(&r.n)
	})
}

// tpRow is one parsed output row.
type tpRow struct {
	n               tracemodel.Nested
	utid, upid      *int64
	thread, process *string
}

// parseTPSlices reads trace_processor's query output: a header of the quoted column
// names joined by ",", then one line per row, integers printed plainly, strings between
// double quotes, NULL as "[NULL]" (trace_processor's PrintQueryResultAsCsv).
func parseTPSlices(ctx context.Context, r io.Reader, source int, row func(*tpRow) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	bad := func(line int64, what string) error {
		return &providers.DecodeError{Source: source, Message: fmt.Sprintf("trace_processor_shell output line %d: %s", line, what)}
	}
	var line int64
	next := func() (string, bool, error) {
		var b []byte
		for {
			chunk, err := br.ReadSlice('\n')
			b = append(b, chunk...)
			if len(b) > maxTPLine {
				return "", false, &providers.LimitError{Source: source, Message: fmt.Sprintf("a trace_processor_shell output line exceeds %d bytes", maxTPLine)}
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err == io.EOF {
				return strings.TrimRight(string(b), "\r\n"), len(b) > 0, nil
			}
			if err != nil {
				return "", false, err
			}
			line++
			return strings.TrimRight(string(b), "\r\n"), true, nil
		}
	}
	head, ok, err := next()
	if err != nil {
		return err
	}
	want := `"` + strings.Join(tpColumns, `","`) + `"`
	if !ok || head != want {
		return bad(1, "not the header of the slice query")
	}
	var r0 tpRow
	for {
		if line%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		text, ok, err := next()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if text == "" {
			// A blank line separates result sets; the query has one.
			continue
		}
		f := strings.Split(text, ",")
		if len(f) != len(tpColumns) {
			return bad(line, fmt.Sprintf("%d fields, want %d", len(f), len(tpColumns)))
		}
		r0 = tpRow{}
		n := &r0.n
		var perr error
		integer := func(i int, null bool) *int64 {
			if f[i] == `"[NULL]"` && null {
				return nil
			}
			v, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil && perr == nil {
				perr = bad(line, fmt.Sprintf("column %s is not an integer", tpColumns[i]))
			}
			return &v
		}
		str := func(i int) *string {
			v := f[i]
			if v == `"[NULL]"` {
				return nil
			}
			if len(v) < 3 || v[0] != '"' || v[1] != 'x' || v[len(v)-1] != '"' {
				if perr == nil {
					perr = bad(line, fmt.Sprintf("column %s is not a hex-encoded string", tpColumns[i]))
				}
				return nil
			}
			b, err := hex.DecodeString(v[2 : len(v)-1])
			if err != nil && perr == nil {
				perr = bad(line, fmt.Sprintf("column %s is not a hex-encoded string", tpColumns[i]))
			}
			s := string(b)
			return &s
		}
		n.ID = *integer(0, false)
		n.ParentID = -1
		if p := integer(1, true); p != nil {
			n.ParentID = *p
		}
		n.Depth = int32(*integer(2, false))
		n.TS, n.Dur, n.Track = *integer(3, false), *integer(4, false), *integer(5, false)
		if s := str(6); s != nil {
			n.Name = *s
		}
		if s := str(7); s != nil {
			n.Category = *s
		}
		n.Phase = "X"
		r0.utid, r0.upid = integer(8, true), integer(9, true)
		r0.thread, r0.process = str(10), str(11)
		if s := str(12); s != nil && n.ParentID >= 0 {
			n.ParentName = *s
		}
		if perr != nil {
			return perr
		}
		if n.Dur <= 0 || n.ID < 0 {
			return bad(line, "a slice without a positive duration")
		}
		if err := row(&r0); err != nil {
			return err
		}
	}
}
