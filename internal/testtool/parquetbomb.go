package testtool

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// ParquetBomb describes an Nsight Systems parquetdir that is small on disk and large once
// decoded (issue 40): StringIds.parquet holds Rows rows whose value repeats one string of
// ValueBytes, dictionary encoded (one dictionary entry, so each page of indexes is one RLE
// run) and zstd compressed; TARGET_INFO_SESSION_START_TIME.parquet marks the export, and
// CUPTI_ACTIVITY_KIND_KERNEL.parquet holds one kernel (with a CUDA API call in
// CUPTI_ACTIVITY_KIND_RUNTIME.parquet) named by the StringIds id 0, so that every Nsight
// Systems operation reads StringIds to name it. With PadBytes, ThreadNames.parquet holds
// one incompressible blob of that many bytes, which raises the directory's size (and so a
// bound derived from it) without decoding to more.
type ParquetBomb struct {
	Rows, ValueBytes, PadBytes int
}

// Decoded is the bytes the StringIds values decode to.
func (b ParquetBomb) Decoded() int64 { return int64(b.Rows) * int64(b.ValueBytes) }

type bombString struct {
	ID    int64  `parquet:"id,delta,zstd"`
	Value string `parquet:"value,dict,zstd"`
}

type bombStart struct {
	UTCEpochNs int64 `parquet:"utcEpochNs"`
}

// bombKernel has the columns of CUPTI_ACTIVITY_KIND_KERNEL the readers use.
type bombKernel struct {
	Start               int64 `parquet:"start"`
	End                 int64 `parquet:"end"`
	DeviceID            int64 `parquet:"deviceId"`
	ContextID           int64 `parquet:"contextId"`
	StreamID            int64 `parquet:"streamId"`
	CorrelationID       int64 `parquet:"correlationId"`
	GlobalPid           int64 `parquet:"globalPid"`
	DemangledName       int64 `parquet:"demangledName"`
	ShortName           int64 `parquet:"shortName"`
	RegistersPerThread  int64 `parquet:"registersPerThread"`
	GridX               int64 `parquet:"gridX"`
	GridY               int64 `parquet:"gridY"`
	GridZ               int64 `parquet:"gridZ"`
	BlockX              int64 `parquet:"blockX"`
	BlockY              int64 `parquet:"blockY"`
	BlockZ              int64 `parquet:"blockZ"`
	StaticSharedMemory  int64 `parquet:"staticSharedMemory"`
	DynamicSharedMemory int64 `parquet:"dynamicSharedMemory"`
}

// bombRuntime has the columns of CUPTI_ACTIVITY_KIND_RUNTIME the readers use.
type bombRuntime struct {
	Start         int64 `parquet:"start"`
	End           int64 `parquet:"end"`
	GlobalTid     int64 `parquet:"globalTid"`
	CorrelationID int64 `parquet:"correlationId"`
	NameID        int64 `parquet:"nameId"`
}

type bombPad struct {
	ID  int64  `parquet:"id"`
	Pad []byte `parquet:"pad"`
}

// Write writes the directory (created if missing) and returns the bytes of its files.
func (b ParquetBomb) Write(dir string) (int64, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	value := strings.Repeat("x", b.ValueBytes)
	batch := make([]bombString, 4096)
	err := writeParquet(filepath.Join(dir, "StringIds.parquet"), func(f *os.File) error {
		// No bounds or statistics: they would hold the value itself, uncompressed.
		w := parquet.NewGenericWriter[bombString](f, parquet.SkipPageBounds("value"), parquet.SkipPageStatistics("value"))
		for done := 0; done < b.Rows; {
			n := min(len(batch), b.Rows-done)
			for i := range batch[:n] {
				batch[i] = bombString{ID: int64(done + i), Value: value}
			}
			if _, err := w.Write(batch[:n]); err != nil {
				return err
			}
			done += n
		}
		return w.Close()
	})
	if err == nil {
		err = writeParquet(filepath.Join(dir, "TARGET_INFO_SESSION_START_TIME.parquet"), func(f *os.File) error {
			w := parquet.NewGenericWriter[bombStart](f)
			if _, err := w.Write([]bombStart{{UTCEpochNs: 1}}); err != nil {
				return err
			}
			return w.Close()
		})
	}
	if err == nil {
		err = writeParquet(filepath.Join(dir, "CUPTI_ACTIVITY_KIND_KERNEL.parquet"), func(f *os.File) error {
			w := parquet.NewGenericWriter[bombKernel](f)
			k := bombKernel{Start: 150, End: 900, DeviceID: 0, ContextID: 1, StreamID: 7, CorrelationID: 7, GlobalPid: 1 << 24,
				RegistersPerThread: 16, GridX: 64, GridY: 1, GridZ: 1, BlockX: 128, BlockY: 1, BlockZ: 1}
			if _, err := w.Write([]bombKernel{k}); err != nil {
				return err
			}
			return w.Close()
		})
	}
	if err == nil {
		err = writeParquet(filepath.Join(dir, "CUPTI_ACTIVITY_KIND_RUNTIME.parquet"), func(f *os.File) error {
			w := parquet.NewGenericWriter[bombRuntime](f)
			if _, err := w.Write([]bombRuntime{{Start: 100, End: 140, GlobalTid: 1<<24 + 1, CorrelationID: 7}}); err != nil {
				return err
			}
			return w.Close()
		})
	}
	if err == nil && b.PadBytes > 0 {
		err = writeParquet(filepath.Join(dir, "ThreadNames.parquet"), func(f *os.File) error {
			pad := make([]byte, b.PadBytes)
			_, _ = rand.Read(pad)
			w := parquet.NewGenericWriter[bombPad](f, parquet.SkipPageBounds("pad"), parquet.SkipPageStatistics("pad"))
			if _, err := w.Write([]bombPad{{ID: 1, Pad: pad}}); err != nil {
				return err
			}
			return w.Close()
		})
	}
	if err != nil {
		return 0, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			total += info.Size()
		}
	}
	return total, nil
}

func writeParquet(path string, write func(f *os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
