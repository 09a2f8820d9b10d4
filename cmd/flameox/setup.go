package main

import (
	"bufio"
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
			if err := checkClients(clients); err != nil {
				return err
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
			available, err := setup.Locate(setup.Env{})
			if err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil || !filepath.IsAbs(exe) {
				return failure.Wrap(err, gen.FailureCodeSetupFailure, "the path of the running flameox executable cannot be determined")
			}
			opts := setup.Options{Clients: available, All: all, Select: clients, Launcher: setup.ServeLauncher(exe),
				Version: runtime.Version, DryRun: dryRun}
			if interactive {
				prompt := &setupPrompt{in: bufio.NewReader(c.InOrStdin()), out: c.ErrOrStderr()}
				if opts.Select, err = prompt.selectClients(available); err != nil {
					return err
				}
				opts.Confirm = prompt.confirm
			}
			prog := newProgress(c.ErrOrStderr())
			defer prog.Stop()
			opts.Progress = prog
			rep, err := setup.Run(opts)
			return printReport(stdout, rep, err)
		},
	}
	cmd.Flags().StringArrayVar(&clients, "client", nil, "client to configure (repeatable): "+strings.Join(setup.ClientIDs, ", "))
	cmd.Flags().BoolVar(&all, "all", false, "configure every supported client")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "approve writing the selected clients' configuration")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the plan (paths and actions) and write nothing")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "never prompt (the report on stdout is always JSON)")
	return cmd
}

// checkClients checks each --client against the supported clients.
func checkClients(clients []string) error {
	for i, id := range clients {
		if !contains(setup.ClientIDs, id) {
			return failure.Invalid(failure.Path("client", i), setup.ClientIDs,
				"unknown client %q; choose one of: %s", id, strings.Join(setup.ClientIDs, ", "))
		}
	}
	return nil
}

// printReport prints a workflow's report, when it has one, before returning the
// workflow's failure.
func printReport[R any](stdout io.Writer, rep *R, err error) error {
	if rep != nil {
		if werr := writeJSON(stdout, rep); werr != nil {
			return werr
		}
	}
	return err
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
