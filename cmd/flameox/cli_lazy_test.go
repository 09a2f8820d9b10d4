package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/flameox/flameox/internal/ahead"
)

// TestLazyRootAnswersAsTheWholeTree: a call's tree (newRootCommandFor, the other commands
// standing in as a name and a line) prints what the whole tree prints, byte for byte,
// and exits alike: help, versions, completion scripts and requests, unknown commands
// and flags, a command's own refusals.
func TestLazyRootAnswersAsTheWholeTree(t *testing.T) {
	t.Setenv("FLAMEOX_HOME", t.TempDir())
	calls := [][]string{
		{}, {"--version"}, {"-v"}, {"--json", "--version"}, {"--version", "--help"}, {"--help"}, {"-h"},
		{"help"}, {"help", "analyze"}, {"help", "mcp", "serve"}, {"help", "nosuch"},
		{"analyze", "--help"}, {"capture", "--help"}, {"mcp"}, {"mcp", "--help"}, {"evidence"},
		{"evidence", "show", "--help"}, {"setup", "--help"}, {"update", "--help"}, {"prepare", "--help"},
		{"completion", "bash"}, {"completion", "zsh"}, {"completion", "fish"}, {"completion", "powershell"},
		{"__complete", ""}, {"__complete", "an"}, {"__complete", "analyze", ""}, {"__complete", "analyze", "--format", ""},
		{"__complete", "capture", "--provider", ""}, {"__complete", "mcp", ""}, {"__complete", "help", ""},
		{"__completeNoDesc", "prepare", ""}, {"__complete"},
		{"anlyze"}, {"--bogus"}, {"--json", "anlyze"}, {"analyze", "--bogus"}, {"--", "analyze"}, {"analyze"},
		{"analyze", "no_such_operation", "x"}, {"capture"}, {"mcp", "serve", "extra"}, {"mcp", "inspect", "--tool", "nosuch"},
		{"evidence", "location"}, {"prepare", "no-such-provider"},
	}
	for _, args := range calls {
		t.Run(strings.Join(append([]string{"flameox"}, args...), " "), func(t *testing.T) {
			var wholeOut, wholeErr, lazyOut, lazyErr bytes.Buffer
			wholeCode := execute(newRootCommand(strings.NewReader(""), &wholeOut, &wholeErr), args, &wholeErr)
			lazyCode := run(args, strings.NewReader(""), &lazyOut, &lazyErr)
			if lazyCode != wholeCode {
				t.Errorf("exit %d, the whole tree exits %d", lazyCode, wholeCode)
			}
			if d := cmp.Diff(wholeOut.String(), lazyOut.String()); d != "" {
				t.Errorf("stdout differs from the whole tree's (-whole +lazy):\n%s", d)
			}
			if d := cmp.Diff(wholeErr.String(), lazyErr.String()); d != "" {
				t.Errorf("stderr differs from the whole tree's (-whole +lazy):\n%s", d)
			}
			if wholeOut.Len()+wholeErr.Len() == 0 {
				t.Errorf("the call printed nothing; it compares nothing")
			}
		})
	}
}

// TestCommandsFor: a call builds the command it names and nothing else; the root's own
// --version builds nothing, its help the completion command it lists; help and
// completion alone, an unknown name and words after "--" build everything.
func TestCommandsFor(t *testing.T) {
	names := []string{completionCommand}
	for _, rc := range rootCommands {
		names = append(names, rc.name)
	}
	every := strings.Join(names, " ")
	for _, c := range []struct {
		args  string
		built string
	}{
		{"--version", ""},
		{"-v --json", ""},
		{"--version --help", "completion"},
		{"", "completion"},
		{"--help", "completion"},
		{"help", "completion"},
		{"analyze rank_cpu_hotspots profile.prof", "analyze"},
		{"--json analyze --help", "analyze"},
		{"capture --provider direct -- true", "capture"},
		{"capture --provider direct -- analyze", "capture"},
		{"mcp serve", "mcp"},
		{"help evidence show", "evidence"},
		{"__complete prepare ", "prepare"},
		{"__complete", every},
		{"__complete an", every},
		{"completion bash", every},
		{"anlyze", every},
		{"-- analyze", every},
	} {
		need := commandsFor(strings.Fields(c.args))
		var got []string
		for _, n := range names {
			if need(n) {
				got = append(got, n)
			}
		}
		if d := cmp.Diff(c.built, strings.Join(got, " ")); d != "" {
			t.Errorf("flameox %s builds (-want +got):\n%s", c.args, d)
		}
	}
}

// TestAnalyzeFlagsAsAheadReadsThem: package ahead finds an analyze call's paths during
// initialization, before cobra parses it, by skipping the values of the analyze
// command's flags; it reads each flag as this command defines it (a value or none), and
// the root's flags take no value. A flag added with a value and not named there would
// make ahead read its value as a path.
func TestAnalyzeFlagsAsAheadReadsThem(t *testing.T) {
	root := newRootCommand(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	analyze, _, err := root.Find([]string{"analyze"})
	if err != nil || analyze.Name() != "analyze" {
		t.Fatalf("no analyze command: %v", err)
	}
	seen := 0
	analyze.Flags().VisitAll(func(f *pflag.Flag) {
		seen++
		if takes := f.NoOptDefVal == ""; ahead.AnalyzeValueFlag(f.Name) != takes {
			t.Errorf("--%s takes a value: %v; ahead.AnalyzeValueFlag says %v", f.Name, takes, !takes)
		}
		if f.Shorthand != "" {
			t.Errorf("--%s has the shorthand -%s, which ahead.AnalyzePaths does not read", f.Name, f.Shorthand)
		}
	})
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) {
		if f.NoOptDefVal == "" {
			t.Errorf("the root's --%s takes a value; ahead reads the root's flags as taking none", f.Name)
		}
	})
	if seen < 7 {
		t.Fatalf("the analyze command has %d flags; expected its own", seen)
	}
}
