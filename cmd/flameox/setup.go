package main

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/setup"
	"github.com/flameox/flameox/runtime"
)

// setupReport is the JSON report of flameox setup (catalog §11.2, less the uvx-specific
// fields: the launcher is this executable, so there is no preparation command).
type setupReport struct {
	Command                   string             `json:"command"`
	Args                      []string           `json:"args"`
	ResolvedVersion           string             `json:"resolved_version"`
	DryRun                    bool               `json:"dry_run"`
	Plan                      []setupPlanItem    `json:"plan"`
	Clients                   []setupClientState `json:"clients"`
	ClientRegistrationChanged bool               `json:"client_registration_changed"`
	RepositoryCreated         bool               `json:"repository_created"`
	RestartRequired           bool               `json:"restart_required"`
	NextAction                *setupNextAction   `json:"next_action"`
}

type setupPlanItem struct {
	Client   string `json:"client"`
	Name     string `json:"name"`
	Path     string `json:"path"`
	Format   string `json:"format"`
	Action   string `json:"action"`
	Detected bool   `json:"detected"`
	Reason   string `json:"reason,omitempty"`
	Message  string `json:"message,omitempty"`
}

type setupClientState struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Path   string `json:"path"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

type setupNextAction struct {
	Kind    string   `json:"kind"`
	Clients []string `json:"clients"`
	Message string   `json:"message"`
}

func newSetupCommand(stdout io.Writer) *cobra.Command {
	var clients []string
	var all, yes, dryRun, jsonOut bool
	cmd := &cobra.Command{
		Use:   "setup",
		Short: "Register this flameox executable as an MCP server in coding agents' global configuration",
		Long: "Register this flameox executable (its absolute path, with `mcp serve`) in the global MCP\n" +
			"configuration of the selected clients: " + strings.Join(setup.ClientIDs, ", ") + ".\n" +
			"Select clients with --client (repeatable) or --all, and approve with --yes, or pass --dry-run\n" +
			"to print the plan without writing. Detection never selects a client by itself. Without those\n" +
			"flags, on a terminal, setup asks on stderr which clients to configure and to confirm.\n" +
			"Comments, other servers and the entry's other keys (env, disabled) are kept; each file is\n" +
			"replaced atomically after checking that it did not change since it was planned.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			for i, id := range clients {
				if !contains(setup.ClientIDs, id) {
					return failure.Invalid(failure.Path("client", i), setup.ClientIDs,
						"unknown client %q; choose one of: %s", id, strings.Join(setup.ClientIDs, ", "))
				}
			}
			if all && len(clients) > 0 {
				return failure.Invalid(failure.Path("client"), nil, "--all and --client are mutually exclusive: choose one selection")
			}
			// The multi-select runs only where a person can answer it: stdin and stderr are
			// terminals (stdout stays the JSON report) and no flag decided the selection or
			// the consent (decision 0028).
			interactive := !all && len(clients) == 0 && !yes && !dryRun && !jsonOut &&
				isTerminal(c.InOrStdin()) && isTerminal(c.ErrOrStderr())
			if !interactive {
				if f := setupConsent(all, clients, yes, dryRun); f != nil {
					return f
				}
			}
			env, err := setup.OSEnv()
			if err != nil {
				return failure.Wrap(err, gen.FailureCodeSetupFailure, "the working directory cannot be read")
			}
			home := os.Getenv("HOME")
			if home == "" || !filepath.IsAbs(home) {
				return failure.New(gen.FailureCodeSetupFailure, "HOME is unset or not absolute; set it to your home directory")
			}
			exe, err := os.Executable()
			if err != nil || !filepath.IsAbs(exe) {
				return failure.Wrap(err, gen.FailureCodeSetupFailure, "the path of the running flameox executable cannot be determined")
			}
			launcher := setup.ServeLauncher(exe)
			available := setup.Clients(env, home)
			var prompt *setupPrompt
			if interactive {
				prompt = &setupPrompt{in: bufio.NewReader(c.InOrStdin()), out: c.ErrOrStderr()}
				if clients, err = prompt.selectClients(available); err != nil {
					return err
				}
			}
			prog := newProgress(c.ErrOrStderr())
			defer prog.Stop()
			selected := len(clients)
			if all {
				selected = len(available)
			}
			prog.Update(0, 0, "planning the configuration of "+plural(selected, "client"))
			var plans []setup.Plan
			for _, cl := range available {
				if all || contains(clients, cl.ID) {
					plans = append(plans, setup.PlanClient(cl, launcher))
				}
			}
			rep := &setupReport{Command: launcher.Command, Args: launcher.Args, ResolvedVersion: runtime.Version,
				DryRun: dryRun, Plan: []setupPlanItem{}, Clients: []setupClientState{}}
			var refused []string
			for _, p := range plans {
				rep.Plan = append(rep.Plan, setupPlanItem{Client: p.ID, Name: p.Name, Path: p.Path, Format: string(p.Format),
					Action: p.Action, Detected: p.Detected, Reason: p.Reason, Message: p.Message})
				if p.Action == setup.ActionRefused {
					refused = append(refused, p.ID)
				}
			}
			// A refusal found while planning stops every write: the selection is applied whole
			// or not at all as far as planning can tell.
			if dryRun || len(refused) > 0 {
				prog.Done()
				if err := writeJSON(stdout, rep); err != nil {
					return err
				}
				if len(refused) > 0 {
					return refusedFailure(refused, rep.Plan, dryRun)
				}
				return nil
			}
			if prompt != nil {
				prog.Done()
				if err := prompt.confirm(plans); err != nil {
					return err
				}
			}
			var changed []string
			var failed *failure.Failure
		apply:
			for i, p := range plans {
				prog.Update(float64(i), float64(len(plans)), setupStep(p))
				st := setupClientState{ID: p.ID, Name: p.Name, Path: p.Path}
				switch p.Action {
				case setup.ActionAlreadyCurrent:
					st.Status = "already_current"
				default:
					if err := setup.Apply(p); err != nil {
						st.Status, st.Reason = "refused", "changed_since_planning"
						f := failure.Wrap(err, gen.FailureCodeSetupFailure,
							"the %s configuration changed after setup planned its edit; run setup again", p.Name).
							With("client", p.ID).With("reason", "changed_since_planning")
						if !errors.Is(err, setup.ErrChanged) {
							st.Reason = "write_failed"
							f = failure.Wrap(err, gen.FailureCodeSetupFailure,
								"the %s configuration could not be written; check the permissions of its directory", p.Name).
								With("client", p.ID).With("reason", "write_failed")
						}
						rep.Clients = append(rep.Clients, st)
						failed = f
						// Multiple client files are not one transaction: earlier clients stay written.
						break apply
					}
					st.Status = map[string]string{setup.ActionCreate: "created", setup.ActionUpdate: "updated"}[p.Action]
					changed = append(changed, p.ID)
				}
				rep.Clients = append(rep.Clients, st)
			}
			if failed == nil {
				prog.Update(float64(len(plans)), float64(len(plans)), "configured "+plural(len(plans), "client"))
			}
			prog.Done()
			if len(changed) > 0 {
				rep.ClientRegistrationChanged, rep.RestartRequired = true, true
				rep.NextAction = &setupNextAction{Kind: "reconnect_mcp", Clients: changed,
					Message: "Restart or reconnect the changed clients so that they start Flameox; running sessions keep their current servers."}
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
	cmd.Flags().StringArrayVar(&clients, "client", nil, "client to configure (repeatable): "+strings.Join(setup.ClientIDs, ", "))
	cmd.Flags().BoolVar(&all, "all", false, "configure every supported client")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "approve writing the selected clients' configuration")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the plan (paths and actions) and write nothing")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "never prompt (the report on stdout is always JSON)")
	return cmd
}

// refusedFailure is the typed failure of a selection with a client that cannot be edited
// safely; nothing was written.
func refusedFailure(ids []string, plan []setupPlanItem, dryRun bool) *failure.Failure {
	reasons := map[string]string{}
	for _, p := range plan {
		if p.Action == setup.ActionRefused {
			reasons[p.Client] = p.Reason
		}
	}
	verb := "nothing was written"
	if dryRun {
		verb = "a run with --yes would write nothing"
	}
	return failure.New(gen.FailureCodeSetupFailure,
		"setup refuses to edit the configuration of %s (see the plan's reason and message); %s. Fix those files or leave those clients out of the selection",
		strings.Join(ids, ", "), verb).With("refused", reasons)
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
