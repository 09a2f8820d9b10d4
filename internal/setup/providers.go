package setup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"time"

	gen "github.com/flameox/flameox/generated/contracts"
)

// Preparation is what preparing the requested providers with the registered executable
// reported: the managed providers it installed or reused and verified, and what the
// other providers need outside Flameox (host tools, the workload's interpreter).
type Preparation struct {
	PreparedManagedProviders []gen.PreparableProvider  `json:"prepared_managed_providers"`
	ExternalGuidance         []gen.ProviderRequirement `json:"external_guidance"`
}

// PreparationCommand is the command setup runs to prepare providers with the executable
// it registers (the prepare_providers tool as a CLI command); nil for no providers.
func PreparationCommand(l Launcher, providers []string) []string {
	if len(providers) == 0 {
		return nil
	}
	return append([]string{l.Command, "prepare"}, providers...)
}

// PrepareProviders runs PreparationCommand through the broker with the rest of ctx's
// deadline as its --timeout-seconds, so that the providers are prepared where the
// registered server looks for them (the tools directory beside its evidence store). The
// error is a sentence quoting the command's own failure.
func PrepareProviders(ctx context.Context, l Launcher, providers []string) (*Preparation, error) {
	argv := PreparationCommand(l, providers)
	if argv == nil {
		return nil, nil
	}
	secs := 3600
	if d, ok := ctx.Deadline(); ok {
		secs = int(math.Ceil(time.Until(d).Seconds()))
		if secs < 1 {
			return nil, timeoutError(ctx, "preparing providers")
		}
		secs = min(secs, 3600)
	}
	out, stderr, err := Exec(ctx, os.Environ(), append(argv, "--timeout-seconds", strconv.Itoa(secs))...)
	if ctx.Err() != nil {
		return nil, timeoutError(ctx, "preparing providers")
	}
	if err != nil {
		if why := FailureMessage(stderr); why != "" {
			return nil, errors.New(why)
		}
		return nil, err
	}
	var res gen.PrepareProvidersResult
	if err := json.Unmarshal(out, &res); err != nil || res.Status != "complete" {
		return nil, fmt.Errorf("%s prepare did not print a preparation result", l.Command)
	}
	p := &Preparation{PreparedManagedProviders: res.PreparedManagedProviders,
		ExternalGuidance: append(append([]gen.ProviderRequirement{}, res.ExternalRequirements...), res.WorkloadRequirements...)}
	if p.PreparedManagedProviders == nil {
		p.PreparedManagedProviders = []gen.PreparableProvider{}
	}
	return p, nil
}
