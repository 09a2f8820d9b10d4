package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/setup"
	"github.com/flameox/flameox/runtime"
)

// Bounds of --timeout-seconds for setup and update (seed: 1 through 3,600, default 1,800).
const (
	minTimeoutSeconds     = 1
	maxTimeoutSeconds     = 3600
	defaultTimeoutSeconds = 1800
)

func newSetupCommand(stdout io.Writer) *cobra.Command {
	var clients, providers []string
	var all, yes, dryRun, jsonOut bool
	var timeoutSeconds int
	cmd := &cobra.Command{
		Use: "setup",
		Long: "Register this flameox executable (its absolute path, with `mcp serve`) in the global MCP\n" +
			"configuration of the selected clients: " + strings.Join(setup.ClientIDs, ", ") + ".\n" +
			"Select clients with --client (repeatable) or --all, and approve with --yes, or pass --dry-run\n" +
			"to print the plan without writing. Detection never selects a client by itself. Without those\n" +
			"flags, on a terminal, setup asks on stderr which clients to configure and to confirm.\n" +
			"Before any file is written the executable is verified (its --version and `mcp inspect`) and\n" +
			"each --provider is prepared with it (flameox prepare), within --timeout-seconds. An executable\n" +
			"in a temporary location (the temporary directory, a go build cache, go run) is refused.\n" +
			"Comments, other servers and the entry's other keys (env, disabled) are kept; each file is\n" +
			"replaced atomically after checking that it did not change since it was planned. The report\n" +
			"is JSON with --json or when stdout is not a terminal, else a short summary.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := checkClients(clients); err != nil {
				return err
			}
			if all && len(clients) > 0 {
				return failure.Invalid(failure.Path("client"), nil, "--all and --client are mutually exclusive: choose one selection")
			}
			if err := checkTimeout(timeoutSeconds); err != nil {
				return err
			}
			provs, err := checkProviders(providers)
			if err != nil {
				return err
			}
			// The multi-select runs only where a person can answer it: stdin and stderr are
			// terminals and no flag decided the selection or the consent (decision 0028).
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
			// One overall deadline for the verification and the preparation; an interrupt
			// cancels the work in flight.
			sctx, stop := signal.NotifyContext(context.Background(), shutdownSignals...)
			defer stop()
			ctx, cancel := context.WithTimeout(sctx, time.Duration(timeoutSeconds)*time.Second)
			defer cancel()
			opts := setup.Options{Clients: available, All: all, Select: clients, Launcher: setup.ServeLauncher(exe),
				Version: runtime.Version, Providers: provs, DryRun: dryRun,
				TempDir: os.TempDir(), GoCache: setup.GoCache(os.Getenv), LookPath: exec.LookPath}
			var prompt *setupPrompt
			if interactive {
				prompt = &setupPrompt{in: bufio.NewReader(c.InOrStdin()), out: c.ErrOrStderr(), providers: provs}
				if opts.Select, err = prompt.selectClients(available); err != nil {
					return err
				}
				opts.Confirm = prompt.confirm
			}
			prog := newProgress(c.ErrOrStderr())
			defer prog.Stop()
			opts.Progress = prog
			rep, err := setup.Run(ctx, opts)
			prog.Stop()
			if rep != nil {
				setupNotes(c.ErrOrStderr(), rep, prompt != nil && prompt.confirmed)
			}
			if rep != nil && !jsonOut && isTerminal(stdout) {
				writeSetupSummary(stdout, rep)
				return err
			}
			return printReport(stdout, rep, err)
		},
	}
	cmd.Flags().StringArrayVar(&clients, "client", nil, "client to configure (repeatable): "+strings.Join(setup.ClientIDs, ", "))
	cmd.Flags().BoolVar(&all, "all", false, "configure every supported client")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "approve writing the selected clients' configuration")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the plan (paths and actions), verify, and prepare or write nothing")
	cmd.Flags().StringArrayVar(&providers, "provider", nil, "provider to prepare with this flameox before writing (repeatable): "+strings.Join(preparableIDs(), ", "))
	cmd.Flags().IntVar(&timeoutSeconds, "timeout-seconds", defaultTimeoutSeconds, "overall bound of the verification and the provider preparation (1-3600)")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "never prompt, and print the JSON report even on a terminal")
	_ = cmd.RegisterFlagCompletionFunc("client", completeWords(func() []string { return setup.ClientIDs }))
	_ = cmd.RegisterFlagCompletionFunc("provider", completeWords(preparableIDs))
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

// checkTimeout checks --timeout-seconds (setup and update).
func checkTimeout(secs int) error {
	if secs < minTimeoutSeconds || secs > maxTimeoutSeconds {
		return failure.Invalid(failure.Path("timeout_seconds"), nil, "--timeout-seconds must be between 1 and 3600")
	}
	return nil
}

// preparableIDs are the contract's preparable provider ids, sorted: the providers/all
// registry has a record of each (decision 0068).
func preparableIDs() []string {
	var ids []string
	for _, id := range gen.PreparableProviderValues() {
		ids = append(ids, string(id))
	}
	slices.Sort(ids)
	return ids
}

// checkProviders checks each --provider against the preparable providers and returns
// them sorted, each once (the set the preparation receives).
func checkProviders(providers []string) ([]string, error) {
	ids := preparableIDs()
	var out []string
	for i, id := range providers {
		if !contains(ids, id) {
			return nil, failure.Invalid(failure.Path("provider", i), ids,
				"unknown provider %q; choose from: %s", id, strings.Join(ids, ", "))
		}
		if !contains(out, id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out, nil
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
