package runtime

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/sourcefile"
	"github.com/flameox/flameox/internal/testtool"
)

// fakeJSONBin stands in for an NVBench executable run with --jsonbin PATH (decision
// 0063): it writes what NVBench writes there (NVIDIA/nvbench json_printer.cu, the shape
// providers/bench/nvbenchdir_test.go builds on the corpus document): PATH, a results
// document whose states that ran carry nv/cold summaries and, per state, an
// nv/json/bin:nv/cold/sample_times and an nv/json/freqs-bin:nv/cold/sample_freqs summary
// naming PATH-bin/N.bin and PATH-freqs-bin/N.bin (filename relative to the JSON, or, with
// FAKE_MODE=absolute, the absolute path NVBench recorded before #405) and their sample
// count; each file holds the samples as little-endian float32. FAKE_COPY, when set, is a
// directory that receives a copy of what was written, for the test's own reading.
// Other modes misbehave: empty (writes nothing), subdirs (directories, no file), gone
// (removes the directory), link (a valid output plus a symbolic link to a file and one
// to a FIFO outside it), dirlink (the output directory replaced by a link to a valid
// output elsewhere), file (replaced by a file), oddname (a valid output plus a file
// whose name no evidence role can hold), many (FAKE_FILES empty files), big (a results
// file of FAKE_BYTES spaces in braces).
const fakeJSONBin = `#!/usr/bin/env python3
import json, os, random, shutil, struct, sys
args = sys.argv[1:]
out = args[args.index("--jsonbin") + 1]
base, name = os.path.dirname(out), os.path.basename(out)
mode = os.environ.get("FAKE_MODE", "relative")
if mode == "empty":
    sys.exit(0)
if mode == "subdirs":
    os.makedirs(os.path.join(base, "a", "b"))
    sys.exit(0)
if mode == "gone":
    os.rmdir(base)
    sys.exit(0)
if mode == "file":
    os.rmdir(base)
    open(base, "w").write("{}")
    sys.exit(0)
if mode == "many":
    for i in range(int(os.environ["FAKE_FILES"])):
        open(os.path.join(base, "f%06d.bin" % i), "wb").close()
    sys.exit(0)
if mode == "big":
    open(os.path.join(base, name), "wb").write(b"{" + b" " * int(os.environ["FAKE_BYTES"]) + b"}")
    sys.exit(0)
if mode == "dirlink":
    elsewhere = os.path.join(os.getcwd(), "elsewhere")
    os.rmdir(base)
    os.makedirs(elsewhere)
    os.symlink(elsewhere, base)
    base = elsewhere
    out = os.path.join(elsewhere, name)

rng = random.Random(int(os.environ.get("FAKE_SEED", "63")))
def summary(tag, name, hint, typ, value):
    return {"tag": tag, "name": name, "hint": hint, "description": name,
            "data": [{"name": "value", "type": typ, "value": value}]}
benchmarks = [
    {"name": "copy", "axes": [{"name": "T", "type": "type"}],
     "states": [[("T", "type", "I32")], [("T", "type", "F64")]], "skipped": [False, False]},
    {"name": "sweep", "axes": [{"name": "BlockSize", "type": "int64"}, {"name": "NumBlocks", "type": "int64"}],
     "states": [[("BlockSize", "int64", "64"), ("NumBlocks", "int64", "64")],
                [("BlockSize", "int64", "64"), ("NumBlocks", "int64", "256")],
                [("BlockSize", "int64", "256"), ("NumBlocks", "int64", "64")]],
     "skipped": [False, True, False]},
]
for sub in ("-bin", "-freqs-bin"):
    os.makedirs(out + sub)
files = 0
doc = {"meta": {"version": {"json": {"major": 1, "minor": 0, "patch": 0}}}, "devices": [{"id": 0, "name": "Fake GPU"}], "benchmarks": []}
for bi, b in enumerate(benchmarks):
    states = []
    for axes, skipped in zip(b["states"], b["skipped"]):
        st = {"name": "Device=0 " + " ".join("%s=%s" % (a[0], a[2]) for a in axes), "device": 0,
              "axis_values": [{"name": a[0], "type": a[1], "value": a[2]} for a in axes], "is_skipped": skipped}
        if skipped:
            st["skip_reason"] = "Not a supported shape."
            st["summaries"] = []
            states.append(st)
            continue
        n = rng.randint(7, 9)
        mean = rng.uniform(2e-5, 4e-3)
        noise = rng.uniform(0.001, 0.05)
        sums = [summary("nv/cold/sample_size", "Samples", "sample_size", "int64", str(n)),
                summary("nv/cold/time/gpu/mean", "GPU Time", "duration", "float64", repr(mean)),
                summary("nv/cold/time/gpu/stdev/relative", "Noise", "percentage", "float64", repr(noise))]
        for sub, tag, prefix, label, hint in (("-bin", "nv/cold/sample_times", "nv/json/bin:", "Sample Times File", "file/sample_times"),
                                               ("-freqs-bin", "nv/cold/sample_freqs", "nv/json/freqs-bin:", "Sample Frequencies File", "file/sample_freqs")):
            vals = [mean + mean * noise * rng.gauss(0, 1) if tag.endswith("times") else 1.98e9 + 5e6 * rng.gauss(0, 1) for _ in range(n)]
            fname = "%d.bin" % files
            with open(os.path.join(out + sub, fname), "wb") as f:
                f.write(struct.pack("<%df" % n, *vals))
            recorded = name + sub + "/" + fname
            if mode == "absolute":
                recorded = out + sub + "/" + fname
            sums.append({"tag": prefix + tag, "name": label, "hint": hint,
                         "description": "Binary file containing " + hint[5:] + " as little-endian float32.",
                         "data": [{"name": "filename", "type": "string", "value": recorded},
                                  {"name": "size", "type": "int64", "value": str(n)}],
                         "hide": "Not needed in table."})
        files += 1
        st["summaries"] = sums
        states.append(st)
    doc["benchmarks"].append({"name": b["name"], "index": bi, "axes": b["axes"], "states": states})
with open(out, "w") as f:
    json.dump(doc, f, indent=2)
if mode == "link":
    secret = os.path.join(os.getcwd(), "secret.txt")
    open(secret, "w").write("SECRET-OUTSIDE-THE-ARTIFACT\n")
    pipe = os.path.join(os.getcwd(), "pipe")
    os.mkfifo(pipe)
    os.symlink(secret, os.path.join(out + "-bin", "secret.bin"))
    os.symlink(pipe, os.path.join(out + "-bin", "pipe.bin"))
if mode == "oddname":
    open(os.path.join(out + "-bin", "a b.bin"), "wb").close()
if os.environ.get("FAKE_COPY"):
    shutil.copytree(base, os.environ["FAKE_COPY"], symlinks=True)
`

