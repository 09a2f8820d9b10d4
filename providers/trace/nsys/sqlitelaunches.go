package nsys

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

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
func (d *db) launchQuery() string {
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

// launchFigures are Launches' figures, from one aggregate over the union.
func (d *db) launchFigures(ctx context.Context) (LaunchFigures, error) {
	var fig LaunchFigures
	if q := d.launchQuery(); q != "" {
		var kernels, memcpy, memset, devices, unmatched sql.NullInt64
		var kernelTime sql.NullInt64
		err := d.sql.QueryRowContext(ctx, `SELECT count(*), sum(ord = 0), sum(ord = 1), sum(ord = 2), count(DISTINCT device_id),
			sum(CASE WHEN ord = 0 THEN stop - start END), sum(api_start IS NULL) FROM (`+q+`)`).
			Scan(&fig.Launches, &kernels, &memcpy, &memset, &devices, &kernelTime, &unmatched)
		if err != nil {
			return LaunchFigures{}, d.sqlErr(ctx, err)
		}
		fig.Kernels, fig.Memcpys, fig.Memsets = kernels.Int64, memcpy.Int64, memset.Int64
		fig.Devices, fig.KernelTime, fig.Unmatched = devices.Int64, kernelTime.Int64, unmatched.Int64
		// Every record of the three tables (no join needed to count them).
		for _, t := range []string{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"} {
			var n int64
			if !d.tables[t] {
				continue
			}
			if err := d.sql.QueryRowContext(ctx, `SELECT count(*) FROM "`+t+`"`).Scan(&n); err != nil {
				return LaunchFigures{}, d.sqlErr(ctx, err)
			}
			fig.Records += n
		}
	}
	return fig, nil
}

// scanLaunch reads a row of the launch query.
func scanLaunch(rows *sql.Rows, l *Launch) error {
	if err := rows.Scan(&l.ord, &l.Start, &l.Stop, &l.Device, &l.Context, &l.Stream, &l.Name, &l.Demangled,
		&l.GridX, &l.GridY, &l.GridZ, &l.BlockX, &l.BlockY, &l.BlockZ, &l.Registers, &l.SharedMemory, &l.Bytes, &l.CopyKind,
		&l.Correlation, &l.APIName, &l.APIStart, &l.APIThread, &l.rid); err != nil {
		return err
	}
	if l.ord < 0 || l.ord >= int64(len(launchKinds)) {
		return fmt.Errorf("launch kind %d", l.ord)
	}
	l.Kind = launchKinds[l.ord]
	return nil
}

// launchQuery is the union of the export's kernel, memcpy and memset activity, each
// joined to its runtime API call (same correlationId and process; the first such call
// by rowid when an export repeats one) and its names. Its columns:
// ord, start, end, deviceId, contextId, streamId, name, demangled, gridX..Z, blockX..Z,
// registers, shared memory, bytes, copy kind, correlationId, api name, api start,
// api globalTid, rowid.
