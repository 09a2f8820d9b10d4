package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/setup"
)

// setupConsent is the non-interactive consent rule of catalog §11.2: an explicit selection
// (--client or --all) and an approval (--yes) or --dry-run.
func setupConsent(all bool, clients []string, yes, dryRun bool) *failure.Failure {
	if !all && len(clients) == 0 {
		msg := "No MCP client selected: detection is not consent. Pass --client <name> --yes " +
			"(for example, --client codex --yes) or --all --yes; add --dry-run to see the plan first"
		if yes {
			msg = "--yes approves an explicit selection, and detection is not consent: pass --client <name> or --all as well " +
				"(for example, --client codex --yes)"
		}
		return failure.Invalid(failure.Path("client"), setup.ClientIDs, "%s", msg)
	}
	if !yes && !dryRun {
		return failure.Invalid(failure.Path("yes"), nil,
			"setup writes client configuration only with consent: pass --yes to write, or --dry-run to print the plan")
	}
	return nil
}

// Bounds of the interactive prompt: one answer line, and the answers that may be invalid
// before setup gives up.
const (
	maxPromptLine    = 1024
	maxPromptAnswers = 3
)

// setupPrompt asks a person at a terminal: the questions go to out (stderr), the answers
// come from in (stdin).
type setupPrompt struct {
	in  *bufio.Reader
	out io.Writer
	// providers are prepared after the confirmation, before the writes.
	providers []string
	// confirmed is set once the plan (with its warnings) was shown and approved.
	confirmed bool
}

// errPromptLine is an answer longer than maxPromptLine.
var errPromptLine = errors.New("answer too long")

// readLine reads one answer without its line ending; io.EOF when stdin is closed first.
func (p *setupPrompt) readLine() (string, error) {
	var b []byte
	for {
		c, err := p.in.ReadByte()
		if err != nil {
			if len(b) > 0 && errors.Is(err, io.EOF) {
				break
			}
			return "", err
		}
		if c == '\n' {
			break
		}
		if len(b) >= maxPromptLine {
			// Drain the rest of the line so the next answer starts clean.
			for c != '\n' {
				if c, err = p.in.ReadByte(); err != nil {
					break
				}
			}
			return "", errPromptLine
		}
		b = append(b, c)
	}
	return strings.TrimSpace(strings.TrimSuffix(string(b), "\r")), nil
}

// cancelled is the failure of a prompt answered with nothing (or closed): nothing was
// written, and stdout holds no report.
func cancelled() *failure.Failure {
	return failure.New(gen.FailureCodeCancelled, "setup was cancelled at the prompt; nothing was written")
}

// selectClients shows every supported client (detected ones marked, none preselected) and
// reads the selection: numbers or client ids separated by commas or spaces. An empty
// answer cancels.
func (p *setupPrompt) selectClients(available []setup.Client) ([]string, error) {
	fmt.Fprintln(p.out, "Which agents should use Flameox? (detected ones are marked; none is selected for you)")
	for i, cl := range available {
		mark := ""
		if cl.Detected {
			mark = " [detected]"
		}
		fmt.Fprintf(p.out, "  %d) %s (%s)%s  %s\n", i+1, cl.Name, cl.ID, mark, cl.Path)
	}
	for attempt := 0; attempt < maxPromptAnswers; attempt++ {
		fmt.Fprintf(p.out, "Numbers separated by commas or spaces (1-%d), empty to cancel: ", len(available))
		line, err := p.readLine()
		if err != nil && !errors.Is(err, errPromptLine) {
			fmt.Fprintln(p.out)
			return nil, cancelled()
		}
		if err == nil && line == "" {
			return nil, cancelled()
		}
		ids, bad := parseSelection(line, available)
		if err == nil && bad == "" {
			return ids, nil
		}
		if err != nil {
			bad = "the answer is too long"
		}
		fmt.Fprintf(p.out, "%s; choose from 1-%d.\n", bad, len(available))
	}
	return nil, failure.Invalid(failure.Path("client"), setup.ClientIDs,
		"no valid selection after %d answers; nothing was written. Run setup again, or pass --client <name> --yes", maxPromptAnswers)
}

// parseSelection turns an answer into client ids in the table's order, or names the first
// token that is neither a listed number nor a client id.
func parseSelection(line string, available []setup.Client) ([]string, string) {
	chosen := map[string]bool{}
	for _, tok := range strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		if n, err := strconv.Atoi(tok); err == nil && n >= 1 && n <= len(available) {
			chosen[available[n-1].ID] = true
			continue
		}
		found := false
		for _, cl := range available {
			if strings.EqualFold(tok, cl.ID) {
				chosen[cl.ID], found = true, true
			}
		}
		if !found {
			if len(tok) > 20 {
				tok = tok[:20] + "…"
			}
			return nil, fmt.Sprintf("%q is not a listed number", tok)
		}
	}
	var ids []string
	for _, cl := range available {
		if chosen[cl.ID] {
			ids = append(ids, cl.ID)
		}
	}
	return ids, ""
}

// confirm shows what setup will write and asks for approval; anything but y or yes
// cancels. A plan that writes nothing needs no approval.
func (p *setupPrompt) confirm(plans []setup.Plan) error {
	writes := 0
	for _, pl := range plans {
		verb := map[string]string{setup.ActionCreate: "create", setup.ActionUpdate: "update",
			setup.ActionAlreadyCurrent: "already current"}[pl.Action]
		if pl.Action == setup.ActionCreate || pl.Action == setup.ActionUpdate {
			writes++
		}
		fmt.Fprintf(p.out, "  %s: %s %s\n", pl.Name, verb, pl.Path)
		for _, w := range pl.Warnings {
			fmt.Fprintf(p.out, "    warning: %s\n", w.Message)
		}
	}
	if writes == 0 && len(p.providers) == 0 {
		p.confirmed = true
		return nil
	}
	var asks []string
	if len(p.providers) > 0 {
		asks = append(asks, "Prepare "+strings.Join(p.providers, ", ")+" with flameox prepare")
	}
	if writes > 0 {
		asks = append(asks, "write "+setup.Plural(writes, "file"))
	}
	q := strings.Join(asks, ", then ")
	fmt.Fprintf(p.out, "%s%s? [y/N] ", strings.ToUpper(q[:1]), q[1:])
	line, err := p.readLine()
	if err != nil {
		fmt.Fprintln(p.out)
		return cancelled()
	}
	if a := strings.ToLower(line); a != "y" && a != "yes" {
		return cancelled()
	}
	p.confirmed = true
	return nil
}
