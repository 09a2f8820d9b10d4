package runtime

import (
	"fmt"
	"strconv"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
)

// WorkloadCeilingVariable sets a ceiling on every capture execution's wall-clock time,
// in seconds (decision 0049, item 5). Unset, as by default, a workload runs without a
// deadline unless its request sets target.budget.timeout_seconds: seed 000 says both
// budget fields default to null and seed 002 that no-deadline execution has no
// substituted deadline. An operator who wants every capture bounded sets it; requests
// may then only lower it, as with the server's analysis ceilings.
const WorkloadCeilingVariable = "FLAMEOX_MAX_WORKLOAD_SECONDS"

// maxWorkloadSeconds is the contract's largest target.budget.timeout_seconds.
const maxWorkloadSeconds = 86400

// workloadCeiling reads WorkloadCeilingVariable: 0 when unset, else seconds from 1 to
// maxWorkloadSeconds; an error says why a set value is refused.
func workloadCeiling(getenv func(string) string) (float64, error) {
	s := strings.TrimSpace(getenv(WorkloadCeilingVariable))
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 1 || v > maxWorkloadSeconds {
		return 0, fmt.Errorf("%s must be a number of seconds from 1 to %d, not %q", WorkloadCeilingVariable, maxWorkloadSeconds, s)
	}
	return v, nil
}

// admitWorkloadTimeout checks a request's timeout against the server's workload ceiling
// (0: none): above it is LIMIT_EXCEEDED with the ceiling as the accepted maximum.
func admitWorkloadTimeout(requested *float64, ceiling float64) *failure.Failure {
	if ceiling == 0 || requested == nil || *requested <= ceiling {
		return nil
	}
	c := strconv.FormatFloat(ceiling, 'f', -1, 64)
	f := failure.New(gen.FailureCodeLimitExceeded,
		"target.budget.timeout_seconds is %s; this server bounds every workload at %s seconds (%s)",
		strconv.FormatFloat(*requested, 'f', -1, 64), c, WorkloadCeilingVariable).
		Field(failure.Path("target", "budget", "timeout_seconds"), []string{"<=" + c}).
		With("field", "timeout_seconds").With("requested", *requested).With("effective_ceiling", ceiling)
	f.NextAction = &gen.NextAction{AdjustRequest: &gen.AdjustRequest{Kind: "adjust_request",
		FieldPath: failure.Path("target", "budget", "timeout_seconds"),
		Message:   "Set target.budget.timeout_seconds to at most " + c + " (or leave it null for the server's ceiling), then capture again."}}
	return f
}

// serverDeadline reports whether the server's workload ceiling, not the request, set the
// capture's executions' deadline.
func (cr *captureRequest) serverDeadline() bool {
	return cr.workloadCeiling > 0 && (cr.target.Budget == nil || cr.target.Budget.TimeoutSeconds == nil)
}

// serverDeadlineRecovery is the recovery of an execution the server's ceiling stopped.
const serverDeadlineRecovery = "This server bounds every workload (" + WorkloadCeilingVariable + "); shorten the workload."