// jsonbinSampleTruth reads an NVBench --jsonbin directory with Python's json and struct
// modules and lists, in document order, every per-sample measurement as Flameox's rows
// state it: benchmark (name:tag), run_index (the state's position, skipped states
// counted), value_index, unit, value (times as whole nanoseconds, half away from zero;
// frequencies in Hz as float32 widened) and the axis values; and the number of the
// JSON's own summary values.
const jsonbinSampleTruth = `
import json, math, os, struct, sys
path = sys.argv[1]
base = os.path.dirname(path)
d = json.load(open(path))
rows, summaries = [], 0
for b in d["benchmarks"]:
    for si, s in enumerate(b["states"]):
        if s.get("is_skipped"):
            continue
        dims = {a["name"]: str(a["value"]) for a in (s.get("axis_values") or [])}
        for m in s.get("summaries") or []:
            data = {x["name"]: x["value"] for x in m["data"]}
            for prefix, unit in (("nv/json/bin:", "ns"), ("nv/json/freqs-bin:", "Hz")):
                if m["tag"].startswith(prefix):
                    break
            else:
                summaries += "value" in data
                continue
            n, name = int(data["size"]), data["filename"]
            if os.path.isabs(name):
                name = os.path.join(os.path.basename(os.path.dirname(name)), os.path.basename(name))
            raw = open(os.path.join(base, name), "rb").read()
            assert len(raw) == 4 * n, (name, len(raw), n)
            for i, v in enumerate(struct.unpack("<%df" % n, raw)):
                if unit == "ns":
                    v = math.floor(v * 1e9 + 0.5)
                rows.append([b["name"] + ":" + m["tag"][len(prefix):], si, i, unit, v, dims])
json.dump({"rows": rows, "summaries": summaries}, sys.stdout)
`

