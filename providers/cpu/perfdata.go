package cpu

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/broker"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/sampled"
)

// decodePerfData converts perf.data with `perf script` through the broker (bounded by the
// request's timeout, memory and output limits) and decodes its stacks. The perf binary's
// digest is the provider version and is bound into the request identity.
func decodePerfData(ctx context.Context, in providers.Input, limits gen.EffectiveLimits, p *decoded, o sampled.Options) (*decoded, error) {
	perf, err := bindPerf()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "flameox-perf-script-")
	if err != nil {
		return nil, &providers.DecodeError{Message: "the perf.data conversion could not start", Err: err}
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "script.txt")
	res, err := broker.Run(ctx, broker.Spec{Path: perf.Path, Args: []string{"perf", "script", "--input", in.Path, "--force"}, Dir: dir,
		Env: providers.ToolEnv(dir), StdoutFile: out, StderrFile: filepath.Join(dir, "stderr"),
		MaxOutputBytes: limits.MaxOutputBytes, Timeout: time.Duration(limits.TimeoutSeconds * float64(time.Second)),
		MaxRSSBytes: limits.MaxMemoryBytes})
	switch {
	case err != nil:
		return nil, &providers.DecodeError{Message: "perf script could not be started", Err: err}
	case res.Cancelled:
		return nil, context.Canceled
	case res.Limit != nil:
		return nil, &providers.LimitError{Message: fmt.Sprintf("perf script stopped at its %s", res.Limit.Bound()),
			Details: map[string]any{"limit_kind": res.Limit.Kind, "configured": res.Limit.Configured, "unit": res.Limit.Unit}}
	case res.ExitCode == nil || *res.ExitCode != 0:
		return nil, &providers.DecodeError{Message: "perf script could not read the perf.data file", Details: map[string]any{"exit_code": res.ExitCode}}
	}
	script, err := os.Open(out)
	if err != nil {
		return nil, &providers.DecodeError{Message: "the perf script output could not be read", Err: err}
	}
	defer script.Close()
	p.provider = gen.Provider{ID: "perf-script", Version: "sha256:" + perf.SHA256}
	p.implementation = map[string]string{"perf": perf.SHA256}
	if p.sampled, err = DecodePerfScript(script, o); err != nil {
		return nil, err
	}
	return p, nil
}
