package trace

import (
	"context"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/nsys"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// nsysForm is the form of an Nsight Systems source, as the format table opened it.
type nsysForm uint8

const (
	// nsysFormSQLite is nsys export --type sqlite's database, read in SQL.
	nsysFormSQLite nsysForm = iota
	// nsysFormReport is a .nsys-rep report, converted to its SQLite export with the
	// installed nsys (nsysrep.go).
	nsysFormReport
	// nsysFormParquet is nsys export --type parquetdir's directory, read natively
	// (decision 0057).
	nsysFormParquet
)

// nsysSource is an Nsight Systems source, read by providers/trace/nsys (an nsys.Export).
// It has every capability: slices (nsys.Export.Decode, after prepare converts a report),
// its own operations (nsysops.go), lifecycle (nsyslifecycle.go), GPU launches
// (nsyslaunch.go) and view "tables" (nsystables.go).
type nsysSource struct {
	sourceBase
	form nsysForm
}

// nsysProvider identifies the native SQLite reader.
func nsysProvider() gen.Provider {
	return gen.Provider{ID: "nsight-systems-sqlite", Version: "native-1"}
}

// nsysParquetProvider identifies the parquetdir reader (catalog §1.3).
func nsysParquetProvider() gen.Provider {
	return gen.Provider{ID: "nsight-systems-parquetdir", Version: "parquetdir-v1"}
}

// export is the export the source is read from (a report converted with nsys export, a
// parquetdir read natively), the analysis that names its reader, and the function that
// removes a conversion's scratch directory.
func (x nsysSource) export(ctx context.Context, limits gen.EffectiveLimits) (nsys.Export, *providers.Analysis, func(), error) {
	in := x.in
	switch x.form {
	case nsysFormParquet:
		if err := nsys.CheckParquetDir(in); err != nil {
			return nsys.Export{}, nil, nil, err
		}
		return nsys.Export{In: in, Parquet: true}, &providers.Analysis{Provider: nsysParquetProvider()}, func() {}, nil
	case nsysFormReport:
	default:
		return nsys.Export{In: in}, &providers.Analysis{Provider: nsysProvider()}, func() {}, nil
	}
	conv, exe, done, err := convertNsysRep(ctx, in, limits)
	if err != nil {
		return nsys.Export{}, nil, nil, err
	}
	return nsys.Export{In: conv}, nsysRepAnalysis(exe), done, nil
}

// prepare is what a trace operation reads: a report converted to its SQLite export,
// declared nsys-sqlite (the analysis names the converting nsys), else the source itself.
func (x nsysSource) prepare(ctx context.Context, limits gen.EffectiveLimits) (providers.Input, *providers.Analysis, func(), error) {
	src, a, done, err := x.export(ctx, limits)
	if err != nil {
		return x.in, nil, nil, err
	}
	return src.In, a, done, nil
}

// slices reads the export's kernels, memcpys, memsets, CUDA API calls and NVTX ranges in
// start order (nsys.Export.Decode).
func (x nsysSource) slices(ctx context.Context, nest *tracemodel.Nester, s *scan) (err error) {
	s.stats, err = nsys.Export{In: x.in, Parquet: x.form == nsysFormParquet}.Decode(ctx, nest)
	return err
}

func (x nsysSource) operations(ctx context.Context, limits gen.EffectiveLimits, f *filter) (*providers.Analysis, error) {
	return nsysOperations(ctx, x, limits, f)
}

func (x nsysSource) lifecycle(ctx context.Context, limits gen.EffectiveLimits) (*providers.Analysis, error) {
	return nsysLifecycle(ctx, x, limits)
}

func (x nsysSource) gpuLaunches(ctx context.Context, limits gen.EffectiveLimits) (*providers.Analysis, error) {
	return nsysLaunches(ctx, x, limits)
}

// hasTables: an export has view "tables" for the operations §1.4 gives table prefixes
// (tableViews).
func (x nsysSource) hasTables(op gen.OperationName) bool {
	_, ok := tableViews[op]
	return ok
}

func (x nsysSource) tables(ctx context.Context, op gen.OperationName, f *gen.TableViewFields, limits gen.EffectiveLimits) (*providers.Analysis, error) {
	return nsysTablesAnalysis(ctx, op, f, x, limits)
}