type sampleTruth struct {
	Rows      [][6]any
	Summaries int
}

func jsonbinTruthOf(t *testing.T, python, results string) sampleTruth {
	t.Helper()
	out, err := exec.Command(python, "-c", jsonbinSampleTruth, results).Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var truth sampleTruth
	if err := json.Unmarshal(out, &truth); err != nil {
		t.Fatal(err)
	}
	return truth
}

// checkSampleRows compares the per-sample rows of a summarize_benchmarks page with
// Python's reading, row by row and exactly, and the total with the summary values.
func checkSampleRows(t *testing.T, rows []map[string]any, truth sampleTruth) {
	t.Helper()
	var samples []map[string]any
	for _, r := range rows {
		b, _ := r["benchmark"].(string)
		if strings.HasSuffix(b, ":nv/cold/sample_times") || strings.HasSuffix(b, ":nv/cold/sample_freqs") {
			samples = append(samples, r)
		}
	}
	if len(samples) != len(truth.Rows) || len(truth.Rows) < 50 || len(rows) != len(truth.Rows)+truth.Summaries {
		t.Fatalf("%d rows, %d of them samples; Python reads %d samples and %d summary values", len(rows), len(samples), len(truth.Rows), truth.Summaries)
	}
	for i, r := range samples {
		w := truth.Rows[i]
		value := r["value_int"]
		if w[3] == "Hz" {
			value = r["value_float"]
		}
		dims, _ := json.Marshal(r["dimensions"])
		wantDims, _ := json.Marshal(w[5])
		if r["benchmark"] != w[0] || r["run_index"] != w[1] || r["value_index"] != w[2] || r["unit"] != w[3] || value != w[4] ||
			string(dims) != string(wantDims) || r["is_warmup"] != false {
			t.Fatalf("sample row %d = %v; Python %v", i, r, w)
		}
	}
}

