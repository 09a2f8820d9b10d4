package trace

import (
	"context"
	"slices"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/fuzztool"
	"github.com/flameox/flameox/providers/trace/nsys"
	"github.com/flameox/flameox/providers/trace/tracemodel/tracemodeltest"
)

// nsysSeed is a small Nsight Systems SQLite export made here (the columns the readers
// select, two kernels with their launches, an NVTX range), so that the target has a seed
// without the shared corpus.
const nsysSeed = `
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER,
  registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
  blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,
  dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL,
  gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER, category INTEGER,
  color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER,
  int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER,
  jsonText TEXT, binaryData TEXT);
INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'void power_iteration<float>(float*)'), (3, 'power_iteration');
INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1754324972242076786, '2025-08-04T16:29:32', '2025-08-04T16:29:32');
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (100, 140, 1, 281641842910938, 7, 1, 0, NULL), (300, 320, 1, 281641842910938, 8, 1, 0, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
  (150, 900, 0, 1, 0, 7, 7, 281641842900992, 2, 3, 2, 1, 3, 16, 64, 1, 1, 128, 1, 1, 0, 0, 0, 23592960, 1, 32768, NULL, 0),
  (950, 1200, 0, 1, 0, 7, 8, 281641842900992, 2, 3, 2, 1, 3, 16, 64, 1, 1, 128, 1, 1, 0, 0, 0, 23592960, 2, 32768, NULL, 0);
INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (50, 1300, 59, 'solve', 281641842910938);
`

// FuzzNsysSQLite: go test ./providers/trace -run '^$' -fuzz FuzzNsysSQLite -fuzztime 20s
// mutates Nsight Systems SQLite exports (the corpus's, a copy cut to the tables the readers
// use with small pages, one made here) and checks that inspect_gpu_launches,
// summarize_trace_operations, the table view and the slice decoder each end in rows or a
// typed provider error naming no path, within fuzztool.HangAfter.
func FuzzNsysSQLite(f *testing.F) {
	fuzztool.AddFile(f, nsysCorpus)
	read := nsys.TablesRead()
	fuzztool.AddTrimmed(f, nsysCorpus, func(t string) bool { return slices.Contains(read, t) }, 24, 512)
	fuzztool.AddSQL(f, 512, nsysSeed)
	f.Fuzz(func(t *testing.T, b []byte) {
		path := fuzztool.WriteInput(t, "report.sqlite", b)
		fuzztool.Bounded(t, func() {
			ctx := context.Background()
			page := func(a *providers.Analysis, err error) {
				fuzztool.CheckError(t, err, path)
				if err != nil {
					return
				}
				p, err := a.Rows.Page(ctx, 0, 200, nil)
				fuzztool.CheckError(t, err, path)
				if err == nil && len(p.Rows) > 200 {
					t.Fatalf("a page of 200 holds %d rows", len(p.Rows))
				}
			}
			req := nsysReq(path)
			page(inspectLaunches(ctx, req))
			page(summarizeOperations(ctx, sliceReq(req)))
			tables := nsysReq(path)
			tables.Fields.View = "tables"
			page(inspectLaunches(ctx, tables))
			sink := &tracemodeltest.Checker{T: t, Tracks: map[int64]bool{}}
			st, err := nsys.Export{In: providers.Input{Path: path, Format: gen.FormatNsysSqlite}}.Decode(ctx, sink)
			fuzztool.CheckError(t, err, path)
			if err == nil {
				tracemodeltest.CheckStats(t, st, sink.Slices)
			}
		})
	})
}
