// Package prepare owns provider preparation (catalog §3.2, the prepare_providers tool):
// what each preparable provider needs outside Flameox as detected on this machine, the
// words its absence is reported in, and the bounded installation, verification and
// binding of the managed providers Flameox can install itself, py-spy and memray's
// reader, into a Flameox-owned tools directory.
//
// The facts of each provider (its executables, variable, install guidance and notes) are
// not here: the evidence family that uses a provider declares its Tool record and
// registers it (decision 0068); the runtime hands the registered set, as Tools, to
// preparation. This package keeps the mechanics every record shares.
//
// It never runs a system package manager or asks for privileges: host tools and the
// workload interpreter's packages get guidance for this operating system, nothing more.
package prepare

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"

	gen "github.com/flameox/flameox/generated/contracts"
)

// Class is what preparing a provider means for Flameox.
type Class int

const (
	// Managed providers are collectors and readers Flameox installs, verifies and binds itself.
	Managed Class = iota
	// HostTool providers are executables the operator installs; Flameox detects them.
	HostTool
	// Workload providers are packages of the workload's own interpreter, probed by a capture.
	Workload
	// BuiltIn providers are formats Flameox reads natively; nothing is needed.
	BuiltIn
)

// Tool is the record of one preparable provider, declared and registered by the family
// that uses it. prepare_providers reports from it, and every unavailable state of the
// provider is worded from it (Missing).
type Tool struct {
	ID    gen.PreparableProvider
	Class Class
	// Executables are the names a host tool is found by on PATH, in order.
	Executables []string
	// Variable names the environment variable that points Flameox at the executable.
	Variable string
	// Install is the guidance per operating-system family (see Family), "" for any other.
	// A host tool's guidance says how the executable gets on PATH and names Variable.
	Install map[string]string
	// Unsupported is, per operating-system family where the tool does not run, what to
	// use instead; it replaces Install there.
	Unsupported map[string]string
	// Note is guidance that holds everywhere: what the provider is used for.
	Note string
	// Formats are the formats a managed provider's installation reads (memray's reader);
	// the runtime hands its binding to their analyses unless Variable is set.
	Formats []gen.Format
	// Workload is what a managed provider also needs in the workload's interpreter,
	// reported as a workload requirement when it is prepared; "" for nothing.
	Workload string
}

// Tools is the preparable set, sorted by id.
type Tools []Tool

// Lookup returns the preparable provider id, or false.
func (ts Tools) Lookup(id gen.PreparableProvider) (Tool, bool) {
	for _, t := range ts {
		if t.ID == id {
			return t, true
		}
	}
	return Tool{}, false
}

// ReaderOf returns the managed provider whose installation reads format f, or false.
func (ts Tools) ReaderOf(f gen.Format) (Tool, bool) {
	for _, t := range ts {
		if t.Class == Managed && slices.Contains(t.Formats, f) {
			return t, true
		}
	}
	return Tool{}, false
}

// WorkloadRequirement is what a managed provider needs in the workload's interpreter,
// unverified (only a capture probes it), or false when it needs nothing there.
func WorkloadRequirement(t Tool) (gen.ProviderRequirement, bool) {
	if t.Class != Managed || t.Workload == "" {
		return gen.ProviderRequirement{}, false
	}
	return gen.ProviderRequirement{ProviderID: t.ID, Status: "unverified", Guidance: t.Workload}, true
}

// Host is what detection reads from this machine; tests replace it.
type Host struct {
	Getenv   func(string) string
	LookPath func(string) (string, error)
	// Family is the operating-system family guidance is chosen for (see Family).
	Family string
}

// ThisHost is the machine Flameox runs on.
func ThisHost() Host {
	return Host{Getenv: os.Getenv, LookPath: exec.LookPath, Family: Family()}
}

// Locate returns the executable of t on h: the path Variable names when it is set and
// not empty (whatever is there; the caller binds it), else the first of Executables
// found on PATH, in order; false when there is none.
func (t Tool) Locate(h Host) (string, bool) {
	if t.Variable != "" {
		if p := h.Getenv(t.Variable); p != "" {
			return p, true
		}
	}
	for _, e := range t.Executables {
		if p, err := h.LookPath(e); err == nil {
			return p, true
		}
	}
	return "", false
}

