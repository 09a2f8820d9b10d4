package trace

import (
	"context"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// inspectLaunches is inspect_gpu_launches: view "tables" of a source that has it, else
// the launches of a launchSource (an Nsight Systems export).
func inspectLaunches(ctx context.Context, req *providers.Request[gen.TableViewFields]) (*providers.Analysis, error) {
	if a, ok, err := tablesView(ctx, gen.OperationNameInspectGPULaunches, req); ok || err != nil {
		return a, err
	}
	in := req.Inputs[0]
	src, err := open(in)
	if err != nil {
		return nil, err
	}
	s, ok := src.(launchSource)
	if !ok {
		return nil, unsupported(in)
	}
	return s.gpuLaunches(ctx, req.Limits)
}
