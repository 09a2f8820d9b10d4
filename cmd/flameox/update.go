package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/setup"
	fxupdate "github.com/flameox/flameox/internal/update"
	"github.com/flameox/flameox/runtime"
)

func newUpdateCommand(stdout io.Writer) *cobra.Command {
	var clients []string
	var version string
	var check, dryRun, jsonOut bool
	var timeoutSeconds int
	cmd := &cobra.Command{
		Use: "update",
		Long: "Find the clients whose flameox entry runs a flameox executable (`mcp serve`), resolve the target\n" +
			"release (--version exactly, else the latest release on the Go module proxy, never a downgrade),\n" +
			"install it with `go install " + fxupdate.Module + "/cmd/flameox@VERSION` into a versioned directory,\n" +
			"verify it with its own --version and `mcp inspect`, and repoint each client atomically.\n" +
			"An entry is Flameox's when its command is an absolute executable run as `mcp serve` whose\n" +
			"--version says Flameox, whatever its name; others are reported and left. --check and\n" +
			"--dry-run only report, a failed release lookup included. The report is JSON with --json or\n" +
			"when stdout is not a terminal, else a short summary.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := checkClients(clients); err != nil {
				return err
			}
			if err := checkTimeout(timeoutSeconds); err != nil {
				return err
			}
			if version != "" {
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
			rep, err := fxupdate.Run(ctx, fxupdate.Options{Clients: clients, Version: version, GOPROXY: os.Getenv("GOPROXY"),
				Running: fxupdate.Canonical(runtime.Version), Check: check, DryRun: dryRun, DataDir: runtime.DataDir, Progress: prog})
			prog.Stop()
			if rep != nil {
				updateNotes(c.ErrOrStderr(), rep)
			}
			if rep != nil && !jsonOut && isTerminal(stdout) {
				writeUpdateSummary(stdout, rep)
				return err
			}
			return printReport(stdout, rep, err)
		},
	}
	cmd.Flags().StringArrayVar(&clients, "client", nil, "client to update (repeatable; default every configured client): "+strings.Join(setup.ClientIDs, ", "))
	cmd.Flags().StringVar(&version, "version", "", "install exactly this release (vX.Y.Z; older releases allowed)")
	cmd.Flags().BoolVar(&check, "check", false, "report the configured and latest versions and change nothing")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the plan and install or write nothing")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the JSON report even on a terminal")
	cmd.Flags().IntVar(&timeoutSeconds, "timeout-seconds", defaultTimeoutSeconds, "overall bound of the release lookup, install and verification (1-3600)")
	_ = cmd.RegisterFlagCompletionFunc("client", completeWords(func() []string { return setup.ClientIDs }))
	return cmd
}