// Guidance is t's install guidance for operating-system family: its own entry, Debian's
// for Ubuntu, else the general one; where t does not run, what to use instead.
func (t Tool) Guidance(family string) string {
	if u := t.Unsupported[family]; u != "" {
		return u
	}
	install := t.Install[family]
	if install == "" && family == "ubuntu" {
		install = t.Install["debian"]
	}
	if install == "" {
		install = t.Install[""]
	}
	return install
}

// Requirement reports what provider t needs on host h: detection for a host tool,
// guidance for the others. It never names a host path.
func Requirement(t Tool, h Host) gen.ProviderRequirement {
	r := gen.ProviderRequirement{ProviderID: t.ID}
	switch t.Class {
	case BuiltIn:
		r.Status, r.Guidance = "built_in", t.Note
	case Workload:
		r.Status, r.Guidance = "unverified", t.Note
	default:
		if _, found := t.Locate(h); found {
			r.Status, r.Guidance = "available", strings.TrimSpace(t.Executables[0]+" is available here. "+t.Note)
		} else {
			r.Status, r.Guidance = "missing", strings.TrimSpace(t.Guidance(h.Family)+" "+t.Note)
		}
	}
	return r
}

// Need is what a family says when a host tool or managed provider it needs cannot run.
type Need struct {
	// Purpose is what the tool is needed for, after "is needed": "to read perf.data and
	// to capture with the perf provider".
	Purpose string
	// Why replaces "EXE is not installed or not on PATH" (or, Variable set, "VARIABLE is
	// set but does not name an executable file") where the tool is there but unusable.
	Why string
	// Alternative is what the caller can do without the tool, a clause after "or";
	// "" for nothing.
	Alternative string
}

// retry is the call a remediation ends with once the tool is there.
const retry = "retry the same call"

// Missing words the unavailable state of t on host h for a family's need: the message
// says what is missing (or n.Why) and what it is needed for; the remediation is the next
// action: for a managed provider, prepare_providers (or installing it yourself and
// naming it in Variable); for a host tool, the install guidance for h's operating-system
// family, which names Variable; then retry the same call, or n.Alternative. Where the
// tool does not run on h's family, the remediation is what to use instead.
func (t Tool) Missing(h Host, n Need) (message, remediation string) {
	exe := string(t.ID)
	if len(t.Executables) > 0 {
		exe = t.Executables[0]
	}
	switch {
	case n.Why != "":
		message = n.Why + "; " + exe + " is needed " + n.Purpose
	case t.Variable != "" && h.Getenv(t.Variable) != "":
		message = t.Variable + " is set but does not name an executable file; " + exe + " is needed " + n.Purpose
	default:
		message = exe + " is not installed or not on PATH; it is needed " + n.Purpose
	}
	then := retry
	if n.Alternative != "" {
		then += ", or " + n.Alternative
	}
	switch {
	case t.Unsupported[h.Family] != "":
		remediation = t.Unsupported[h.Family]
	case t.Class == Managed:
		remediation = fmt.Sprintf("Call prepare_providers with provider_ids [%q] (or run `flameox prepare %s`) to install the pinned %s, or install it yourself and set %s to it; then %s.",
			string(t.ID), t.ID, exe, t.Variable, then)
	default:
		remediation = t.Guidance(h.Family) + " Then " + then + "."
	}
	return message, remediation
}

// Family names the operating-system family for guidance: darwin, or on Linux the first
// of ID and ID_LIKE in /etc/os-release that guidance knows (debian, ubuntu, fedora,
// arch, alpine, suse); "" otherwise. It is read once.
func Family() string { return family() }

var family = sync.OnceValue(func() string {
	if goruntime.GOOS == "darwin" {
		return "darwin"
	}
	f, err := os.Open("/etc/os-release")
	if err != nil {
		return ""
	}
	defer f.Close()
	return familyOf(bufio.NewScanner(f))
})

func familyOf(s *bufio.Scanner) string {
	var ids []string
	for n := 0; s.Scan() && n < 200; n++ {
		k, v, ok := strings.Cut(s.Text(), "=")
		if ok && (k == "ID" || k == "ID_LIKE") {
			ids = append(ids, strings.Fields(strings.Trim(v, `"'`))...)
		}
	}
	known := map[string]string{"debian": "debian", "ubuntu": "ubuntu", "fedora": "fedora", "rhel": "fedora", "centos": "fedora",
		"arch": "arch", "alpine": "alpine", "suse": "suse", "opensuse": "suse", "sles": "suse"}
	for _, id := range ids {
		if f, ok := known[id]; ok {
			return f
		}
	}
	return ""
}
