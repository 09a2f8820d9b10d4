package trace

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// launchKinds are the row kinds by their order key in the launch query.
var launchKinds = [...]string{"kernel", "memcpy", "memset"}

// launchQuery is the union of the export's kernel, memcpy and memset activity, each
// joined to its runtime API call (same correlationId and process; the first such call
// by rowid when an export repeats one) and its names. Its columns:
// ord, start, end, deviceId, contextId, streamId, name, demangled, gridX..Z, blockX..Z,
// registers, shared memory, bytes, copy kind, correlationId, api name, api start,
// api globalTid, rowid.
// launchColumns name the launch query's columns.
var launchColumns = [...]string{"ord", "start", "stop", "device_id", "context_id", "stream_id", "name", "demangled",
	"gx", "gy", "gz", "bx", "by", "bz", "registers", "shared_memory", "bytes", "copy_kind", "correlation_id",
	"api_name", "api_start", "api_tid", "rid"}

// launchValid is the condition a launch record (table alias x) must meet to be a row:
// a start, an end not before it, and its device, context and stream.
func launchValid(x string) string {
	return ` WHERE ` + x + `.start IS NOT NULL AND ` + x + `."end" IS NOT NULL AND ` + x + `."end" >= ` + x + `.start AND ` +
		x + `.deviceId IS NOT NULL AND ` + x + `.contextId IS NOT NULL AND ` + x + `.streamId IS NOT NULL`
}

// launchQuery is the union of the kernel, memcpy and memset records that are rows (those
// launchValid admits).
func (d *nsysDB) launchQuery() string {
	where := launchValid
	api := `SELECT NULL AS cid, NULL AS pid, NULL AS start, NULL AS globalTid, NULL AS nameId WHERE 0`
	if d.tables["CUPTI_ACTIVITY_KIND_RUNTIME"] {
		api = `SELECT correlationId AS cid, globalTid >> 24 AS pid, start, globalTid, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME
			WHERE rowid IN (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId IS NOT NULL GROUP BY correlationId, globalTid >> 24)`
	}
	join := func(x string) string {
		return ` LEFT JOIN api a ON a.cid = ` + x + `.correlationId AND a.pid = ` + x + `.globalPid >> 24 LEFT JOIN StringIds an ON an.id = a.nameId`
	}
	var parts []string
	part := func(from string, exprs ...string) {
		sel := make([]string, len(exprs))
		for i, e := range exprs {
			sel[i] = e + " AS " + launchColumns[i]
		}
		parts = append(parts, "SELECT "+strings.Join(sel, ", ")+" FROM "+from)
	}
	if d.tables["CUPTI_ACTIVITY_KIND_KERNEL"] {
		part(`CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN StringIds sn ON sn.id = k.shortName LEFT JOIN StringIds dn ON dn.id = k.demangledName`+join("k")+where("k"),
			"0", "k.start", "k.\"end\"", "k.deviceId", "k.contextId", "k.streamId", "coalesce(sn.value, '<unnamed>')", "dn.value",
			"k.gridX", "k.gridY", "k.gridZ", "k.blockX", "k.blockY", "k.blockZ",
			"k.registersPerThread", "k.staticSharedMemory + k.dynamicSharedMemory", "NULL", "NULL", "k.correlationId",
			"an.value", "a.start", "a.globalTid", "k.rowid")
	}
	if d.tables["CUPTI_ACTIVITY_KIND_MEMCPY"] {
		label, kind, enum := `m.copyKind`, `CAST(m.copyKind AS TEXT)`, ``
		if d.tables["ENUM_CUDA_MEMCPY_OPER"] {
			label, kind, enum = `coalesce(e.label, m.copyKind)`, `coalesce(e.name, CAST(m.copyKind AS TEXT))`, ` LEFT JOIN ENUM_CUDA_MEMCPY_OPER e ON e.id = m.copyKind`
		}
		part(`CUPTI_ACTIVITY_KIND_MEMCPY m`+enum+join("m")+where("m"),
			"1", "m.start", "m.\"end\"", "m.deviceId", "m.contextId", "m.streamId", "'[CUDA memcpy ' || "+label+" || ']'", "NULL",
			"NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "m.bytes", kind, "m.correlationId",
			"an.value", "a.start", "a.globalTid", "m.rowid")
	}
	if d.tables["CUPTI_ACTIVITY_KIND_MEMSET"] {
		part(`CUPTI_ACTIVITY_KIND_MEMSET s`+join("s")+where("s"),
			"2", "s.start", "s.\"end\"", "s.deviceId", "s.contextId", "s.streamId", "'[CUDA memset]'", "NULL",
			"NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "s.bytes", "NULL", "s.correlationId",
			"an.value", "a.start", "a.globalTid", "s.rowid")
	}
	if len(parts) == 0 {
		return ""
	}
	return `WITH api AS (` + api + `) ` + strings.Join(parts, " UNION ALL ")
}

