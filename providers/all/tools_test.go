package all

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/prepare"
)

// TestToolsCoverTheContract: every preparable provider of the contract has exactly one
// record, registered by the family that uses it, and no record has an id outside the
// contract (issue 37 item 2, decision 0068). Tools is sorted by id.
func TestToolsCoverTheContract(t *testing.T) {
	r := Registry()
	if err := r.Verify(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tool := range r.Tools() {
		got = append(got, string(tool.ID))
	}
	var want []string
	for _, id := range gen.PreparableProviderValues() {
		want = append(want, string(id))
	}
	slices.Sort(want)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("records (-contract +registered):\n%s", d)
	}
}

// TestToolRecords: each record is complete for its class. A host tool has executables
// and guidance for any family, and every guidance of it is a sentence that names its
// variable, so that the unavailable state (which adds only "then retry the same call")
// tells both ways to make it found; a managed provider names its variable; the others
// have a note and nothing to detect.
func TestToolRecords(t *testing.T) {
	for _, tool := range Registry().Tools() {
		switch tool.Class {
		case prepare.HostTool:
			if len(tool.Executables) == 0 || tool.Install[""] == "" {
				t.Errorf("%s: a host tool without executables or general guidance", tool.ID)
			}
			for family, g := range tool.Install {
				if !strings.Contains(g, tool.Variable) {
					t.Errorf("%s on %q: guidance %q does not name %s", tool.ID, family, g, tool.Variable)
				}
				if !strings.HasSuffix(g, ".") {
					t.Errorf("%s on %q: guidance %q is not a sentence", tool.ID, family, g)
				}
			}
		case prepare.Managed:
			if tool.Variable == "" || tool.Note == "" {
				t.Errorf("%s: a managed provider without a variable or note", tool.ID)
			}
		default:
			if tool.Note == "" || len(tool.Executables) > 0 || tool.Variable != "" || tool.Install != nil {
				t.Errorf("%s: %+v", tool.ID, tool)
			}
		}
	}
}

// host is a fake machine: the executables it has, its environment and OS family.
func host(family string, env map[string]string, has ...string) prepare.Host {
	return prepare.Host{Family: family, Getenv: func(k string) string { return env[k] },
		LookPath: func(name string) (string, error) {
			if slices.Contains(has, name) {
				return "/opt/bin/" + name, nil
			}
			return "", exec.ErrNotFound
		}}
}

// TestRequirementOfRecords: what prepare_providers reports of the registered records.
func TestRequirementOfRecords(t *testing.T) {
	tools := Registry().Tools()
	for _, c := range []struct {
		id           gen.PreparableProvider
		host         prepare.Host
		status, want string
	}{
		{"perf", host("debian", nil), "missing", "apt-get install linux-perf"},
		{"perf", host("ubuntu", nil), "missing", "linux-tools-$(uname -r)"},
		{"perf", host("fedora", nil), "missing", "dnf install perf"},
		{"perf", host("darwin", nil), "missing", "only on Linux"},
		{"perf", host("debian", nil, "perf"), "available", "perf is available here"},
		{"perf", host("", map[string]string{"FLAMEOX_PERF": "/x/perf"}), "available", "perf is available here"},
		{"nsight-systems", host("ubuntu", nil), "missing", "apt-get install nsight-systems-cli"},
		{"nsight-compute", host("", nil), "missing", "developer.nvidia.com/nsight-compute"},
		{"perfetto", host("debian", nil, "trace_processor"), "available", "natively"},
		{"perfetto", host("debian", nil), "missing", "get.perfetto.dev"},
		{"rocprofv3", host("debian", nil), "missing", "rocprofiler-sdk"},
		{"compute-sanitizer", host("debian", nil, "compute-sanitizer"), "available", "NVIDIA GPU"},
		{"otlp", host("debian", nil), "built_in", "natively"},
		{"aiperf", host("debian", nil), "built_in", "natively"},
		{"nvbench", host("debian", nil), "built_in", "C++ library"},
		{"torch", host("debian", nil), "unverified", "torch>=2.7"},
		{"triton", host("debian", nil), "unverified", "triton"},
	} {
		tool, ok := tools.Lookup(c.id)
		if !ok {
			t.Fatalf("%s has no record", c.id)
		}
		r := prepare.Requirement(tool, c.host)
		if r.ProviderID != c.id || r.Status != c.status || !strings.Contains(r.Guidance, c.want) {
			t.Errorf("%s on %q: %+v, want status %s and guidance with %q", c.id, c.host.Family, r, c.status, c.want)
		}
		if strings.Contains(r.Guidance, "/opt/bin") || strings.Contains(r.Guidance, "/x/perf") {
			t.Errorf("%s: guidance names a host path: %q", c.id, r.Guidance)
		}
	}
	memray, _ := tools.Lookup("memray")
	if w, ok := prepare.WorkloadRequirement(memray); !ok || !strings.Contains(w.Guidance, "memray>=1.17") {
		t.Errorf("memray's workload requirement = %+v, %v", w, ok)
	}
	if got, ok := tools.ReaderOf(gen.FormatMemray); !ok || got.ID != "memray" || got.Variable != "FLAMEOX_MEMRAY_PYTHON" {
		t.Errorf("reader of memray = %+v, %v", got, ok)
	}
}
