package trace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/tracemodel"
	"github.com/flameox/flameox/providers/trace/xctrace"
)

// xctraceSource is an Instruments trace (decision 0062): an xctrace export, the XML
// `xcrun xctrace export --xpath` writes (a file, read on every host), or a .trace bundle
// (a directory: the bundle itself, or a directory holding exactly one, as the xctrace
// collector writes), which macOS's xcrun xctrace exports before it is read. It is a
// slice source (xctrace.Decode): summarize_trace lists its intervals, and
// summarize_trace_operations ranks them (operations, which exports a bundle first).
type xctraceSource struct{ sourceBase }

// bundle reports whether the source is a directory (a .trace bundle).
func (x xctraceSource) bundle() bool { return x.in.Members != nil }

// available: an export is read on every host; a bundle only where xcrun xctrace exists.
func (x xctraceSource) available() error {
	if !x.bundle() || xctraceHost == "darwin" {
		return nil
	}
	e := xctraceUnavailable(xctraceHost)
	e.Message = fmt.Sprintf("source %d is an Instruments .trace bundle, which only xcrun xctrace on macOS exports; this host runs %s", x.in.Index, xctraceHost)
	e.Remediation = "On a Mac, export the bundle's tables: xcrun xctrace export --input T.trace --xpath '/trace-toc/run[@number=\"1\"]/data/table' --output T.xml; then analyse T.xml here with format xctrace."
	return e
}

// prepare is what a slice read reads: a bundle's export (the analysis names the
// exporting xctrace), else the export the source is.
func (x xctraceSource) prepare(ctx context.Context, limits gen.EffectiveLimits) (providers.Input, *providers.Analysis, func(), error) {
	if !x.bundle() {
		return x.in, &providers.Analysis{Provider: provider()}, func() {}, nil
	}
	if err := x.available(); err != nil {
		return x.in, nil, nil, err
	}
	return exportXctrace(ctx, x.in, limits)
}

// slices decodes the export into nest.
func (x xctraceSource) slices(ctx context.Context, nest *tracemodel.Nester, s *scan) error {
	if x.bundle() {
		// A bundle is read through its export (prepare); an analyzer that did not prepare
		// it reads nothing.
		return unsupported(x.in)
	}
	r, err := providers.OpenReadAhead(ctx, x.in, maxTraceBytes)
	if err != nil {
		return err
	}
	defer r.Close()
	s.stats, _, err = xctrace.Decode(ctx, r, x.in.Index, xctrace.Limits{}, nest)
	return err
}

// operations is summarize_trace_operations: the export's slices ranked as any slice
// source's (sliceOperations), a bundle's once exported.
func (x xctraceSource) operations(ctx context.Context, limits gen.EffectiveLimits, f *filter) (*providers.Analysis, error) {
	in, a, done, err := x.prepare(ctx, limits)
	if err != nil {
		return nil, err
	}
	defer done()
	lim := a.Limitations
	if a, err = sliceOperations(ctx, in, nil, f, a); err != nil {
		return nil, err
	}
	a.Limitations = append(lim, a.Limitations...)
	return a, nil
}

// xctraceBundlePath is the bundle a directory source names: the one *.trace directory
// it holds when it holds nothing else, else the directory itself.
func xctraceBundlePath(in providers.Input) (string, error) {
	entries, err := os.ReadDir(in.Path)
	if err != nil {
		return "", &providers.InputError{Source: in.Index, Message: fmt.Sprintf("source %d (a directory) could not be read", in.Index), Err: err}
	}
	if len(entries) == 1 && entries[0].IsDir() && strings.HasSuffix(strings.ToLower(entries[0].Name()), ".trace") {
		return filepath.Join(in.Path, entries[0].Name()), nil
	}
	return in.Path, nil
}

// xctraceTables is the xpath of the tables exported: every table of the first run.
const xctraceTables = `/trace-toc/run[@number="1"]/data/table`