// launchFigures are inspect_gpu_launches's metrics, from one aggregate over the union.
func (d *nsysDB) launchFigures(ctx context.Context) (map[string]any, int64, error) {
	m := map[string]any{"kernel_count": int64(0), "memcpy_count": int64(0), "memset_count": int64(0), "device_count": int64(0),
		"total_kernel_time_ns": int64(0), "unmatched_api_count": int64(0)}
	var total int64
	if q := d.launchQuery(); q != "" {
		var kernels, memcpy, memset, devices, unmatched sql.NullInt64
		var kernelTime sql.NullInt64
		err := d.sql.QueryRowContext(ctx, `SELECT count(*), sum(ord = 0), sum(ord = 1), sum(ord = 2), count(DISTINCT device_id),
			sum(CASE WHEN ord = 0 THEN stop - start END), sum(api_start IS NULL) FROM (`+q+`)`).
			Scan(&total, &kernels, &memcpy, &memset, &devices, &kernelTime, &unmatched)
		if err != nil {
			return nil, 0, d.sqlErr(ctx, err)
		}
		m["kernel_count"], m["memcpy_count"], m["memset_count"] = kernels.Int64, memcpy.Int64, memset.Int64
		m["device_count"], m["total_kernel_time_ns"], m["unmatched_api_count"] = devices.Int64, nanos(kernelTime.Int64), unmatched.Int64
		// Every record of the three tables (no join needed to count them).
		var records int64
		for _, t := range []string{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"} {
			var n int64
			if !d.tables[t] {
				continue
			}
			if err := d.sql.QueryRowContext(ctx, `SELECT count(*) FROM "`+t+`"`).Scan(&n); err != nil {
				return nil, 0, d.sqlErr(ctx, err)
			}
			records += n
		}
		if records > total {
			m["invalid_record_count"] = records - total
		}
	}
	m["launch_count"] = total
	m["accelerator_activity_observed"] = total > 0
	return m, total, nil
}

// nsysLaunches is inspect_gpu_launches on an Nsight Systems export: its kernels, memcpys
// and memsets by start, each with its launching CUDA runtime call.
func nsysLaunches(ctx context.Context, x nsysSource, limits gen.EffectiveLimits) (*providers.Analysis, error) {
	src, a, done, err := x.export(ctx, limits)
	if err != nil {
		return nil, err
	}
	// A converted report's scratch export lives until the page is read, or until the
	// analysis ends (its context is cancelled when the request is answered).
	context.AfterFunc(ctx, done)
	var total int64
	if src.parquet {
		a.Metrics, total, err = parquetLaunchFigures(ctx, src.in)
	} else {
		err = src.withNsys(ctx, func(d *nsysDB) error {
			m, n, err := d.launchFigures(ctx)
			a.Metrics, total = m, n
			return err
		})
	}
	if err != nil {
		done()
		return nil, err
	}
	if total == 0 {
		a.Limitations = append(a.Limitations, "no_accelerator_activity_observed: the report holds no CUDA kernel, memcpy or memset activity.")
	}
	if n, ok := a.Metrics["invalid_record_count"].(int64); ok {
		a.Limitations = append(a.Limitations, fmt.Sprintf("%d kernel, memcpy or memset records end before they start or lack a start, end, device, context or stream (invalid_record_count); they are not listed and not in the figures.", n))
	}
	// The launch query in its stable order (start, kind, table rowid).
	if src.parquet {
		a.Rows = &parquetPages{in: src.in, total: total, rows: func(p *nsysParquet, offset, end int64) ([]any, error) {
			ls, err := p.launches(offset, end)
			if err != nil {
				return nil, err
			}
			out := make([]any, len(ls))
			for i := range ls {
				if out[i], err = ls[i].row(); err != nil {
					return nil, err
				}
			}
			return out, nil
		}}
		return a, nil
	}
	a.Rows = &sqlPages{src: src, total: total, done: done,
		query: func(_ context.Context, d *nsysDB) (string, error) {
			return d.launchQuery() + ` ORDER BY start, ord, rid`, nil
		},
		scan: func(rows *sql.Rows) (any, error) { return scanLaunch(rows) }}
	return a, nil
}

func scanLaunch(rows *sql.Rows) (*gen.GpuLaunchRow, error) {
	var l nsysLaunch
	if err := rows.Scan(&l.ord, &l.start, &l.stop, &l.dev, &l.ctx, &l.stream, &l.name, &l.demangled, &l.gx, &l.gy, &l.gz, &l.bx, &l.by, &l.bz,
		&l.regs, &l.smem, &l.bytes, &l.copyKind, &l.corr, &l.apiName, &l.apiStart, &l.apiTid, &l.rid); err != nil {
		return nil, err
	}
	return l.row()
}
