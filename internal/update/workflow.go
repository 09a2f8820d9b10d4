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
	// TargetVersion and TargetSource (explicit | module_proxy) are null when the release
	// lookup failed; ReleaseLookupError then says why.
	TargetVersion      *string           `json:"target_version"`
	TargetSource       *string           `json:"target_source"`
	ReleaseLookupError string            `json:"release_lookup_error,omitempty"`
	RunningVersion     string            `json:"running_version"`
	Check              bool              `json:"check"`
	DryRun             bool              `json:"dry_run"`
	UpdateAvailable    bool              `json:"update_available"`
	InstallPath        string            `json:"install_path"`
	Installed          bool              `json:"installed"`
	Clients            []ClientState     `json:"clients"`
	RestartRequired    bool              `json:"restart_required"`
	NextAction         *setup.NextAction `json:"next_action"`
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
	// refused (the file cannot be edited safely) | configured (runs Flameox; no target
	// release was resolved).
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Warnings: a disabled entry (repointed, still disabled), an entry update leaves.
	Warnings []setup.Warning `json:"warnings,omitempty"`
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

// Run is flameox update: it finds the clients whose flameox entry runs Flameox
// (setup.Recognize, the rule setup shares), resolves the target release, and unless the
// run is a check or a dry run installs it (Install) and repoints each client atomically
// (setup.ApplyAll). The report is always returned, with the error, a typed failure, when
// there is one: a failed release lookup is reported too (target_version null,
// release_lookup_error).
func Run(ctx context.Context, opts Options) (*Report, error) {
	prog := setup.OrNone(opts.Progress)
	prog.Update(0, 0, "finding the configured clients")
	rep := &Report{RunningVersion: opts.Running, Check: opts.Check, DryRun: opts.DryRun, Clients: []ClientState{}}
	all, err := setup.Locate(opts.Env)
	if err != nil {
		prog.Done()
		return rep, err
	}
	found := configured(ctx, all, opts.Clients, rep)
	if len(found) == 0 {
		prog.Done()
		return rep, failure.New(gen.FailureCodeSetupFailure, "No configured Flameox MCP clients found. Run flameox setup first.")
	}
	explicit := opts.Version != ""
	target, source := opts.Version, "explicit"
	if !explicit {
		prog.Update(0, 0, "resolving the latest release on the module proxy")
		source = "module_proxy"
		proxy, err := ProxyURL(opts.GOPROXY)
		if err == nil {
			target, err = Latest(ctx, proxy)
		}
		if err != nil {
			prog.Done()
			rep.ReleaseLookupError = err.Error()
			return rep, failure.New(gen.FailureCodeSetupFailure,
				"the latest flameox release cannot be resolved: %s; pass --version vX.Y.Z to choose one", err.Error()).
				With("reason", "release_lookup_failed")
		}
	}
	rep.TargetVersion, rep.TargetSource = &target, &source
	dataDir, err := opts.DataDir()
	if err != nil {
		prog.Done()
		return rep, failure.Wrap(err, gen.FailureCodeSetupFailure, "no Flameox data directory: set FLAMEOX_DATA_DIR or HOME")
	}
	dir := filepath.Join(VersionsDir(dataDir), target)
	rep.InstallPath = filepath.Join(dir, "flameox")
	pending := classify(rep, found, explicit)
	if opts.Check || opts.DryRun || len(pending) == 0 {
		prog.Done()
		return rep, nil
	}
	exe, err := Install(ctx, dir, target, func(msg string) { prog.Update(0, 0, msg) })
	prog.Done()
	if err != nil {
		return rep, failure.New(gen.FailureCodeSetupFailure, "flameox %s cannot be installed, so no client was repointed: %s", target, err.Error()).
			With("reason", "install_failed")
	}
	rep.Installed = true
	return rep, repoint(rep, pending, setup.ServeLauncher(exe), prog)
}

// configured reads each selected client's flameox entry into the report and returns the
// clients whose entry runs Flameox by the shared recognition rule (setup.Recognize),
// probing each executable once. Entries it does not recognize are reported and left as
// they are, with a warning.
func configured(ctx context.Context, all []setup.Client, only []string, rep *Report) []target {
	var found []target
	type probe struct {
		id setup.Identity
		ok bool
	}
	probed := map[string]probe{}
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
			st.Message = "the configuration file cannot be read safely (" + cf.Problem + "); update leaves it as it is"
		case cf.NotStdio != "":
			st.Status, st.Reason, st.Message = "unrecognized", setup.WarnNotStdio, setup.NotStdioMessage(cf.NotStdio)
			st.Warnings = append(st.Warnings, setup.Warning{Code: setup.WarnNotStdio, Message: st.Message})
		default:
			key := cf.Launcher.Command + "\x00" + strings.Join(cf.Launcher.Args, "\x00")
			p, ok := probed[key]
			if !ok {
				p.id, p.ok = setup.Recognize(ctx, cf.Launcher)
				probed[key] = p
			}
			if !p.ok {
				st.Status, st.Reason = "unrecognized", setup.WarnCustomLauncher
				st.Message = "the flameox entry does not run a Flameox executable (an absolute path whose --version says Flameox) as `mcp serve`; update leaves it as it is"
				st.Warnings = append(st.Warnings, setup.Warning{Code: setup.WarnCustomLauncher, Message: st.Message})
				break
			}
			st.Status = "configured" // until the target is known (classify)
			if v := p.id.Version; v != "" {
				st.PreviousVersion = &v
			}
			if cf.Disabled {
				st.Warnings = append(st.Warnings, setup.DisabledWarning(cl))
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
		case cur == *rep.TargetVersion && st.Command == rep.InstallPath:
			st.Status = "already_current"
		case cur == *rep.TargetVersion && !explicit:
			// The configured executable already runs the latest release.
			st.Status = "already_current"
		case !explicit && cur != "" && Compare(cur, *rep.TargetVersion) > 0:
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
