package bench

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/flameox/flameox/providers"
)

// NVBench results come two ways (decision 0058): the JSON document nvbench --json
// writes (a file source), and the directory nvbench --jsonbin writes (a directory
// source, the upstream capture's artifact): the same JSON document beside sidecar
// directories of per-sample files. For each state and measurement, --jsonbin adds a
// summary tagged nv/json/bin:<tag> (sample times, hint file/sample_times) or
// nv/json/freqs-bin:<tag> (SM clock frequencies, file/sample_freqs) whose data name
// the file ("filename", relative to the JSON's directory since NVBench #405, the path
// --jsonbin was given plus "-bin/N.bin" before it) and its value count ("size"); the
// file holds that many little-endian float32 values (NVIDIA/nvbench json_printer.cu).

// nvbenchSidecars are the summary tag prefixes of sample files, the sidecar directory
// suffix NVBench writes them under, and the unit of their values.
var nvbenchSidecars = []struct{ prefix, dirSuffix, unit string }{
	{"nv/json/bin:", "-bin", "seconds"},
	{"nv/json/freqs-bin:", "-freqs-bin", "Hz"},
}

// nvbenchSampleBytes is the size of one stored sample (float32).
const nvbenchSampleBytes = 4

// sampleFileName is a sample file's name as NVBench writes it.
var sampleFileName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]{1,19}\.bin$`) })

type nvbenchDoc struct {
	Benchmarks []struct {
		Name   string `json:"name"`
		States []struct {
			Name       string `json:"name"`
			IsSkipped  bool   `json:"is_skipped"`
			AxisValues []struct {
				Name  string `json:"name"`
				Value any    `json:"value"`
			} `json:"axis_values"`
			Summaries []struct {
				Tag  string `json:"tag"`
				Hint string `json:"hint"`
				Data []struct {
					Name  string `json:"name"`
					Value any    `json:"value"`
				} `json:"data"`
			} `json:"summaries"`
		} `json:"states"`
	} `json:"benchmarks"`
}

// DecodeNVBench reads NVBench JSON output: one measurement per state and summary that
// carries a value; durations become nanoseconds, axis values are dimensions. The
// sample files a --jsonbin document names are not read (a file source cannot reach
// them): decodeNVBenchDir reads them.
func DecodeNVBench(r io.Reader, input int) ([]Measurement, error) {
	var out []Measurement
	if _, err := decodeNVBench(r, input, nil, func(m *Measurement) error {
		out = append(out, *m)
		return nil
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// decodeNVBench reads an NVBench JSON document, handing each measurement to emit. With
// dir, the sample files its nv/json/bin summaries name are read from that directory
// and each sample is a measurement of the series <benchmark>:<tag> (run: the state,
// index: the sample); without, they are counted and returned as unread.
func decodeNVBench(r io.Reader, input int, dir *nvbenchDir, emit emitter) (unread int, err error) {
	b, err := readBounded(r, "the NVBench document")
	if err != nil {
		return 0, err
	}
	var doc nvbenchDoc
	if err := json.Unmarshal(b, &doc); err != nil || doc.Benchmarks == nil {
		return 0, &providers.DecodeError{Message: "the input is not NVBench JSON (no benchmarks)"}
	}
	b = nil
	for bi, bm := range doc.Benchmarks {
		for si, st := range bm.States {
			if st.IsSkipped {
				continue
			}
			dims := map[string]string{}
			for _, a := range st.AxisValues {
				dims[a.Name] = fmt.Sprint(a.Value)
			}
			for mi, s := range st.Summaries {
				if sc, tag, ok := sidecarOf(s.Tag); ok {
					ref := nvbenchRef{field: []any{"benchmarks", bi, "states", si, "summaries", mi}, unit: sc.unit, dirSuffix: sc.dirSuffix}
					for di, d := range s.Data {
						switch d.Name {
						case "filename":
							ref.filename, ref.filenameAt = fmt.Sprint(d.Value), di
							ref.hasFilename = true
						case "size":
							ref.size, ref.sizeAt = fmt.Sprint(d.Value), di
							ref.hasSize = true
						}
					}
					if !ref.hasFilename {
						// NVBench omits filename and size when it failed to write the file.
						continue
					}
					if dir == nil {
						unread++
						continue
					}
					m := Measurement{Input: input, Benchmark: bm.Name + ":" + tag, Run: si, Loops: 1, Dimensions: dims}
					if err := dir.read(&ref, func(i int, v float64) error {
						nv, nu, isInt := normalize(v, ref.unit)
						if err := finite(nv, "NVBench %s state %d sample %d of %s", bm.Name, si, i, tag); err != nil {
							return withField(err, ref.field)
						}
						m.Index, m.Value, m.Unit, m.Integer = i, nv, nu, isInt
						return emit(&m)
					}); err != nil {
						return unread, err
					}
					continue
				}
				for _, d := range s.Data {
					if d.Name != "value" {
						continue
					}
					v, err := strconv.ParseFloat(fmt.Sprint(d.Value), 64)
					if err != nil {
						return unread, &providers.DecodeError{Message: fmt.Sprintf("NVBench %s state %d summary %s has a non-numeric value", bm.Name, si, s.Tag)}
					}
					unit := s.Hint
					if unit == "duration" {
						unit = "seconds"
					}
					nv, nu, isInt := normalize(v, unit)
					if err := finite(nv, "NVBench %s state %d summary %s", bm.Name, si, s.Tag); err != nil {
						return unread, err
					}
					m := Measurement{Input: input, Benchmark: bm.Name + ":" + s.Tag, Unit: nu, Value: nv, Integer: isInt,
						Run: si, Loops: 1, Dimensions: dims}
					if err := emit(&m); err != nil {
						return unread, err
					}
				}
			}
		}
	}
	return unread, nil
}

// sidecarOf reports whether a summary tag names a sample file, and the measurement tag
// after its prefix.
func sidecarOf(tag string) (sc struct{ prefix, dirSuffix, unit string }, rest string, ok bool) {
	for _, c := range nvbenchSidecars {
		if r, found := strings.CutPrefix(tag, c.prefix); found && r != "" {
			return c, r, true
		}
	}
	return sc, "", false
}

// withField adds a document field path to a DecodeError that has none.
func withField(err error, field []any) error {
	var de *providers.DecodeError
	if errors.As(err, &de) {
		if de.Details == nil {
			de.Details = map[string]any{}
		}
		if _, ok := de.Details["document_field_path"]; !ok {
			de.Details["document_field_path"] = field
		}
	}
	return err
}

// nvbenchRef is one sample-file summary: where it is in the document and what it says.
type nvbenchRef struct {
	field                []any
	unit, dirSuffix      string
	filename, size       string
	filenameAt, sizeAt   int
	hasFilename, hasSize bool
}

func (r *nvbenchRef) at(di int) []any {
	return append(append([]any{}, r.field...), "data", di, "value")
}

// nvbenchDir reads the sample files of an NVBench --jsonbin directory source. Only the
// directory's members (regular files the runtime hashed, within max_input_files and
// max_input_bytes) are read, each at most once, through an os.Root, so no name (.., an
// absolute path, a link) reaches outside the directory; a file must hold exactly the
// samples its summary counts, and the samples of all files are bounded by
// MaxMeasurements before any is read.
type nvbenchDir struct {
	ctx     context.Context
	root    *os.Root
	json    string
	members map[string]int64
	done    map[string]bool
	samples int64
	source  int
}

// decodeNVBenchDir reads an NVBench --jsonbin directory source (decision 0058).
func decodeNVBenchDir(ctx context.Context, in providers.Input, emit emitter) error {
	results, err := nvbenchResults(in)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(in.Path)
	if err != nil {
		return &providers.InputError{Source: in.Index, Message: fmt.Sprintf("source %d (a directory) could not be read", in.Index), Err: err}
	}
	defer root.Close()
	d := &nvbenchDir{ctx: ctx, root: root, json: results, members: map[string]int64{}, done: map[string]bool{}, source: in.Index}
	for _, m := range in.Members {
		d.members[m.Rel] = m.Size
	}
	f, err := d.open(results)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = decodeNVBench(ctxReader{ctx, f}, in.Index, d, emit)
	return withMember(err, results)
}

// withMember names the member a DecodeError or LimitError is about.
func withMember(err error, member string) error {
	if err == nil {
		return nil
	}
	var de *providers.DecodeError
	if errors.As(err, &de) {
		if de.Details == nil {
			de.Details = map[string]any{}
		}
		if _, ok := de.Details["member"]; !ok {
			de.Details["member"] = member
		}
	}
	return err
}

// nvbenchResults is the member holding the NVBench JSON document: the top-level .json
// file that has a sidecar directory, else the only top-level .json file.
func nvbenchResults(in providers.Input) (string, error) {
	var all, withSidecar []string
	for _, m := range in.Members {
		if strings.Contains(m.Rel, "/") || !strings.HasSuffix(strings.ToLower(m.Rel), ".json") {
			continue
		}
		all = append(all, m.Rel)
		for _, o := range in.Members {
			if hasSidecar(m.Rel, o.Rel) {
				withSidecar = append(withSidecar, m.Rel)
				break
			}
		}
	}
	pick := withSidecar
	if len(pick) == 0 {
		pick = all
	}
	switch {
	case len(pick) == 1:
		return pick[0], nil
	case len(pick) == 0:
		return "", &providers.DecodeError{Source: in.Index,
			Message: "the directory holds no NVBench results file at its top level: nvbench --jsonbin DIR/results.json writes results.json (and results.json-bin/) there",
			Details: map[string]any{"reason": "no_results_json"}}
	}
	return "", &providers.DecodeError{Source: in.Index, Message: fmt.Sprintf(
		"the directory holds %d candidate NVBench results files at its top level; give a directory holding one --jsonbin output", len(pick)),
		Details: map[string]any{"reason": "several_results_json", "candidates": pick[:min(len(pick), 8)]}}
}

// hasSidecar reports whether member rel lies in a sidecar directory of results.
func hasSidecar(results, rel string) bool {
	for _, c := range nvbenchSidecars {
		if strings.HasPrefix(rel, results+c.dirSuffix+"/") {
			return true
		}
	}
	return false
}

// isNVBenchDirNames is the directory detection: a top-level X.json beside X.json-bin
// or X.json-freqs-bin (what nvbench --jsonbin X.json writes).
func isNVBenchDirNames(names []string) bool {
	have := make(map[string]bool, len(names))
	for _, n := range names {
		have[n] = true
	}
	for _, n := range names {
		if !strings.HasSuffix(strings.ToLower(n), ".json") {
			continue
		}
		for _, c := range nvbenchSidecars {
			if have[n+c.dirSuffix] {
				return true
			}
		}
	}
	return false
}

// resolve maps a summary's filename to a member of the directory. A relative name is
// relative to the JSON's directory (NVBench #405) and must stay inside the source; an
// absolute name (NVBench before #405 recorded the path --jsonbin was given) is read as
// the sidecar file it names, <results>-bin/N.bin beside the JSON, and never opened as
// given; a relative name not found as given is read the same way (the pre-#405 name
// relative to NVBench's working directory).
func (d *nvbenchDir) resolve(ref *nvbenchRef) (string, error) {
	name := ref.filename
	field := ref.at(ref.filenameAt)
	bad := func(reason, msg string) error {
		return &providers.DecodeError{Message: "NVBench sample file " + strconv.Quote(name) + " " + msg,
			Details: map[string]any{"document_field_path": field, "reason": reason}}
	}
	if name == "" || strings.ContainsRune(name, 0) {
		return "", bad("bad_filename", "is not a file name")
	}
	// NVBench on Windows writes its native separator.
	slashed := strings.ReplaceAll(name, `\`, "/")
	abs := path.IsAbs(slashed) || len(slashed) > 2 && slashed[1] == ':' && slashed[2] == '/'
	if !abs {
		clean := path.Clean(slashed)
		if !fs.ValidPath(clean) || clean == "." {
			return "", bad("path_escape", "leaves the source directory (a relative name with ..); NVBench names its sample files relative to the results JSON, inside its directory")
		}
		rel := path.Join(path.Dir(d.json), clean)
		if _, ok := d.members[rel]; ok {
			return rel, nil
		}
	}
	if tail, ok := d.sidecarTail(slashed, ref.dirSuffix); ok {
		if _, found := d.members[tail]; found {
			return tail, nil
		}
		return "", bad("missing_file", fmt.Sprintf("is not in the source directory (looked for %s); keep the --jsonbin output directory whole", tail))
	}
	if abs {
		return "", bad("path_escape", "is an absolute path that is not a sample file beside the results JSON; only files inside the source directory are read")
	}
	return "", bad("missing_file", "is not in the source directory; keep the --jsonbin output directory whole")
}

// sidecarTail is the member a name ending in <results>-bin/N.bin stands for: that file
// beside the results JSON.
func (d *nvbenchDir) sidecarTail(slashed, dirSuffix string) (string, bool) {
	file := path.Base(slashed)
	dir := path.Base(path.Dir(slashed))
	if !sampleFileName().MatchString(file) || dir != path.Base(d.json)+dirSuffix {
		return "", false
	}
	return path.Join(path.Dir(d.json), dir, file), true
}

// open opens member rel for reading: a regular file of the size the runtime hashed.
func (d *nvbenchDir) open(rel string) (*os.File, error) {
	want, ok := d.members[rel]
	if !ok {
		return nil, &providers.DecodeError{Message: "the NVBench file " + strconv.Quote(rel) + " is not a member of the source directory",
			Details: map[string]any{"member": rel, "reason": "missing_file"}}
	}
	f, err := d.root.Open(rel)
	if err != nil {
		return nil, &providers.InputError{Source: d.source, Message: "the NVBench file " + strconv.Quote(rel) + " of the source directory could not be opened (it changed or is not inside the directory)", Err: err}
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() != want {
		f.Close()
		return nil, &providers.InputError{Source: d.source, Message: "the NVBench file " + strconv.Quote(rel) + " of the source directory changed after it was hashed", Err: err}
	}
	return f, nil
}

// read reads the samples of one sample-file summary, handing each to each.
func (d *nvbenchDir) read(ref *nvbenchRef, each func(i int, v float64) error) error {
	if !ref.hasSize {
		return &providers.DecodeError{Message: "an NVBench sample-file summary names a file but no size",
			Details: map[string]any{"document_field_path": append(append([]any{}, ref.field...), "data"), "reason": "missing_size"}}
	}
	sizeField := ref.at(ref.sizeAt)
	count, err := strconv.ParseInt(ref.size, 10, 64)
	if err != nil || count < 0 {
		return &providers.DecodeError{Message: fmt.Sprintf("an NVBench sample-file size %q is not a count", ref.size),
			Details: map[string]any{"document_field_path": sizeField, "reason": "bad_size"}}
	}
	if count > MaxMeasurements-d.samples {
		return &providers.LimitError{Message: fmt.Sprintf("the NVBench sample files hold more than %d samples", MaxMeasurements),
			Limit: MaxMeasurements, Unit: "measurements", Details: map[string]any{"document_field_path": sizeField}}
	}
	rel, err := d.resolve(ref)
	if err != nil {
		return err
	}
	if d.done[rel] {
		return &providers.DecodeError{Message: "the NVBench sample file " + strconv.Quote(rel) + " is named by two summaries; each sample file belongs to one measurement",
			Details: map[string]any{"document_field_path": ref.at(ref.filenameAt), "member": rel, "reason": "duplicate_file"}}
	}
	d.done[rel] = true
	if got := d.members[rel]; got != count*nvbenchSampleBytes {
		return &providers.DecodeError{Message: fmt.Sprintf("the NVBench sample file %q holds %d bytes; its summary's size %d needs %d (float32 samples)", rel, got, count, count*nvbenchSampleBytes),
			Details: map[string]any{"document_field_path": sizeField, "member": rel, "reason": "size_mismatch", "file_bytes": got, "size": count}}
	}
	d.samples += count
	f, err := d.open(rel)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	var buf [nvbenchSampleBytes]byte
	for i := range int(count) {
		if i&0xffff == 0 {
			if err := d.ctx.Err(); err != nil {
				return err
			}
		}
		if _, err := io.ReadFull(br, buf[:]); err != nil {
			return &providers.InputError{Source: d.source, Message: "the NVBench sample file " + strconv.Quote(rel) + " changed while it was read", Err: err}
		}
		v := float64(math.Float32frombits(binary.LittleEndian.Uint32(buf[:])))
		if err := each(i, v); err != nil {
			return withMember(err, rel)
		}
	}
	return nil
}

// ctxReader observes ctx on every read.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
