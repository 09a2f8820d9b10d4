package main

import (
	"encoding/json"
	"io"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/prepare"
)

func newPrepareCommand(stdout io.Writer) *cobra.Command {
	var timeout int
	ids := preparableIDs()
	cmd := &cobra.Command{
		Use: "prepare PROVIDER...",
		Long: "Install and verify the pinned py-spy collector (py-spy " + prepare.PySpyVersion + ") or memray reader (memray " + prepare.MemrayVersion + ",\n" +
			"in a virtual environment) in Flameox's tools directory beside the evidence store, with uv or\n" +
			"python3 -m pip, and report for every other provider what this machine has and what to install.\n" +
			"No system package manager is run.\n" +
			"Providers: " + strings.Join(ids, ", ") + ".",
		Args:      cobra.MinimumNArgs(1),
		ValidArgs: ids,
		RunE: func(c *cobra.Command, args []string) error {
			rt, err := newRuntime(nil)
			if err != nil {
				return err
			}
			raw, _ := json.Marshal(map[string]any{"provider_ids": args, "timeout_seconds": timeout})
			ctx, stop := signal.NotifyContext(c.Context(), shutdownSignals...)
			defer stop()
			prog := newProgress(c.ErrOrStderr())
			defer prog.Stop()
			res, f := rt.Call(progressContext(ctx, prog), "prepare_providers", raw)
			prog.Stop()
			if f != nil {
				return f
			}
			return writeJSON(stdout, res.(*gen.PrepareProvidersResult))
		},
	}
	cmd.Flags().IntVar(&timeout, "timeout-seconds", 1800, "overall deadline of any installation (1-3600)")
	return cmd
}
