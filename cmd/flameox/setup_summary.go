package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/flameox/flameox/internal/setup"
	fxupdate "github.com/flameox/flameox/internal/update"
)

// Human output of setup and update (decision 0060): warnings and refusals explained on
// stderr, one sentence each, whatever the report's form; and, when stdout is a terminal
// and --json was not given, a short summary on stdout instead of the JSON report.

// setupNotes prints on stderr each plan warning (unless the confirmation already showed
// them) and a sentence for each client setup refused. The summary on stdout does not
// repeat them: on a terminal both streams share one screen.
func setupNotes(w io.Writer, rep *setup.Report, shown bool) {
	for _, p := range rep.Plan {
		if !shown {
			for _, wn := range p.Warnings {
				fmt.Fprintf(w, "flameox: warning: %s: %s.\n", p.Name, wn.Message)
			}
		}
		if p.Action == setup.ActionRefused {
			fmt.Fprintf(w, "flameox: %s was not configured: %s (%s).\n", p.Name, p.Message, p.Path)
		}
	}
	for _, c := range rep.Clients {
		if c.Status == "refused" {
			fmt.Fprintf(w, "flameox: %s was not configured: %s (%s).\n", c.Name, writeReason(c.Reason), c.Path)
		}
	}
}

func writeReason(reason string) string {
	if reason == setup.ReasonChanged {
		return "the file changed after setup planned its edit; run setup again"
	}
	return "the file could not be written; check the permissions of its directory"
}

// setupWords are the summary's words for plan actions and client statuses.
var setupWords = map[string]string{
	setup.ActionCreate: "create", setup.ActionUpdate: "update", setup.ActionAlreadyCurrent: "already current",
	setup.ActionRefused: "refused", "created": "created", "updated": "updated",
}

// writeSetupSummary is setup's report for a person: what was (or would be) registered
// where, warnings, provider guidance, advisories, and what to do next.
func writeSetupSummary(w io.Writer, rep *setup.Report) {
	launcher := fmt.Sprintf("Flameox %s (%s)", rep.ResolvedVersion, rep.Command)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	switch {
	case rep.DryRun && rep.Verified:
		fmt.Fprintf(w, "Dry run: nothing was prepared or written. With --yes, setup would register %s with:\n", launcher)
	case len(rep.Clients) > 0:
		fmt.Fprintf(w, "%s is registered with:\n", launcher)
	default:
		fmt.Fprintf(w, "Nothing was written; setup planned to register %s with:\n", launcher)
	}
	if len(rep.Clients) > 0 {
		for _, c := range rep.Clients {
			status := setupWords[c.Status]
			if c.Status == "refused" {
				status = "not written (" + c.Reason + ")"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", c.Name, status, c.Path)
		}
	} else {
		for _, p := range rep.Plan {
			action := setupWords[p.Action]
			if p.Action == setup.ActionRefused {
				action = "refused (" + p.Reason + ")"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", p.Name, action, p.Path)
		}
	}
	tw.Flush()
	if len(rep.Providers) > 0 && !rep.DryRun && len(rep.Clients) > 0 {
		if len(rep.PreparedManagedProviders) > 0 {
			var ids []string
			for _, id := range rep.PreparedManagedProviders {
				ids = append(ids, string(id))
			}
			fmt.Fprintf(w, "Prepared: %s.\n", strings.Join(ids, ", "))
		}
		for _, g := range rep.ExternalGuidance {
			if g.Status == "missing" || g.Status == "unverified" {
				fmt.Fprintf(w, "%s (%s): %s\n", g.ProviderID, g.Status, g.Guidance)
			}
		}
	} else if rep.DryRun && rep.PreparationCommand != nil {
		fmt.Fprintf(w, "With --yes, %s runs first.\n", strings.Join(rep.PreparationCommand, " "))
	}
	for _, a := range rep.Advisories {
		fmt.Fprintf(w, "Note: %s\n", a.Message)
	}
	if rep.NextAction != nil {
		fmt.Fprintf(w, "Restart or reconnect %s so that %s Flameox.\n", clientNames(rep.NextAction.Clients, rep.Plan),
			map[bool]string{true: "it starts", false: "they start"}[len(rep.NextAction.Clients) == 1])
	}
}

// clientNames joins the names of ids: "Cursor", "Cursor and Codex", "A, B and C".
func clientNames(ids []string, plan []setup.PlanItem) string {
	var names []string
	for _, id := range ids {
		name := id
		for _, p := range plan {
			if p.Client == id {
				name = p.Name
			}
		}
		names = append(names, name)
	}
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// updateNotes prints on stderr each client's warnings and a sentence for each client
// update refused.
func updateNotes(w io.Writer, rep *fxupdate.Report) {
	for _, c := range rep.Clients {
		for _, wn := range c.Warnings {
			fmt.Fprintf(w, "flameox: warning: %s: %s.\n", c.Name, wn.Message)
		}
		if c.Status == "refused" {
			msg := c.Message
			if msg == "" {
				msg = writeReason(c.Reason)
			}
			fmt.Fprintf(w, "flameox: %s was not repointed: %s (%s).\n", c.Name, msg, c.Path)
		}
	}
}

var updateWords = map[string]string{
	"already_current": "already current", "update_available": "update available", "updated": "updated",
	"configured":        "runs Flameox",
	"newer_than_target": "newer than the target (left)", "unrecognized": "not Flameox (left)", "refused": "refused",
}

// writeUpdateSummary is update's report for a person.
func writeUpdateSummary(w io.Writer, rep *fxupdate.Report) {
	switch {
	case rep.TargetVersion == nil && rep.ReleaseLookupError != "":
		fmt.Fprintf(w, "The latest release could not be resolved: %s.\n", rep.ReleaseLookupError)
	case rep.TargetVersion == nil:
		fmt.Fprintln(w, "No target release was resolved.")
	case *rep.TargetSource == "explicit":
		fmt.Fprintf(w, "Target: Flameox %s (--version).\n", *rep.TargetVersion)
	default:
		fmt.Fprintf(w, "Target: Flameox %s, the latest release on the module proxy.\n", *rep.TargetVersion)
	}
	if len(rep.Clients) == 0 {
		fmt.Fprintln(w, "No client runs Flameox; run flameox setup first.")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range rep.Clients {
		prev := "-"
		if c.PreviousVersion != nil {
			prev = *c.PreviousVersion
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Name, prev, updateWords[c.Status], c.Path)
	}
	tw.Flush()
	switch {
	case (rep.Check || rep.DryRun) && rep.UpdateAvailable:
		fmt.Fprintln(w, "Run flameox update to install it and repoint those clients.")
	case rep.Installed:
		fmt.Fprintf(w, "Installed at %s.\n", rep.InstallPath)
	}
	if rep.NextAction != nil {
		var plan []setup.PlanItem
		for _, c := range rep.Clients {
			plan = append(plan, setup.PlanItem{Client: c.ID, Name: c.Name})
		}
		fmt.Fprintf(w, "Restart or reconnect %s so that %s the new Flameox.\n", clientNames(rep.NextAction.Clients, plan),
			map[bool]string{true: "it starts", false: "they start"}[len(rep.NextAction.Clients) == 1])
	}
}
