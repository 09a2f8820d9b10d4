package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	gen "github.com/flameox/flameox/generated/contracts"
)

// Help and shell completion name what the catalog offers: the released operations with a
// line each, the formats, the capture providers and the toolsets. They read the generated
// declarations, so a help or a completion starts no runtime.

// maxSummaryRunes bounds an operation's line in a help listing.
const maxSummaryRunes = 60

// operationSummary is the head of an operation's description without its parenthesized
// asides, up to its first colon, semicolon or sentence end, at most maxSummaryRunes.
func operationSummary(d gen.OperationDecl) string {
	s := strings.TrimSuffix(d.Description, ".")
	// Parenthesized asides go: "one torch.profiler (Kineto) trace" reads "one torch.profiler trace".
	for {
		i := strings.Index(s, " (")
		j := strings.IndexByte(s[max(i, 0):], ')')
		if i < 0 || j < 0 {
			break
		}
		s = s[:i] + s[i+j+1:]
	}
	for _, stop := range []string{": ", "; ", ". "} {
		if i := strings.Index(s, stop); i > 0 {
			s = s[:i]
		}
	}
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), ","))
	if r := []rune(s); len(r) > maxSummaryRunes {
		cut := string(r[:maxSummaryRunes])
		if i := strings.LastIndexByte(cut, ' '); i > 0 {
			cut = cut[:i]
		}
		s = cut + "…"
	}
	return s
}

// releasedOperations are the catalog's released operations, capture-able ones only when
// capture is set.
func releasedOperations(capture bool) []gen.OperationDecl {
	var out []gen.OperationDecl
	for _, d := range gen.Operations {
		if d.Released && (!capture || len(d.CaptureProviders) > 0) {
			out = append(out, d)
		}
	}
	return out
}

// lazyLong gives cmd the long description long returns, written when cmd's help is
// printed (cobra reads Long for nothing else): the operation tables of analyze and
// capture are built from the catalog's descriptions, which a call that prints no help
// does not pay for. cmd must have no subcommands (they would inherit the help function).
func lazyLong(cmd *cobra.Command, long func() string) {
	cmd.SetHelpFunc(func(c *cobra.Command, args []string) {
		if c == cmd && c.Long == "" {
			c.Long = long()
		}
		c.Root().HelpFunc()(c, args)
	})
}

// operationTable is the operations section of a help text: a name and a line each.
func operationTable(capture bool) string {
	ops := releasedOperations(capture)
	width := 0
	for _, d := range ops {
		width = max(width, len(d.Name))
	}
	var b strings.Builder
	b.WriteString("Operations:\n")
	for _, d := range ops {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, d.Name, operationSummary(d))
	}
	return b.String()
}

// captureProviderKinds are the released capture providers' kinds.
func captureProviderKinds() []string {
	var out []string
	for _, p := range gen.CaptureProviders {
		if p.Released {
			out = append(out, p.Kind)
		}
	}
	return out
}

// wrapWords lays words out after prefix in lines of at most 96 columns.
func wrapWords(prefix string, words []string) string {
	var b strings.Builder
	line := prefix
	for i, w := range words {
		sep := ", "
		if i == len(words)-1 {
			sep = ""
		}
		if len(line)+len(w)+len(sep) > 96 {
			b.WriteString(strings.TrimRight(line, " ") + "\n")
			line = strings.Repeat(" ", len(prefix))
		}
		line += w + sep
	}
	b.WriteString(line + "\n")
	return b.String()
}

// completeOperations completes an operation name, with its line as the description.
func completeOperations(capture bool) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		for _, d := range releasedOperations(capture) {
			out = append(out, cobra.CompletionWithDesc(string(d.Name), operationSummary(d)))
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeWords completes one of words.
func completeWords(words func() []string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return words(), cobra.ShellCompDirectiveNoFileComp
	}
}

// formatNames are the catalog's formats.
func formatNames() []string {
	var out []string
	for _, f := range gen.FormatValues() {
		out = append(out, string(f))
	}
	return out
}

// toolsetNames are the toolsets --toolsets accepts.
func toolsetNames() []string {
	var out []string
	for _, t := range gen.ToolsetValues() {
		if t != gen.ToolsetEvidence {
			out = append(out, string(t))
		}
	}
	return out
}
