package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/setup"
	fxupdate "github.com/flameox/flameox/internal/update"
	"github.com/flameox/flameox/runtime"
)

// updateReport is the JSON report of flameox update (catalog §11.3, for a Go binary: the
// launcher's command is a versioned flameox executable, so there is no requirement).
type updateReport struct {
	TargetVersion   string              `json:"target_version"`
	TargetSource    string              `json:"target_source"`
	RunningVersion  string              `json:"running_version"`
	Check           bool                `json:"check"`
	DryRun          bool                `json:"dry_run"`
	UpdateAvailable bool                `json:"update_available"`
	InstallPath     string              `json:"install_path"`
	Installed       bool                `json:"installed"`
	Clients         []updateClientState `json:"clients"`
	RestartRequired bool                `json:"restart_required"`
	NextAction      *setupNextAction    `json:"next_action"`
}

type updateClientState struct {
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

func newUpdateCommand(stdout io.Writer) *cobra.Command {
	var clients []string
	var version string
	var check, dryRun, jsonOut bool
	var timeoutSeconds int
	cmd := &cobra.Command{
		Use:   "update",
		Short: "Install a newer flameox release and repoint the configured MCP clients to it",
		Long: "Find the clients whose flameox entry runs a flameox executable (`mcp serve`), resolve the target\n" +
			"release (--version exactly, else the latest release on the Go module proxy, never a downgrade),\n" +
			"install it with `go install " + fxupdate.Module + "/cmd/flameox@VERSION` into a versioned directory,\n" +
			"verify it with its own --version and `mcp inspect`, and repoint each client atomically.\n" +
			"--check and --dry-run only report.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			_ = jsonOut
			for i, id := range clients {
				if !contains(setup.ClientIDs, id) {
					return failure.Invalid(failure.Path("client", i), setup.ClientIDs,
						"unknown client %q; choose one of: %s", id, strings.Join(setup.ClientIDs, ", "))
				}
			}
			if timeoutSeconds < 1 || timeoutSeconds > 3600 {
				return failure.Invalid(failure.Path("timeout_seconds"), nil, "--timeout-seconds must be between 1 and 3600")
			}
			explicit := version != ""
			if explicit {
				if version = fxupdate.Canonical(version); version == "" {
					return failure.Invalid(failure.Path("version"), nil, "--version must be a semantic version such as v0.2.1")
				}
			}
			// One overall deadline, and an interrupt cancels the work in flight: the broker
			// ends the subprocess tree before update returns (decision 0028).
			sctx, stop := signal.NotifyContext(context.Background(), shutdownSignals...)
			defer stop()
			ctx, cancel := context.WithTimeout(sctx, time.Duration(timeoutSeconds)*time.Second)
			defer cancel()
			prog := newProgress(c.ErrOrStderr())
			defer prog.Stop()
			prog.Update(0, 0, "finding the configured clients")
			env, err := setup.OSEnv()
			if err != nil {
				return failure.Wrap(err, gen.FailureCodeSetupFailure, "the working directory cannot be read")
			}
			home := os.Getenv("HOME")
			if home == "" || !filepath.IsAbs(home) {
				return failure.New(gen.FailureCodeSetupFailure, "HOME is unset or not absolute; set it to your home directory")
			}
			rep := &updateReport{RunningVersion: fxupdate.Canonical(runtime.Version), Check: check, DryRun: dryRun,
				Clients: []updateClientState{}}
			type target struct {
				cl    setup.Client
				state int
			}
			var found []target
			probed := map[string]string{}
			for _, cl := range setup.Clients(env, home) {
				if len(clients) > 0 && !contains(clients, cl.ID) {
					continue
				}
				cf := setup.ReadConfigured(cl)
				if !cf.Present && cf.Problem == "" {
					continue
				}
				st := updateClientState{ID: cl.ID, Name: cl.Name, Path: cl.Path, Command: cf.Launcher.Command}
				switch {
				case cf.Problem != "":
					st.Status, st.Reason = "refused", cf.Problem
				case !cf.Recognized:
					st.Status, st.Reason = "unrecognized", "custom_launcher"
					st.Message = "the flameox entry does not run a flameox executable as `mcp serve`; update leaves it as it is"
				default:
					v, ok := probed[cf.Launcher.Command]
					if !ok {
						v = fxupdate.ProbeVersion(ctx, cf.Launcher.Command)
						probed[cf.Launcher.Command] = v
					}
					if v != "" {
						st.PreviousVersion = &v
					}
					found = append(found, target{cl, len(rep.Clients)})
				}
				rep.Clients = append(rep.Clients, st)
			}
			if len(found) == 0 {
				if err := writeJSON(stdout, rep); err != nil {
					return err
				}
				return failure.New(gen.FailureCodeSetupFailure, "No configured Flameox MCP clients found. Run flameox setup first.")
			}
			if explicit {
				rep.TargetVersion, rep.TargetSource = version, "explicit"
			} else {
				prog.Update(0, 0, "resolving the latest release on the module proxy")
				proxy, err := fxupdate.ProxyURL(os.Getenv("GOPROXY"))
				if err == nil {
					rep.TargetVersion, err = fxupdate.Latest(ctx, proxy)
				}
				if err != nil {
					return failure.New(gen.FailureCodeSetupFailure,
						"the latest flameox release cannot be resolved: %s; pass --version vX.Y.Z to choose one", err.Error()).
						With("reason", "release_lookup_failed")
				}
				rep.TargetSource = "module_proxy"
			}
			dataDir, err := runtime.DataDir()
			if err != nil {
				return failure.Wrap(err, gen.FailureCodeSetupFailure, "no Flameox data directory: set FLAMEOX_DATA_DIR or HOME")
			}
			dir := filepath.Join(versionsDir(dataDir), rep.TargetVersion)
			rep.InstallPath = filepath.Join(dir, "flameox")
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
				case !explicit && cur != "" && fxupdate.Compare(cur, rep.TargetVersion) > 0:
					st.Status, st.Reason = "newer_than_target", "no_automatic_downgrade"
					st.Message = "the configured flameox is newer than the latest release; pass --version to choose an older one"
				default:
					st.Status = "update_available"
					rep.UpdateAvailable = true
					pending = append(pending, t)
				}
			}
			if check || dryRun || len(pending) == 0 {
				prog.Stop()
				return writeJSON(stdout, rep)
			}
			exe, err := fxupdate.Install(ctx, dir, rep.TargetVersion, func(msg string) { prog.Update(0, 0, msg) })
			prog.Done()
			if err != nil {
				return failure.New(gen.FailureCodeSetupFailure, "flameox %s cannot be installed: %s", rep.TargetVersion, err.Error()).
					With("reason", "install_failed")
			}
			rep.Installed = true
			launcher := setup.ServeLauncher(exe)
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
				if err := writeJSON(stdout, rep); err != nil {
					return err
				}
				return failure.New(gen.FailureCodeSetupFailure,
					"update refuses to edit the configuration of %s (see the clients' reason and message); nothing was repointed",
					strings.Join(refused, ", "))
			}
			var changed []string
			var failed *failure.Failure
			for i, p := range plans {
				prog.Update(float64(i), float64(len(plans)), "repointing the "+p.Name+" configuration")
				st := &rep.Clients[pending[i].state]
				if err := setup.Apply(p); err != nil {
					st.Status, st.Reason = "refused", "changed_since_planning"
					if !errors.Is(err, setup.ErrChanged) {
						st.Reason = "write_failed"
					}
					failed = failure.Wrap(err, gen.FailureCodeSetupFailure,
						"the %s configuration could not be repointed (%s); run update again", p.Name, st.Reason).
						With("client", p.ID).With("reason", st.Reason)
					break
				}
				st.Status = "updated"
				changed = append(changed, p.ID)
			}
			if failed == nil {
				prog.Update(float64(len(plans)), float64(len(plans)), "repointed "+plural(len(plans), "client"))
			}
			prog.Stop()
			if len(changed) > 0 {
				rep.RestartRequired = true
				rep.NextAction = &setupNextAction{Kind: "reconnect_mcp", Clients: changed,
					Message: "Restart or reconnect the changed clients so that they start the new Flameox; running sessions keep their current servers."}
			}
			if err := writeJSON(stdout, rep); err != nil {
				return err
			}
			if failed != nil {
				return failed
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&clients, "client", nil, "client to update (repeatable; default every configured client): "+strings.Join(setup.ClientIDs, ", "))
	cmd.Flags().StringVar(&version, "version", "", "install exactly this release (vX.Y.Z; older releases allowed)")
	cmd.Flags().BoolVar(&check, "check", false, "report the configured and latest versions and change nothing")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the plan and install or write nothing")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the JSON report (always on)")
	cmd.Flags().IntVar(&timeoutSeconds, "timeout-seconds", 900, "overall bound of the release lookup, install and verification (1-3600)")
	return cmd
}

// versionsDir is where releases are installed: beside the evidence store, not in it (the
// store's root admits only repository content), as <store>-versions/<version>/flameox.
func versionsDir(store string) string {
	return filepath.Join(filepath.Dir(store), filepath.Base(store)+"-versions")
}
