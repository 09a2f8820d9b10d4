package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
)

// The CLI speaks JSON to programs and sentences to people (decision 0061): a failure is
// printed as sentences when stderr is a terminal and the command was not given --json;
// otherwise it is the one line of JSON that MCP answers for the same failure. Results
// stay JSON on stdout either way: they are data a person pipes into jq as often as not.

// speaksToPerson reports whether the failure of the command that ran (nil: none was
// found) is printed for a person on stderr.
func speaksToPerson(c *cobra.Command, stderr io.Writer) bool {
	if !isTerminal(stderr) {
		return false
	}
	if c != nil {
		if fl := c.Flags().Lookup("json"); fl != nil && fl.Value.String() == "true" {
			return false
		}
	}
	return true
}

// maxAcceptedShown bounds the accepted values a person is shown.
const maxAcceptedShown = 12

// writeHumanFailure prints f as a person reads it: what went wrong and its code, where
// (the field), what is accepted there, and the next step, as the JSON failure carries
// them.
func writeHumanFailure(w io.Writer, f *failure.Failure) {
	state := string(f.Code)
	if r, ok := f.Recoverable(); ok {
		state = r.Status + ", " + state
	}
	fmt.Fprintf(w, "flameox: %s (%s)\n", sentence(f.Message), state)
	if len(f.FieldPath) > 0 {
		fmt.Fprintf(w, "  field:    %s\n", failure.FieldName(f.FieldPath))
	}
	if n := len(f.AcceptedValues); n > 0 {
		shown := f.AcceptedValues[:min(n, maxAcceptedShown)]
		more := ""
		if n > len(shown) {
			more = fmt.Sprintf(" and %d more", n-len(shown))
		}
		fmt.Fprintf(w, "  accepted: %s%s\n", strings.Join(shown, ", "), more)
	}
	next := f.NextAction
	if r, ok := f.Recoverable(); ok {
		next = r.NextAction
	}
	if next == nil && len(f.FieldPath) > 0 {
		// The envelope's default, which repeats the message to a program, says it
		// shortly to a person.
		next = &gen.NextAction{AdjustRequest: &gen.AdjustRequest{Kind: "adjust_request",
			Message: "change " + failure.FieldName(f.FieldPath) + " and run the command again"}}
	}
	if next := nextStep(cliNextAction(next)); next != "" {
		fmt.Fprintf(w, "  next:     %s\n", next)
	}
}

// sentence ends s with a full stop (its first word may be an identifier, so its case
// is kept).
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	if !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "?") && !strings.HasSuffix(s, "!") {
		s += "."
	}
	return s
}

// nextStep is the next action's message, and for a tool call the call itself, which an
// MCP client makes as given (the CLI has no command for most tools).
func nextStep(next *gen.NextAction) string {
	switch {
	case next == nil:
		return ""
	case next.CallTool != nil:
		return sentence(next.CallTool.Message) + " (MCP: " + next.CallTool.Tool + " " + compactSorted(next.CallTool.Arguments) + ")"
	case next.AdjustRequest != nil:
		return sentence(next.AdjustRequest.Message)
	case next.OperatorAction != nil:
		return sentence(next.OperatorAction.Message)
	case next.WaitAndRetry != nil:
		return sentence(next.WaitAndRetry.Message)
	case next.ConfigureEnvironment != nil:
		return sentence(next.ConfigureEnvironment.Message) + " (" + compactSorted(next.ConfigureEnvironment.Environment) + ")"
	case next.PreserveThenAnalyze != nil:
		return sentence(next.PreserveThenAnalyze.Message)
	case next.ReconnectMCP != nil:
		return sentence(next.ReconnectMCP.Message)
	case next.RestartReconnect != nil:
		return sentence(next.RestartReconnect.Message) + " (" + compactSorted(next.RestartReconnect.Environment) + ")"
	}
	return ""
}
