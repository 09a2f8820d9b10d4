package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"

	"github.com/spf13/cobra"

	"github.com/flameox/flameox/internal/ahead"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/runtime"
)

// exitStatus ends the CLI with a status after the result was printed.
type exitStatus int

func (e exitStatus) Error() string { return "exit status" }

// unpreservedLimitation tells a CLI user how to keep a capture's evidence.
const unpreservedLimitation = "This capture was not preserved and its scratch is removed when the command exits, so it has no continuation. Rerun with --preserve (or --rescue-to ABSOLUTE_PATH) to page through the captured artifacts with next_page.argv."

func newCaptureCommand(stdout io.Writer) *cobra.Command {
	var provider, operation, cwd, captureArgs, analysisArgs, console, budget, experiment, limits, rescueTo string
	var preserve bool
	var envs []string
	cmd := &cobra.Command{
		Use: "capture --provider ID [OPTIONS] -- ARGV...",
		RunE: func(c *cobra.Command, args []string) error {
			dash := c.ArgsLenAtDash()
			if dash != 0 || len(args) == 0 {
				return failure.Invalid(failure.Path("target", "argv"), nil,
					"give the target argv after --, as in: flameox capture --provider direct -- python3 bench.py")
			}
			if f := exclusivePublication(preserve, rescueTo); f != nil {
				return f
			}
			// The workload's containment helper starts now, while the runtime starts and
			// the capture is admitted (decision 0067, fifth addendum).
			helper := runtime.StartCaptureHelper()
			rt, err := newRuntime([]byte(limits), runtime.WithCaptureHelper(helper))
			if err != nil {
				helper.Abandon()
				return err
			}
			defer rt.Close()
			if rescueTo != "" {
				if f := rt.PreflightRescue(rescueTo); f != nil {
					return f
				}
			}
			absCwd, err := filepath.Abs(cwd)
			if err != nil {
				return failure.Invalid(failure.Path("target", "cwd"), nil, "--cwd cannot be made absolute")
			}
			target := map[string]any{"argv": args, "cwd": absCwd}
			if console != "" {
				target["console_output"] = console
			}
			if len(envs) > 0 {
				env := map[string]any{}
				for _, e := range envs {
					k, v, ok := strings.Cut(e, "=")
					if !ok || k == "" {
						return failure.Invalid(failure.Path("target", "environment"), nil, "--env takes NAME=VALUE")
					}
					env[k] = v
				}
				target["environment"] = env
			}
			if budget != "" {
				var b any
				if f := decodeFlag("workload-budget", budget, &b); f != nil {
					return f
				}
				target["budget"] = b
			}
			prov := map[string]any{}
			if captureArgs != "" {
				if f := decodeObjectFlag("capture-arguments", captureArgs, &prov); f != nil {
					return f
				}
			}
			if k, ok := prov["kind"]; ok && k != provider {
				return failure.Invalid(failure.Path("capture-arguments", "kind"), []string{provider},
					"--capture-arguments names kind %v, but --provider is %s; the provider is chosen by --provider alone", k, provider)
			}
			prov["kind"] = provider
			req := map[string]any{}
			if analysisArgs != "" {
				if f := decodeObjectFlag("analysis-arguments", analysisArgs, &req); f != nil {
					return f
				}
			}
			for _, k := range []string{"target", "provider", "preserve", "experiment", "limits"} {
				if _, ok := req[k]; ok {
					return failure.Invalid(failure.Path("analysis_arguments", k), nil, "%s is not an operation field; use its own option", k)
				}
			}
			req["target"], req["provider"] = target, prov
			if experiment != "" {
				var e any
				if f := decodeFlag("experiment", experiment, &e); f != nil {
					return f
				}
				req["experiment"] = e
			}
			if preserve {
				req["preserve"] = true
			}
			raw, _ := json.Marshal(req)
			ctx, stop := ahead.NotifyContext(context.Background())
			defer stop()
			prog := newProgress(c.ErrOrStderr())
			defer prog.Stop()
			res, f := rt.Call(progressContext(ctx, prog), "capture_and_"+operation, raw)
			prog.Stop()
			if f != nil {
				if f.Code == "UNKNOWN_TOOL" {
					return failure.Invalid(failure.Path("operation"), rt.CaptureOperations(),
						"operation %q has no capture tool; capturable operations: %v", operation, rt.CaptureOperations())
				}
				return f
			}
			cres := res.(*runtime.CaptureResult)
			out := &cliCapture{cliEnvelope: cliResult(&cres.Result), Capture: cres.Capture,
				AnalysisFailure: cres.AnalysisFailure, PreservationFailure: cres.PreservationFailure,
				WorkloadFailure: cres.WorkloadFailure, NextAction: cres.NextAction}
			out.Status, out.Preserved = cres.Status, cres.Preserved
			switch {
			case cres.Preserved != nil:
				if cres.NextPage != nil {
					out.NextPage = cliNextPage(cres.Operation, cres.NextPage.Arguments, nil)
				}
				if cres.NextAction != nil {
					// The CLI's next step is a command, not an MCP tool; a fix to the
					// workload or its budget names its field.
					id := cres.Preserved.EvidenceID
					msg := "The capture is preserved; run `flameox evidence show " + id + "` to see its executions and artifacts"
					if cres.AnalysisFailure != nil && cres.AnalysisFailure.Details["analysis_source_count"] != 0 {
						msg += ", then `flameox analyze " + cres.Operation + " --evidence " + id + "` with adjusted --arguments"
					}
					out.NextAction = &gen.NextAction{OperatorAction: &gen.OperatorAction{Kind: "operator_action", Message: msg + "."}}
					if fix := cres.Fix(); fix != nil && fix.FieldPath != nil {
						a := *fix
						a.Message += " This run is preserved as evidence " + id + " (`flameox evidence show " + id + "`)."
						out.NextAction = &gen.NextAction{AdjustRequest: &a}
					}
				}
			case cres.PreservationFailure != nil:
				// The scratch dies with this process; the capture can still go to a new store.
				// The process-local analysis_id means nothing after the command exits.
				pf := *cres.PreservationFailure
				pf.Details = map[string]any{}
				for k, v := range cres.PreservationFailure.Details {
					if k != "analysis_id" {
						pf.Details[k] = v
					}
				}
				out.PreservationFailure = &pf
				out.Continuation, out.NextPage = nil, nil
				out.Limitations = append(out.Limitations, unpreservedLimitation)
				out.NextAction = &gen.NextAction{OperatorAction: &gen.OperatorAction{Kind: "operator_action",
					Message: "Preservation failed (" + string(cres.PreservationFailure.Code) + "); rerun the same command with --rescue-to ABSOLUTE_NEW_DIRECTORY to write the capture into a new evidence store, or fix the store and rerun with --preserve."}}
			case rescueTo != "":
				if f := rescueInto(rt, out.cliEnvelope, &cres.Result, rescueTo); f != nil {
					return f
				}
			default:
				// The scratch dies with this process: no continuation can be honoured.
				out.Continuation, out.NextPage = nil, nil
				out.Limitations = append(out.Limitations, unpreservedLimitation)
				switch fix := cres.Fix(); {
				case cres.NextAction != nil && fix != nil && fix.FieldPath != nil:
					// A fix to the workload or its budget is the next step (MCP's next
					// action preserves by a session handle that means nothing to a later
					// command).
					a := *fix
					a.Message += " Add --preserve (or --rescue-to ABSOLUTE_PATH) to keep the run's evidence."
					out.NextAction = &gen.NextAction{AdjustRequest: &a}
				case cres.NextAction != nil && fix != nil:
					out.NextAction = &gen.NextAction{OperatorAction: &gen.OperatorAction{Kind: "operator_action",
						Message: fix.Message + " Add --preserve (or --rescue-to ABSOLUTE_PATH) to keep the run's evidence."}}
				case cres.NextAction != nil && cres.Cause() != "":
					out.NextAction = &gen.NextAction{OperatorAction: &gen.OperatorAction{Kind: "operator_action",
						Message: cres.Cause() + " Fix the workload or the provider's arguments, then run the command again (with --preserve or --rescue-to ABSOLUTE_PATH to keep a run's evidence)."}}
				case cres.NextAction != nil:
					out.NextAction = &gen.NextAction{OperatorAction: &gen.OperatorAction{Kind: "operator_action",
						Message: "Rerun the same command with --preserve (or --rescue-to ABSOLUTE_PATH) to keep this capture's evidence."}}
				}
			}
			if err := writeJSON(stdout, out); err != nil {
				return err
			}
			if cres.AnalysisFailure != nil || cres.PreservationFailure != nil || cres.Capture.Outcome.FailedCount > 0 {
				return exitStatus(1)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&provider, "provider", "", "collector that runs the target (required)")
	cmd.Flags().StringVar(&operation, "operation", "preview_artifact", "operation that analyses the captured artifacts")
	cmd.Flags().StringVar(&cwd, "cwd", ".", "working directory of the target (made absolute)")
	cmd.Flags().StringVar(&captureArgs, "capture-arguments", "", "provider fields as one JSON object")
	cmd.Flags().StringVar(&analysisArgs, "analysis-arguments", "", "operation fields as one JSON object")
	cmd.Flags().StringArrayVar(&envs, "env", nil, "environment override NAME=VALUE for the target (repeatable)")
	cmd.Flags().StringVar(&console, "console-output", "", "diagnostics or full")
	cmd.Flags().StringVar(&budget, "workload-budget", "", `workload budget JSON, e.g. {"timeout_seconds":60}`)
	cmd.Flags().StringVar(&experiment, "experiment", "", "paired experiment JSON")
	cmd.Flags().StringVar(&limits, "limits", "", "RequestLimits JSON: startup bounds for analysis and storage")
	cmd.Flags().BoolVar(&preserve, "preserve", false, "preserve the capture in the evidence store")
	cmd.Flags().StringVar(&rescueTo, "rescue-to", "", "write the capture as a new evidence store at this absolute path")
	cmd.MarkFlagRequired("provider")
	_ = cmd.RegisterFlagCompletionFunc("provider", completeWords(captureProviderKinds))
	_ = cmd.RegisterFlagCompletionFunc("operation", completeOperations(true))
	lazyLong(cmd, func() string {
		return "Run ARGV (no shell) in --cwd under the --provider collector, analyse the captured artifacts\n" +
			"with --operation and print the result. Everything after -- is the target's argv.\n" +
			"The exit status is 1 when an execution or the analysis failed; the result is still printed.\n\n" +
			operationTable(true) + "\n" + wrapWords("Providers: ", captureProviderKinds())
	})
	return cmd
}

// cliCapture is a CLI capture result: the analysis envelope, then the capture record,
// the analysis failure and the next action.
type cliCapture struct {
	*cliEnvelope
	Capture         gen.CaptureRecord    `json:"capture"`
	AnalysisFailure *gen.AnalysisFailure `json:"analysis_failure"`
	// PreservationFailure says why --preserve failed; the capture result is still printed.
	PreservationFailure *gen.AnalysisFailure `json:"preservation_failure,omitempty"`
	WorkloadFailure     *gen.WorkloadFailure `json:"workload_failure,omitempty"`
	NextAction          *gen.NextAction      `json:"next_action"`
}

// decodeObjectFlag decodes a JSON option value that must be one object (null is not).
func decodeObjectFlag(flag, value string, into *map[string]any) *failure.Failure {
	if f := decodeFlag(flag, value, into); f != nil {
		return f
	}
	if *into == nil {
		return failure.Invalid(failure.Path(flag), []string{"object"}, "--%s must be one JSON object", flag)
	}
	return nil
}

// decodeFlag decodes a JSON option value.
func decodeFlag(flag, value string, into any) *failure.Failure {
	dec := json.NewDecoder(bytes.NewReader([]byte(value)))
	dec.UseNumber()
	if err := dec.Decode(into); err != nil {
		return failure.Invalid(failure.Path(flag), nil, "--%s must be one JSON value", flag)
	}
	return nil
}
