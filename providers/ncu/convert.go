package ncu

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/broker"
	"github.com/flameox/flameox/providers"
)

// convert reads a native report through ncu --import --csv: the raw page gives the
// measurements (every collected metric by id), the details page the observations and
// the section names. Each run is bounded by the request's timeout, memory and output
// limits; the ncu binary's digest is returned to be bound into the request identity.
func convert(ctx context.Context, in providers.Input, limits gen.EffectiveLimits, r *report) (*providers.Executable, error) {
	ncu, err := bindNcu()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "flameox-ncu-import-")
	if err != nil {
		return nil, &providers.DecodeError{Source: in.Index, Message: "the Nsight Compute report conversion could not start", Err: err}
	}
	defer os.RemoveAll(dir)
	for _, p := range []struct {
		name string
		keep page
	}{{"raw", keepMeasurements}, {"details", keepObservations}} {
		if err := importPage(ctx, ncu, in, limits, dir, p.name, p.keep, r); err != nil {
			return nil, err
		}
	}
	return ncu, nil
}

func importPage(ctx context.Context, ncu *providers.Executable, in providers.Input, limits gen.EffectiveLimits, dir, name string, keep page, r *report) error {
	out := filepath.Join(dir, name+".csv")
	res, err := broker.Run(ctx, broker.Spec{Path: ncu.Path, Args: []string{"ncu", "--import", in.Path, "--csv", "--page", name}, Dir: dir,
		Env: providers.ToolEnv(dir), StdoutFile: out, StderrFile: filepath.Join(dir, name+".stderr"),
		MaxOutputBytes: limits.MaxOutputBytes, Timeout: time.Duration(limits.TimeoutSeconds * float64(time.Second)),
		MaxRSSBytes: limits.MaxMemoryBytes})
	switch {
	case err != nil:
		return &providers.DecodeError{Source: in.Index, Message: "ncu could not be started to convert the report", Err: err}
	case res.Cancelled:
		return context.Canceled
	case res.Limit != nil:
		return &providers.LimitError{Source: in.Index, Message: fmt.Sprintf("ncu --import stopped at its %s", res.Limit.Bound()),
			Details: map[string]any{"limit_kind": res.Limit.Kind, "configured": res.Limit.Configured, "unit": res.Limit.Unit}}
	case res.ExitCode == nil || *res.ExitCode != 0:
		return &providers.DecodeError{Source: in.Index, Message: fmt.Sprintf("ncu could not read source %d as an Nsight Compute report (--page %s)", in.Index, name),
			Details: map[string]any{"exit_code": res.ExitCode}}
	}
	f, err := os.Open(out)
	if err != nil {
		return &providers.DecodeError{Source: in.Index, Message: "the ncu --import output could not be read", Err: err}
	}
	defer f.Close()
	return decodePage(ctx, f, in.Index, keep, r)
}