// TestCaptureNVBenchJSONBinDirectory: the nvbench provider runs the workload with
// --jsonbin <dir>/nvbench/results.json and keeps the directory nvbench/ as its artifact,
// a directory source: every sample of every sample file is a row, equal to Python's
// reading of the bytes the workload wrote. Preserved with the capture, the evidence
// holds the directory's members, and summarize_benchmarks over the evidence's analysis
// sources gives the same rows. Pre-#405 absolute filenames read the same files.
func TestCaptureNVBenchJSONBinDirectory(t *testing.T) {
	python := testtool.Require(t, "python3")
	rt := newRuntime(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fake-nvbench"), []byte(fakeJSONBin), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"relative", "absolute"} {
		t.Run(mode, func(t *testing.T) {
			written := filepath.Join(t.TempDir(), "written")
			res, f := call(t, rt, "capture_and_summarize_benchmarks", map[string]any{
				"target": map[string]any{"argv": []string{"./fake-nvbench", "--devices", "0"}, "cwd": dir,
					"environment": map[string]any{"FAKE_MODE": mode, "FAKE_COPY": written}},
				"provider": map[string]any{"kind": "nvbench"}, "preserve": true})
			if f != nil {
				t.Fatal(f)
			}
			cr := res.(*CaptureResult)
			if cr.Status != "complete" || len(cr.Inputs) != 1 || cr.Inputs[0].Format != gen.FormatNvbench || cr.Inputs[0].Role != "capture-0001/benchmark" {
				t.Fatalf("capture = %s inputs %+v failure %+v %+v", cr.Status, cr.Inputs, cr.AnalysisFailure, cr.PreservationFailure)
			}
			ex := cr.Capture.Executions[0]
			argv := ex.CaptureArgv
			if n := len(argv); n != 5 || argv[1] != "--devices" || argv[3] != "--jsonbin" ||
				!strings.HasSuffix(argv[4], "/capture-0001/nvbench/results.json") || len(ex.ArtifactRejections) != 0 {
				t.Errorf("execution = %+v", ex)
			}
			truth := jsonbinTruthOf(t, python, filepath.Join(written, "results.json"))
			rows := tableRows(t, cr)
			checkSampleRows(t, rows, truth)
			// Every sample file was read: no "read as a single file" limitation.
			if cr.Coverage.RowsObserved != int64(len(rows)) || !cr.Coverage.Complete || strings.Contains(strings.Join(cr.Limitations, " "), "were not read") {
				t.Errorf("coverage %+v limitations %q", cr.Coverage, cr.Limitations)
			}
			// The input is the directory the workload wrote: its bundle digest.
			members, sum, size, err := sourcefile.HashDirectory(context.Background(), written, 1000, 1<<30)
			if err != nil || cr.Inputs[0].SHA256 != sum || cr.Inputs[0].SizeBytes != size || len(members) != 9 {
				t.Fatalf("input %+v; the written directory: %d members, %s, %d bytes (%v)", cr.Inputs[0], len(members), sum, size, err)
			}

			// The evidence holds every member, and nothing else (no console: the run
			// wrote its artifact).
			if cr.Preserved == nil || cr.Preserved.ArtifactCount != int64(len(members)) {
				t.Fatalf("preserved %+v (%d members)", cr.Preserved, len(members))
			}
			insp, f := call(t, rt, "inspect_evidence", map[string]any{"evidence_id": cr.Preserved.EvidenceID})
			if f != nil {
				t.Fatal(f)
			}
			ev := insp.(*gen.EvidenceProjection)
			logical, arts := ev.LogicalSources, ev.Body.Artifacts
			if len(ev.AnalysisSources) != 1 || len(logical) != 1 || logical[0].SHA256 != sum || logical[0].Role != "capture-0001/benchmark" ||
				len(arts) != len(members) {
				t.Fatalf("evidence sources %+v artifacts %+v analysis sources %+v", logical, arts, ev.AnalysisSources)
			}
			for i, m := range members {
				if a := arts[i]; a.Role != "capture-0001/benchmark:"+m.Rel || a.SHA256 != m.SHA256 || a.SizeBytes != m.Size {
					t.Errorf("artifact %d = %+v; member %+v", i, a, m)
				}
			}
			again, f := call(t, rt, "summarize_benchmarks", map[string]any{"sources": ev.AnalysisSources})
			if f != nil {
				t.Fatal(f)
			}
			r := again.(*Result)
			if r.Inputs[0].SHA256 != sum || r.Inputs[0].Format != gen.FormatNvbench {
				t.Errorf("re-analysis input %+v", r.Inputs[0])
			}
			want, _ := json.Marshal(rows)
			got, _ := json.Marshal(tableRows(t, r))
			if string(got) != string(want) {
				t.Errorf("rows from the evidence differ from the capture's")
			}
			// Preserving it again answers the same evidence.
			p, f := rt.Preserve(cr.AnalysisID)
			if f != nil || p.EvidenceID != cr.Preserved.EvidenceID {
				t.Errorf("preserve again: %+v %v", p, f)
			}
			// Rescuing it into a new store reads the directory again from its members,
			// which have no payload of the directory's digest.
			if r, f := rt.Rescue(cr.AnalysisID, filepath.Join(t.TempDir(), "rescued")); f != nil || r.EvidenceID == "" {
				t.Errorf("rescue: %+v %v", r, f)
			}
		})
	}
}

