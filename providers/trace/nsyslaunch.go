package trace

import (
	"context"
	"encoding/json"
	"fmt"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/nsys"
)

// nsysLaunches is inspect_gpu_launches on an Nsight Systems export: its kernels, memcpys
// and memsets by start, each with its launching CUDA runtime call (nsys.Export.Launches'
// figures and LaunchRows' rows).
func nsysLaunches(ctx context.Context, x nsysSource, limits gen.EffectiveLimits) (*providers.Analysis, error) {
	src, a, done, err := x.export(ctx, limits)
	if err != nil {
		return nil, err
	}
	// A converted report's scratch export lives until the page is read, or until the
	// analysis ends (its context is cancelled when the request is answered).
	context.AfterFunc(ctx, done)
	fig, err := src.Launches(ctx)
	if err != nil {
		done()
		return nil, err
	}
	a.Metrics = map[string]any{"kernel_count": fig.Kernels, "memcpy_count": fig.Memcpys, "memset_count": fig.Memsets,
		"device_count": fig.Devices, "total_kernel_time_ns": nanos(fig.KernelTime), "unmatched_api_count": fig.Unmatched,
		"launch_count": fig.Launches, "accelerator_activity_observed": fig.Launches > 0}
	if fig.Records > fig.Launches {
		a.Metrics["invalid_record_count"] = fig.Records - fig.Launches
	}
	if fig.Launches == 0 {
		a.Limitations = append(a.Limitations, "no_accelerator_activity_observed: the report holds no CUDA kernel, memcpy or memset activity.")
	}
	if n, ok := a.Metrics["invalid_record_count"].(int64); ok {
		a.Limitations = append(a.Limitations, fmt.Sprintf("%d kernel, memcpy or memset records end before they start or lack a start, end, device, context or stream (invalid_record_count); they are not listed and not in the figures.", n))
	}
	// The launch query in its stable order (start, kind, table rowid).
	a.Rows = &exportPages[nsys.Launch]{total: fig.Launches, done: done, read: src.LaunchRows,
		encode: func(l *nsys.Launch) (json.RawMessage, error) { return providers.EncodeRow(nsysLaunchRow(l)) }}
	return a, nil
}

// nsysLaunchRow is the launch's inspect_gpu_launches row.
func nsysLaunchRow(l *nsys.Launch) *gen.GpuLaunchRow {
	row := &gen.GpuLaunchRow{Kind: l.Kind, StartNS: nanos(l.Start), EndNS: nanos(l.Stop), DurationNS: nanos(l.Stop - l.Start),
		DeviceID: l.Device, ContextID: l.Context, StreamID: l.Stream, Name: sliceName(l.Name),
		DemangledName: l.Demangled.Ptr(), CopyKind: l.CopyKind.Ptr(), ApiName: l.APIName.Ptr(),
		RegistersPerThread: l.Registers.Ptr(), SharedMemoryBytes: l.SharedMemory.Ptr(), Bytes: l.Bytes.Ptr(), CorrelationID: l.Correlation.Ptr()}
	if gx, ok := l.GridX.Get(); ok {
		gy, _ := l.GridY.Get()
		gz, _ := l.GridZ.Get()
		bx, _ := l.BlockX.Get()
		by, _ := l.BlockY.Get()
		bz, _ := l.BlockZ.Get()
		g := fmt.Sprintf("(%d, %d, %d)", gx, gy, gz)
		b := fmt.Sprintf("(%d, %d, %d)", bx, by, bz)
		row.Grid, row.Block = &g, &b
	}
	if start, ok := l.APIStart.Get(); ok {
		row.ApiStartNS = nanos(start)
		row.LaunchLatencyNS = nanos(l.Start - start)
		// A serialized global thread id holds the thread id in its low 24 bits.
		gtid, _ := l.APIThread.Get()
		tid := gtid & 0xFFFFFF
		row.ApiThreadID = &tid
	}
	return row
}
