package update

import (
	"context"
	"path/filepath"
	"slices"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/setup"
)

// Options of Run.
type Options struct {
	// Env resolves the clients' configuration paths (setup.Locate); the zero Env is the
	// process's environment and working directory.
	Env setup.Env
	// Clients limits the run to these client ids; none: every configured client.
	Clients []string
	// Version is the canonical target release (Canonical); "" resolves the latest
	// release on the module proxy, which never downgrades a client.
	Version string
	// GOPROXY is the module proxy list the latest release is looked up on (ProxyURL).
	GOPROXY string
	// Running is the report's running_version.
	Running string
	// Check and DryRun report only: nothing is installed or written.
	Check, DryRun bool
	// DataDir returns the Flameox data directory; releases are installed beside it
	// (VersionsDir). It is asked only once a release is to be resolved.
	DataDir func() (string, error)
	// Progress is told each step; nil is told nothing.
	Progress setup.Progress
}

// Report is the JSON report of flameox update (catalog §11.3, for a Go binary: the
// launcher's command is a versioned flameox executable, so there is no requirement).
type Report struct {
	TargetVersion   string            `json:"target_version"`
	TargetSource    string            `json:"target_source"`
	RunningVersion  string            `json:"running_version"`
	Check           bool              `json:"check"`
	DryRun          bool              `json:"dry_run"`
	UpdateAvailable bool              `json:"update_available"`
	InstallPath     string            `json:"install_path"`
	Installed       bool              `json:"installed"`
	Clients         []ClientState     `json:"clients"`
	RestartRequired bool              `json:"restart_required"`
	NextAction      *setup.NextAction `json:"next_action"`
}