// TestCaptureNVBenchDirectoryRefusals: a directory artifact is a real directory of
// regular files within the bounds of a directory source. A link inside it (to a file
// and to a FIFO outside: neither is opened, or the capture would block), the directory
// replaced by a link to a valid output elsewhere or by a file, a file whose name no
// evidence role can hold (its preservation would fail), more files than
// limits.max_input_files (20,000 empty files, more than the broker's measurement walks,
// listed in batches and never hashed) or
// more bytes than max_input_bytes are CAPTURE_ARTIFACT_REJECTED, and a rejected
// directory is discarded; an empty directory, one holding only directories, and one the
// workload removed are CAPTURE_ARTIFACT_MISSING. Nothing outside the directory reaches
// the result or the evidence.
func TestCaptureNVBenchDirectoryRefusals(t *testing.T) {
	testtool.Require(t, "python3")
	rt := newRuntime(t)
	for _, c := range []struct {
		mode, code, says string
		env, limits      map[string]any
	}{
		{mode: "link", code: "CAPTURE_ARTIFACT_REJECTED", says: "symbolic link or special file"},
		{mode: "dirlink", code: "CAPTURE_ARTIFACT_REJECTED", says: "not a directory"},
		{mode: "file", code: "CAPTURE_ARTIFACT_REJECTED", says: "not a directory"},
		{mode: "oddname", code: "CAPTURE_ARTIFACT_REJECTED", says: "cannot be recorded as evidence"},
		{mode: "many", code: "CAPTURE_ARTIFACT_REJECTED", says: "more than limits.max_input_files (4096 files)",
			env: map[string]any{"FAKE_FILES": "20000"}},
		{mode: "big", code: "CAPTURE_ARTIFACT_REJECTED", says: "more than limits.max_input_bytes (4096 bytes)",
			env: map[string]any{"FAKE_BYTES": "5000"}, limits: map[string]any{"max_input_bytes": 4096}},
		{mode: "empty", code: "CAPTURE_ARTIFACT_MISSING"},
		{mode: "subdirs", code: "CAPTURE_ARTIFACT_MISSING"},
		{mode: "gone", code: "CAPTURE_ARTIFACT_MISSING"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "fake-nvbench"), []byte(fakeJSONBin), 0o755); err != nil {
				t.Fatal(err)
			}
			env := map[string]any{"FAKE_MODE": c.mode}
			for k, v := range c.env {
				env[k] = v
			}
			args := map[string]any{"target": map[string]any{"argv": []string{"./fake-nvbench"}, "cwd": dir, "environment": env},
				"provider": map[string]any{"kind": "nvbench"}}
			if c.limits != nil {
				args["limits"] = c.limits
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			raw, _ := json.Marshal(args)
			res, f := rt.Call(ctx, "capture_and_summarize_benchmarks", raw)
			if f != nil {
				t.Fatal(f)
			}
			cr := res.(*CaptureResult)
			ex := cr.Capture.Executions[0]
			if cr.Status != "partial" || ex.FailureCode == nil || *ex.FailureCode != c.code || len(cr.Inputs) != 0 ||
				cr.AnalysisFailure == nil || cr.AnalysisFailure.Details["analysis_source_count"] != 0 {
				t.Fatalf("capture = %s %+v inputs %+v analysis failure %+v", cr.Status, ex, cr.Inputs, cr.AnalysisFailure)
			}
			if c.code == "CAPTURE_ARTIFACT_MISSING" {
				if len(ex.MissingArtifactRoles) != 1 || ex.MissingArtifactRoles[0] != "capture-0001/benchmark" || len(ex.ArtifactRejections) != 0 {
					t.Errorf("missing %v rejections %+v", ex.MissingArtifactRoles, ex.ArtifactRejections)
				}
			} else {
				rj := ex.ArtifactRejections
				if len(rj) != 1 || rj[0].Role != "capture-0001/benchmark" || rj[0].Code != c.code || !strings.Contains(rj[0].Message, c.says) ||
					len(ex.MissingArtifactRoles) != 0 {
					t.Fatalf("rejections %+v missing %v", rj, ex.MissingArtifactRoles)
				}
				if strings.Contains(rj[0].Message, dir) {
					t.Errorf("the rejection names a host path: %s", rj[0].Message)
				}
				// A rejected directory is discarded: the capture's scratch (alive while its
				// analysis is) no longer holds it. What stands in its place otherwise (a link
				// or a file) is left, as a single-file collector's rejected artifact is.
				artifact := filepath.Dir(ex.CaptureArgv[len(ex.CaptureArgv)-1])
				if _, err := os.Lstat(artifact); c.mode != "dirlink" && c.mode != "file" && !os.IsNotExist(err) {
					t.Errorf("the rejected artifact is still in the scratch: %v", err)
				}
			}
			// What the links name outside is untouched.
			if _, err := os.Stat(filepath.Join(dir, "secret.txt")); c.mode == "link" && err != nil {
				t.Errorf("the link's target outside was removed: %v", err)
			}
			if _, err := os.Stat(filepath.Join(dir, "elsewhere", "results.json")); c.mode == "dirlink" && err != nil {
				t.Errorf("the directory the link named outside was touched: %v", err)
			}
			// The evidence is the console excerpts; nothing of the directory, or from
			// outside it, is in the result or the evidence.
			p, f := call(t, rt, "preserve_evidence", map[string]any{"analysis_id": cr.AnalysisID})
			if f != nil {
				t.Fatal(f)
			}
			pr := p.(*gen.PreservationResult)
			if pr.ArtifactCount != 2 {
				t.Errorf("preserved %+v", pr)
			}
			insp, f := call(t, rt, "inspect_evidence", map[string]any{"evidence_id": pr.EvidenceID})
			if f != nil {
				t.Fatal(f)
			}
			for _, b := range []any{cr, insp} {
				if out, _ := json.Marshal(b); strings.Contains(string(out), "SECRET-OUTSIDE") {
					t.Errorf("the content of a file outside the artifact reached %T", b)
				}
			}
		})
	}
}

