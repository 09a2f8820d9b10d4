package trace

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/nsys"
)

// nsysLifecycleMetrics name the span count of each slice table (nsys.LifecycleFigures'
// order).
var nsysLifecycleMetrics = [...]string{"kernel_count", "memcpy_count", "memset_count", "cuda_api_call_count", "nvtx_range_count"}

// nsysLifecycle is summarize_trace_lifecycle on an Nsight Systems export (decision 0025,
// item 12): each kernel, memcpy, memset, CUDA API call and NVTX range is a span that
// starts and ends; times are Unix nanoseconds when the export records its session start.
// The export's figures and rows are nsys.Export.Lifecycle's and Transitions'.
func nsysLifecycle(ctx context.Context, x nsysSource, limits gen.EffectiveLimits) (*providers.Analysis, error) {
	src, a, done, err := x.export(ctx, limits)
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, done)
	fig, err := src.Lifecycle(ctx)
	if err != nil {
		done()
		return nil, err
	}
	var spans, invalid int64
	m := map[string]any{}
	for tab, k := range nsysLifecycleMetrics {
		m[k] = fig.Tables[tab].Valid
		spans += fig.Tables[tab].Valid
		invalid += fig.Tables[tab].Rows - fig.Tables[tab].Valid
	}
	m["transition_count"], m["span_count"], m["invalid_interval_count"] = 2*spans, spans, invalid
	if invalid > 0 {
		a.Limitations = append(a.Limitations, fmt.Sprintf("%d records end before they start or lack a start or an end, and are not listed (invalid_interval_count).", invalid))
	}
	if !fig.UTC {
		a.Limitations = append(a.Limitations, "The export records no session start (TARGET_INFO_SESSION_START_TIME): time_unix_nano is the export's own time, nanoseconds from the session start.")
	}
	if spans == 0 {
		a.Limitations = append(a.Limitations, "no_lifecycle_activity_observed: the export holds no kernel, memcpy, memset, CUDA API call or NVTX range.")
	}
	a.Metrics = m
	epoch := fig.Epoch
	a.Rows = &exportPages[nsys.Transition]{total: 2 * spans, done: done, read: src.Transitions,
		encode: func(r *nsys.Transition) (json.RawMessage, error) {
			return providers.EncodeRow(nsysTransitionRow(r, epoch))
		}}
	return a, nil
}

// nsysTransitionRow is the transition's lifecycle row; epoch is the session start.
func nsysTransitionRow(r *nsys.Transition, epoch int64) gen.TraceLifecycleRow {
	row := gen.TraceLifecycleRow{Transition: transitionNames[2*r.Kind], TimeUnixNano: nanos(r.Time + epoch),
		TraceID: strconv.FormatInt(r.Process, 10), SpanID: strconv.FormatInt(r.ID, 10), Operation: sliceName(r.Name)}
	if p, ok := r.Parent.Get(); ok {
		s := strconv.FormatInt(p, 10)
		row.ParentSpanID = &s
	}
	return row
}
