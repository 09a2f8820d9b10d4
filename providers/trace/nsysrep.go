package trace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/prepare"
	"github.com/flameox/flameox/providers"
)

// bindNsys locates, resolves and hashes nsys.
func bindNsys() (*providers.Executable, error) {
	return providers.LocateAndBind(nsysTool, prepare.Need{Purpose: "to read .nsys-rep reports and to capture with the nsight-systems provider",
		Alternative: "export the report where nsys exists (nsys export --type sqlite --output R.sqlite R.nsys-rep) and analyse the .sqlite file"})
}

// nsysExportName is the SQLite file nsys export writes in the scratch directory.
const nsysExportName = "report.sqlite"

// convertNsysRep converts a .nsys-rep report to SQLite with the installed nsys (nsys
// export --type sqlite) through the broker, bounded by the request's timeout, memory and
// output limits, in a scratch directory. It returns the export as an nsys-sqlite input,
// the nsys binary, and the function that removes the scratch directory.
func convertNsysRep(ctx context.Context, in providers.Input, limits gen.EffectiveLimits) (providers.Input, *providers.Executable, func(), error) {
	nsys, err := bindNsys()
	if err != nil {
		return in, nil, nil, err
	}
	dir, err := os.MkdirTemp("", "flameox-nsys-export-")
	if err != nil {
		return in, nil, nil, &providers.DecodeError{Source: in.Index, Message: "the Nsight Systems report conversion could not start", Err: err}
	}
	var once sync.Once
	done := func() { once.Do(func() { os.RemoveAll(dir) }) }
	out := filepath.Join(dir, nsysExportName)
	err = conversion{exe: nsys, args: []string{"nsys", "export", "--type", "sqlite", "--output", out, "--force-overwrite", "true", in.Path},
		dir: dir, env: providers.ToolEnv(dir), started: "nsys could not be started to convert the report", stopped: "nsys export",
		unreadable: fmt.Sprintf("nsys export could not read source %d as an Nsight Systems report", in.Index)}.run(ctx, in, limits)
	if err == nil {
		if _, serr := os.Stat(out); serr != nil {
			err = &providers.DecodeError{Source: in.Index, Message: fmt.Sprintf("nsys export wrote no SQLite export for source %d", in.Index)}
		}
	}
	if err != nil {
		done()
		return in, nil, nil, err
	}
	conv := in
	conv.Path, conv.Format = out, gen.FormatNsysSqlite
	return conv, nsys, done, nil
}

// nsysRepAnalysis names the converting nsys: its digest is the provider version and is
// bound into the request identity, so a continuation fails when nsys changes.
func nsysRepAnalysis(nsys *providers.Executable) *providers.Analysis {
	return &providers.Analysis{Provider: gen.Provider{ID: "nsight-systems", Version: "sha256:" + nsys.SHA256},
		Implementation: map[string]string{"nsys": nsys.SHA256}}
}

// nsysReport is the captured report: nsys profile --output <dir>/nsight-systems appends
// .nsys-rep.
const nsysReport = "nsight-systems.nsys-rep"

// nsysTrace is the --trace list: the contract's default (CUE: trace *["cuda","nvtx","osrt"])
// when the caller gives none, since the generator sets no list defaults.
func nsysTrace(o *gen.NsightSystemsProvider) string {
	apis := make([]string, 0, len(o.Trace))
	for _, a := range o.Trace {
		if s, ok := a.(string); ok {
			apis = append(apis, s)
		}
	}
	if len(apis) == 0 {
		apis = []string{"cuda", "nvtx", "osrt"}
	}
	return strings.Join(apis, ",")
}

// nsysCommand is catalog §3.1's nsys profile command line.
func nsysCommand(o *gen.NsightSystemsProvider, exe *providers.Executable, c providers.Case, dir string) []string {
	argv := []string{exe.Path, "profile", "--trace=" + nsysTrace(o), "--sample=none", "--cpuctxsw=none",
		"--resolve-symbols=false", "--force-overwrite=true", "--output", filepath.Join(dir, strings.TrimSuffix(nsysReport, ".nsys-rep")),
		c.Launch()}
	return append(argv, c.Argv[1:]...)
}

var nsysCollector = providers.Collect(providers.CollectorSpec[gen.NsightSystemsProvider]{Kind: "nsight-systems", File: nsysReport,
	Admit:   func([]providers.Case) (*providers.Executable, error) { return bindNsys() },
	Command: nsysCommand,
	Check: func(o *gen.NsightSystemsProvider) error {
		return providers.UniqueItems([]any{"provider", "trace"}, o.Trace, []string{"cuda", "nvtx", "osrt", "cublas", "cudnn"})
	}})