// TestCaptureNVBenchDirectoryAnalysisFailure: a directory artifact whose analysis fails
// (its results.json is not NVBench's) is still the capture's evidence: the input is the
// directory, preserved member by member, and summarize_benchmarks over the evidence
// fails the same way.
func TestCaptureNVBenchDirectoryAnalysisFailure(t *testing.T) {
	testtool.Require(t, "python3")
	rt := newRuntime(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fake-nvbench"), []byte(fakeJSONBin), 0o755); err != nil {
		t.Fatal(err)
	}
	res, f := call(t, rt, "capture_and_summarize_benchmarks", map[string]any{
		"target": map[string]any{"argv": []string{"./fake-nvbench"}, "cwd": dir,
			"environment": map[string]any{"FAKE_MODE": "big", "FAKE_BYTES": "10"}},
		"provider": map[string]any{"kind": "nvbench"}, "preserve": true})
	if f != nil {
		t.Fatal(f)
	}
	cr := res.(*CaptureResult)
	af := cr.AnalysisFailure
	if cr.Status != "partial" || af == nil || af.Code != gen.FailureCodeDecodeFailure || af.Details["analysis_source_count"] != 1 ||
		af.Details["member"] != "results.json" || len(cr.Inputs) != 1 || cr.Inputs[0].SizeBytes != 12 || cr.Inputs[0].Role != "capture-0001/benchmark" {
		t.Fatalf("capture = %s inputs %+v failure %+v", cr.Status, cr.Inputs, af)
	}
	if cr.Preserved == nil || cr.Preserved.ArtifactCount != 1 || cr.NextAction == nil || cr.NextAction.CallTool == nil ||
		cr.NextAction.CallTool.Tool != "inspect_evidence" {
		t.Fatalf("preserved %+v next %+v failure %+v", cr.Preserved, cr.NextAction, cr.PreservationFailure)
	}
	insp, f := call(t, rt, "inspect_evidence", map[string]any{"evidence_id": cr.Preserved.EvidenceID})
	if f != nil {
		t.Fatal(f)
	}
	ev := insp.(*gen.EvidenceProjection)
	_, f = call(t, rt, "summarize_benchmarks", map[string]any{"sources": ev.AnalysisSources})
	if f == nil || f.Code != gen.FailureCodeDecodeFailure || f.Details["member"] != "results.json" {
		t.Errorf("re-analysis from the evidence: %v", f)
	}
}