// exportXctrace exports a bundle's first run with the installed xcrun xctrace, through
// the broker, bounded by the request's timeout, memory and output limits (the export
// file is a generated artifact: max_output_bytes bounds it), in a scratch directory:
// `xctrace export --toc` (its runs are counted), then `xctrace export --xpath
// '/trace-toc/run[@number="1"]/data/table'`. It returns the export as the input to read,
// the analysis naming xctrace, and the function that removes the scratch directory.
func exportXctrace(ctx context.Context, in providers.Input, limits gen.EffectiveLimits) (providers.Input, *providers.Analysis, func(), error) {
	tools, err := bindXctrace()
	if err != nil {
		return in, nil, nil, err
	}
	bundle, err := xctraceBundlePath(in)
	if err != nil {
		return in, nil, nil, err
	}
	dir, err := os.MkdirTemp("", "flameox-xctrace-export-")
	if err != nil {
		return in, nil, nil, &providers.DecodeError{Source: in.Index, Message: "the Instruments trace export could not start", Err: err}
	}
	var once sync.Once
	done := func() { once.Do(func() { os.RemoveAll(dir) }) }
	toc, tables := filepath.Join(dir, "toc.xml"), filepath.Join(dir, "tables.xml")
	err = runXctraceExport(ctx, in, tools.xcrun, dir, limits, "--input", bundle, "--toc", "--output", toc)
	runs := 0
	if err == nil {
		runs, err = xctraceRuns(in, toc)
	}
	if err == nil {
		err = runXctraceExport(ctx, in, tools.xcrun, dir, limits, "--input", bundle, "--xpath", xctraceTables, "--output", tables)
	}
	if err == nil {
		if _, serr := os.Stat(tables); serr != nil {
			err = &providers.DecodeError{Source: in.Index, Message: fmt.Sprintf("xctrace export wrote no export of source %d's tables", in.Index)}
		}
	}
	if err != nil {
		done()
		return in, nil, nil, err
	}
	conv := in
	conv.Path, conv.Members = tables, nil
	a := &providers.Analysis{Provider: gen.Provider{ID: "xctrace", Version: "sha256:" + tools.xctrace.SHA256},
		Implementation: map[string]string{"xctrace": tools.xctrace.SHA256, "xcrun": tools.xcrun.SHA256}}
	if runs > 1 {
		a.Limitations = append(a.Limitations, fmt.Sprintf("The Instruments trace holds %d runs; only run 1 is read (xctrace export --xpath '%s').", runs, xctraceTables))
	}
	return conv, a, done, nil
}

// runXctraceExport runs `xcrun xctrace export args...` in dir through the broker.
func runXctraceExport(ctx context.Context, in providers.Input, xcrun *providers.Executable, dir string, limits gen.EffectiveLimits, args ...string) error {
	env := providers.ToolEnv(dir)
	if d := os.Getenv("DEVELOPER_DIR"); d != "" {
		env = append(env, "DEVELOPER_DIR="+d)
	}
	return conversion{exe: xcrun, args: append([]string{"xcrun", "xctrace", "export"}, args...), dir: dir, env: env, boundArtifacts: true,
		started: "xcrun xctrace could not be started to export the Instruments trace", stopped: "xctrace export",
		limitHint:  "; raise the limit, or export fewer tables on the Mac (xcrun xctrace export --xpath ...) and analyse that file",
		unreadable: fmt.Sprintf("xctrace export could not read source %d as an Instruments trace", in.Index)}.run(ctx, in, limits)
}

// xctraceRuns counts the runs of an exported table of contents (xctrace.Runs).
func xctraceRuns(in providers.Input, toc string) (int, error) {
	f, err := os.Open(toc)
	if err != nil {
		return 0, &providers.DecodeError{Source: in.Index, Message: fmt.Sprintf("xctrace export wrote no table of contents of source %d", in.Index), Err: err}
	}
	defer f.Close()
	return xctrace.Runs(f, in.Index)
}