// ClientState is one configured client of the report.
type ClientState struct {
	ID              string  `json:"id"`
	Name            string  `json:"name"`
	Path            string  `json:"path"`
	Command         string  `json:"command"`
	PreviousVersion *string `json:"previous_version"`
	// Status: already_current | update_available | updated | newer_than_target (automatic
	// selection never downgrades) | unrecognized (a flameox entry update does not own) |
	// refused (the file cannot be edited safely).
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// VersionsDir is where releases are installed: beside the evidence store, not in it (the
// store's root admits only repository content), as <store>-versions/<version>/flameox.
func VersionsDir(store string) string {
	return filepath.Join(filepath.Dir(store), filepath.Base(store)+"-versions")
}

// target is a configured client that update may repoint, and its index in the report.
type target struct {
	cl    setup.Client
	state int
}

// Run is flameox update: it finds the clients whose flameox entry runs a flameox
// executable as `mcp serve`, resolves the target release, and unless the run is a check
// or a dry run installs it (Install) and repoints each client atomically
// (setup.ApplyAll). The report is nil when nothing is to be printed (the environment,
// the release lookup or the install failed); otherwise it is printed before the error,
// a typed failure.
func Run(ctx context.Context, opts Options) (*Report, error) {
	prog := setup.OrNone(opts.Progress)
	prog.Update(0, 0, "finding the configured clients")
	all, err := setup.Locate(opts.Env)
	if err != nil {
		return nil, err
	}
	rep := &Report{RunningVersion: opts.Running, Check: opts.Check, DryRun: opts.DryRun, Clients: []ClientState{}}
	found := configured(ctx, all, opts.Clients, rep)
	if len(found) == 0 {
		return rep, failure.New(gen.FailureCodeSetupFailure, "No configured Flameox MCP clients found. Run flameox setup first.")
	}
	explicit := opts.Version != ""
	if explicit {
		rep.TargetVersion, rep.TargetSource = opts.Version, "explicit"
	} else {
		prog.Update(0, 0, "resolving the latest release on the module proxy")
		proxy, err := ProxyURL(opts.GOPROXY)
		if err == nil {
			rep.TargetVersion, err = Latest(ctx, proxy)
		}
		if err != nil {
			return nil, failure.New(gen.FailureCodeSetupFailure,
				"the latest flameox release cannot be resolved: %s; pass --version vX.Y.Z to choose one", err.Error()).
				With("reason", "release_lookup_failed")
		}
		rep.TargetSource = "module_proxy"
	}
	dataDir, err := opts.DataDir()
	if err != nil {
		return nil, failure.Wrap(err, gen.FailureCodeSetupFailure, "no Flameox data directory: set FLAMEOX_DATA_DIR or HOME")
	}
	dir := filepath.Join(VersionsDir(dataDir), rep.TargetVersion)
	rep.InstallPath = filepath.Join(dir, "flameox")
	pending := classify(rep, found, explicit)
	if opts.Check || opts.DryRun || len(pending) == 0 {
		prog.Done()
		return rep, nil
	}
	exe, err := Install(ctx, dir, rep.TargetVersion, func(msg string) { prog.Update(0, 0, msg) })
	prog.Done()
	if err != nil {
		return nil, failure.New(gen.FailureCodeSetupFailure, "flameox %s cannot be installed: %s", rep.TargetVersion, err.Error()).
			With("reason", "install_failed")
	}
	rep.Installed = true
	return rep, repoint(rep, pending, setup.ServeLauncher(exe), prog)
}

// configured reads each selected client's flameox entry into the report and returns the
// clients that run a flameox executable, probing each executable's version once.
func configured(ctx context.Context, all []setup.Client, only []string, rep *Report) []target {
	var found []target
	probed := map[string]string{}
	for _, cl := range all {
		if len(only) > 0 && !slices.Contains(only, cl.ID) {
			continue
		}
		cf := setup.ReadConfigured(cl)
		if !cf.Present && cf.Problem == "" {
			continue
		}
		st := ClientState{ID: cl.ID, Name: cl.Name, Path: cl.Path, Command: cf.Launcher.Command}
		switch {
		case cf.Problem != "":
			st.Status, st.Reason = "refused", cf.Problem
		case !cf.Recognized:
			st.Status, st.Reason = "unrecognized", "custom_launcher"
			st.Message = "the flameox entry does not run a flameox executable as `mcp serve`; update leaves it as it is"
		default:
			v, ok := probed[cf.Launcher.Command]
			if !ok {
				v = ProbeVersion(ctx, cf.Launcher.Command)
				probed[cf.Launcher.Command] = v
			}
			if v != "" {
				st.PreviousVersion = &v
			}
			found = append(found, target{cl, len(rep.Clients)})
		}
		rep.Clients = append(rep.Clients, st)
	}
	return found
}

// classify sets each found client's status against the target release and returns those
// to repoint. Without an explicit version a client that runs the target or a newer
// release is left: automatic selection never downgrades.
func classify(rep *Report, found []target, explicit bool) []target {
	var pending []target
	for _, t := range found {
		st := &rep.Clients[t.state]
		cur := ""
		if st.PreviousVersion != nil {
			cur = *st.PreviousVersion
		}
		switch {
		case cur == rep.TargetVersion && st.Command == rep.InstallPath:
			st.Status = "already_current"
		case cur == rep.TargetVersion && !explicit:
			// The configured executable already runs the latest release.
			st.Status = "already_current"
		case !explicit && cur != "" && Compare(cur, rep.TargetVersion) > 0:
			st.Status, st.Reason = "newer_than_target", "no_automatic_downgrade"
			st.Message = "the configured flameox is newer than the latest release; pass --version to choose an older one"
		default:
			st.Status = "update_available"
			rep.UpdateAvailable = true
			pending = append(pending, t)
		}
	}
	return pending
}

// repoint plans every pending client's entry for launcher and, when none is refused,
// applies them (setup.ApplyAll), recording each client's status in the report.
func repoint(rep *Report, pending []target, launcher setup.Launcher, prog setup.Progress) error {
	var plans []setup.Plan
	var refused []string
	for _, t := range pending {
		p := setup.PlanClient(t.cl, launcher)
		if p.Action == setup.ActionRefused {
			st := &rep.Clients[t.state]
			st.Status, st.Reason, st.Message = "refused", p.Reason, p.Message
			refused = append(refused, p.ID)
		}
		plans = append(plans, p)
	}
	if len(refused) > 0 {
		return failure.New(gen.FailureCodeSetupFailure,
			"update refuses to edit the configuration of %s (see the clients' reason and message); nothing was repointed",
			strings.Join(refused, ", "))
	}
	var changed []string
	var failed error
	step := func(p setup.Plan) string { return "repointing the " + p.Name + " configuration" }
	for i, o := range setup.ApplyAll(plans, prog, step, "repointed") {
		st := &rep.Clients[pending[i].state]
		if o.Err != nil {
			st.Status, st.Reason = "refused", o.Reason
			failed = failure.Wrap(o.Err, gen.FailureCodeSetupFailure,
				"the %s configuration could not be repointed (%s); run update again", o.Name, o.Reason).
				With("client", o.ID).With("reason", o.Reason)
			break
		}
		st.Status = "updated"
		changed = append(changed, o.ID)
	}
	prog.Done()
	rep.RestartRequired = len(changed) > 0
	rep.NextAction = setup.Reconnect(changed,
		"Restart or reconnect the changed clients so that they start the new Flameox; running sessions keep their current servers.")
	return failed
}
