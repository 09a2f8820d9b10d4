package trace

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/broker"
	"github.com/flameox/flameox/providers"
)

// A conversion runs a vendor's exporter (nsys export, xcrun xctrace export) on one source
// through the broker, in the scratch directory dir, bounded by the request's timeout,
// memory and output limits, and reports its end typed.
type conversion struct {
	exe  *providers.Executable
	args []string
	dir  string
	env  []string
	// boundArtifacts also bounds what the exporter writes under dir by max_output_bytes.
	boundArtifacts bool
	// started says what failed to start; stopped names the exporter in a limit's message
	// and limitHint follows it; unreadable is the exit failure's message.
	started, stopped, limitHint, unreadable string
}

// run runs the conversion of source in.
func (c conversion) run(ctx context.Context, in providers.Input, limits gen.EffectiveLimits) error {
	spec := broker.Spec{Path: c.exe.Path, Args: c.args, Dir: c.dir, Env: c.env,
		StdoutFile: filepath.Join(c.dir, "stdout"), StderrFile: filepath.Join(c.dir, "stderr"),
		MaxOutputBytes: limits.MaxOutputBytes, Timeout: time.Duration(limits.TimeoutSeconds * float64(time.Second)),
		MaxRSSBytes: limits.MaxMemoryBytes}
	if c.boundArtifacts {
		spec.ArtifactDir, spec.MaxArtifactBytes = c.dir, limits.MaxOutputBytes
	}
	res, err := broker.Run(ctx, spec)
	switch {
	case err != nil:
		return &providers.DecodeError{Source: in.Index, Message: c.started, Err: err}
	case res.Cancelled:
		return context.Canceled
	case res.Limit != nil:
		return &providers.LimitError{Source: in.Index, Message: fmt.Sprintf("%s stopped at its %s%s", c.stopped, res.Limit.Bound(), c.limitHint),
			Details: map[string]any{"limit_kind": res.Limit.Kind, "configured": res.Limit.Configured, "unit": res.Limit.Unit}}
	case res.ExitCode == nil || *res.ExitCode != 0:
		return &providers.DecodeError{Source: in.Index, Message: c.unreadable, Details: map[string]any{"exit_code": res.ExitCode}}
	}
	return nil
}