// TestCaptureNVBenchDirectoryExperiment: an experiment keeps one directory per
// execution, each a source with its case and block as producer, so the cases stay
// apart in the rows; the preserved evidence replays to the same rows.
func TestCaptureNVBenchDirectoryExperiment(t *testing.T) {
	testtool.Require(t, "python3")
	rt := newRuntime(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fake-nvbench"), []byte(fakeJSONBin), 0o755); err != nil {
		t.Fatal(err)
	}
	res, f := call(t, rt, "capture_and_summarize_benchmarks", map[string]any{
		"target": map[string]any{"argv": []string{"./fake-nvbench"}, "cwd": dir}, "provider": map[string]any{"kind": "nvbench"},
		"preserve": true,
		"experiment": map[string]any{"cases": []any{
			map[string]any{"name": "baseline", "environment": map[string]any{"FAKE_SEED": "1"}},
			map[string]any{"name": "candidate", "environment": map[string]any{"FAKE_SEED": "2"}}},
			"blocks": 1, "seed": 3, "practical_threshold": 1e9}})
	if f != nil {
		t.Fatal(f)
	}
	cr := res.(*CaptureResult)
	if cr.Status != "complete" || len(cr.Inputs) != 2 || cr.Preserved == nil || cr.Preserved.ArtifactCount != 18 {
		t.Fatalf("capture = %s inputs %+v preserved %+v failure %+v", cr.Status, cr.Inputs, cr.Preserved, cr.AnalysisFailure)
	}
	cases := map[string]bool{}
	for _, in := range cr.Inputs {
		if in.Producer == nil || in.Format != gen.FormatNvbench {
			t.Fatalf("input %+v", in)
		}
		cases[*in.Producer] = true
	}
	if !cases["flameox-capture block=1 case=baseline"] || !cases["flameox-capture block=1 case=candidate"] {
		t.Errorf("producers %v", cases)
	}
	rows := tableRows(t, cr)
	variants := map[any]bool{}
	for _, r := range rows {
		variants[r["variant"]] = true
	}
	if !variants["baseline"] || !variants["candidate"] || len(variants) != 2 {
		t.Errorf("variants %v", variants)
	}
	insp, f := call(t, rt, "inspect_evidence", map[string]any{"evidence_id": cr.Preserved.EvidenceID})
	if f != nil {
		t.Fatal(f)
	}
	again, f := call(t, rt, "summarize_benchmarks", map[string]any{"sources": insp.(*gen.EvidenceProjection).AnalysisSources})
	if f != nil {
		t.Fatal(f)
	}
	want, _ := json.Marshal(rows)
	got, _ := json.Marshal(tableRows(t, again))
	if string(got) != string(want) {
		t.Errorf("rows from the evidence differ from the capture's")
	}
}
