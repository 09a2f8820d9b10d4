package setup

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
)

// Progress is told the steps of a workflow: done of total (total 0: no count) and a
// message, and Done when a run of steps ends before a prompt or the report. The CLI
// passes its terminal progress line; nil is told nothing.
type Progress interface {
	Update(done, total float64, message string)
	Done()
}

type noProgress struct{}

func (noProgress) Update(float64, float64, string) {}
func (noProgress) Done()                           {}

// OrNone returns p, or a Progress that is told nothing when p is nil.
func OrNone(p Progress) Progress {
	if p == nil {
		return noProgress{}
	}
	return p
}

// Locate resolves every supported client against env, whose HOME must be an absolute
// path; the zero Env is the process's environment and working directory (OSEnv). The
// failure is a SETUP_FAILURE.
func Locate(env Env) ([]Client, error) {
	if env.Getenv == nil {
		var err error
		if env, err = OSEnv(); err != nil {
			return nil, failure.Wrap(err, gen.FailureCodeSetupFailure, "the working directory cannot be read")
		}
	}
	home := env.Getenv("HOME")
	if home == "" && env.goos() == "windows" {
		home = env.Getenv("USERPROFILE")
	}
	if home == "" || !filepath.IsAbs(home) {
		return nil, failure.New(gen.FailureCodeSetupFailure, "HOME is unset or not absolute; set it to your home directory")
	}
	return Clients(env, home), nil
}

// Options of Run.
type Options struct {
	// Clients are the supported clients (Locate); All selects every one, else Select
	// names the selected ids.
	Clients []Client
	All     bool
	Select  []string
	// Launcher is what each selected client's flameox entry will run.
	Launcher Launcher
	// Version is the report's resolved_version, the version the launcher must report.
	Version string
	// Providers are the provider ids (sorted, each once) the launcher's executable
	// prepares before any file is written (PrepareProviders).
	Providers []string
	// DryRun plans and verifies, and prepares and writes nothing.
	DryRun bool
	// TempDir and GoCache are the temporary directory and the go build cache: a launcher
	// under either (or in a go-build work directory) is refused (Temporary).
	TempDir, GoCache string
	// LookPath finds the flameox first on PATH for the PATH advisory (PathAdvisory); nil
	// checks nothing.
	LookPath func(string) (string, error)
	// Confirm, when not nil, is asked once every plan is made and verified and none is
	// refused; an error cancels the run before anything is prepared or written and is
	// returned without a report.
	Confirm func([]Plan) error
	// Progress is told each step; nil is told nothing.
	Progress Progress
	// Verify checks the launcher's executable; nil is VerifyExecutable with Version.
	Verify func(context.Context, Launcher) error
	// Recognize is the recognition rule for existing entries; nil is Recognize.
	Recognize func(context.Context, Launcher) (Identity, bool)
	// Prepare prepares Providers; nil is PrepareProviders.
	Prepare func(context.Context, Launcher, []string) (*Preparation, error)
}

// Report is the JSON report of flameox setup (catalog §11.2 for a Go binary: the launcher
// is the flameox executable itself, verified before any write, and providers are
// prepared by running it; decision 0060).
type Report struct {
	Command         string   `json:"command"`
	Args            []string `json:"args"`
	ResolvedVersion string   `json:"resolved_version"`
	DryRun          bool     `json:"dry_run"`
	// Providers are the requested provider ids; PreparationCommand prepares them (null
	// for none).
	Providers          []string `json:"providers"`
	PreparationCommand []string `json:"preparation_command"`
	// Verified is true once the executable reported the version and a tool catalog.
	Verified bool       `json:"verified"`
	Plan     []PlanItem `json:"plan"`
	// PreparedManagedProviders and ExternalGuidance are what the preparation reported.
	PreparedManagedProviders  []gen.PreparableProvider  `json:"prepared_managed_providers"`
	ExternalGuidance          []gen.ProviderRequirement `json:"external_guidance"`
	Advisories                []Advisory                `json:"advisories"`
	Clients                   []ClientState             `json:"clients"`
	ClientRegistrationChanged bool                      `json:"client_registration_changed"`
	RepositoryCreated         bool                      `json:"repository_created"`
	RestartRequired           bool                      `json:"restart_required"`
	NextAction                *NextAction               `json:"next_action"`
}

// PlanItem is one planned client of the report.
type PlanItem struct {
	Client   string    `json:"client"`
	Name     string    `json:"name"`
	Path     string    `json:"path"`
	Format   string    `json:"format"`
	Action   string    `json:"action"`
	Detected bool      `json:"detected"`
	Reason   string    `json:"reason,omitempty"`
	Message  string    `json:"message,omitempty"`
	Warnings []Warning `json:"warnings,omitempty"`
}

// ClientState is what setup did with one client: created, updated, already_current, or
// refused (the write failed; Reason changed_since_planning or write_failed).
type ClientState struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Path   string `json:"path"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// NextAction tells the user what to do after clients were changed.
type NextAction struct {
	Kind    string   `json:"kind"`
	Clients []string `json:"clients"`
	Message string   `json:"message"`
}

// Reconnect is the next action after the changed clients were written: reconnect them
// (message says why); nil when none changed.
func Reconnect(changed []string, message string) *NextAction {
	if len(changed) == 0 {
		return nil
	}
	return &NextAction{Kind: "reconnect_mcp", Clients: changed, Message: message}
}

// InstallGuidance is how to get a flameox that can be registered.
const InstallGuidance = "install flameox first (go install github.com/flameox/flameox/cmd/flameox@latest, " +
	"or copy the executable to a permanent directory) and run setup with the installed one"

// Run is flameox setup. It refuses a launcher in a temporary location, plans the
// selected clients' entries (warning about disabled entries and custom launchers it
// replaces), verifies the launcher's executable (VerifyExecutable), and unless the run
// is a dry run or a plan is refused, asks Confirm, prepares the requested providers with
// that executable, and writes the clients (ApplyAll). Nothing is written before the
// verification and the preparation succeeded. The report is nil only when nothing is to
// be printed (the launcher is temporary, or Confirm cancelled); otherwise it is printed
// before the error, a typed failure. A refusal found while planning stops every write:
// the selection is applied whole or not at all as far as planning can tell.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if why := Temporary(opts.Launcher.Command, opts.TempDir, opts.GoCache); why != "" {
		return nil, failure.New(gen.FailureCodeSetupFailure,
			"setup refuses to register %s: it runs from %s, where an MCP client cannot rely on finding it later. To register Flameox, %s",
			opts.Launcher.Command, why, InstallGuidance).With("reason", "temporary_executable")
	}
	prog := OrNone(opts.Progress)
	verify, recognize, prepare := opts.Verify, opts.Recognize, opts.Prepare
	if verify == nil {
		verify = func(ctx context.Context, l Launcher) error { return VerifyExecutable(ctx, l.Command, opts.Version) }
	}
	if recognize == nil {
		recognize = Recognize
	}
	if prepare == nil {
		prepare = PrepareProviders
	}
	selected := len(opts.Select)
	if opts.All {
		selected = len(opts.Clients)
	}
	prog.Update(0, 0, "planning the configuration of "+Plural(selected, "client"))
	var plans []Plan
	for _, cl := range opts.Clients {
		if opts.All || slices.Contains(opts.Select, cl.ID) {
			p := PlanClient(cl, opts.Launcher)
			if w, ok := customLauncher(ctx, p, opts.Launcher, recognize); ok {
				p.Warnings = append(p.Warnings, w)
			}
			plans = append(plans, p)
		}
	}
	rep := &Report{Command: opts.Launcher.Command, Args: opts.Launcher.Args, ResolvedVersion: opts.Version,
		DryRun: opts.DryRun, Providers: append([]string{}, opts.Providers...),
		PreparationCommand: PreparationCommand(opts.Launcher, opts.Providers), Plan: []PlanItem{},
		PreparedManagedProviders: []gen.PreparableProvider{}, ExternalGuidance: []gen.ProviderRequirement{},
		Advisories: []Advisory{}, Clients: []ClientState{}}
	if opts.LookPath != nil {
		if a := PathAdvisory(ctx, opts.Launcher.Command, opts.Version, opts.LookPath); a != nil {
			rep.Advisories = append(rep.Advisories, *a)
		}
	}
	var refused []string
	for _, p := range plans {
		rep.Plan = append(rep.Plan, PlanItem{Client: p.ID, Name: p.Name, Path: p.Path, Format: string(p.Format),
			Action: p.Action, Detected: p.Detected, Reason: p.Reason, Message: p.Message, Warnings: p.Warnings})
		if p.Action == ActionRefused {
			refused = append(refused, p.ID)
		}
	}
	if len(refused) > 0 {
		prog.Done()
		return rep, refusedFailure(refused, plans, opts.DryRun)
	}
	prog.Update(0, 0, "verifying flameox "+opts.Version)
	if err := verify(ctx, opts.Launcher); err != nil {
		prog.Done()
		return rep, failure.New(gen.FailureCodeSetupFailure,
			"the flameox to register failed its verification, so nothing was written: %s", err.Error()).
			With("reason", "verification_failed")
	}
	rep.Verified = true
	if opts.DryRun {
		prog.Done()
		return rep, nil
	}
	if opts.Confirm != nil {
		prog.Done()
		if err := opts.Confirm(plans); err != nil {
			return nil, err
		}
	}
	if len(opts.Providers) > 0 {
		prog.Update(0, 0, "preparing "+strings.Join(opts.Providers, ", ")+" with flameox prepare")
		prep, err := prepare(ctx, opts.Launcher, opts.Providers)
		if err != nil {
			prog.Done()
			return rep, failure.New(gen.FailureCodeSetupFailure,
				"preparing the providers %s failed, so nothing was written: %s", strings.Join(opts.Providers, ", "), err.Error()).
				With("reason", "preparation_failed")
		}
		if prep != nil {
			rep.PreparedManagedProviders, rep.ExternalGuidance = prep.PreparedManagedProviders, prep.ExternalGuidance
		}
	}
	var changed []string
	var failed error
	for _, o := range ApplyAll(plans, prog, Step, "configured") {
		st := ClientState{ID: o.ID, Name: o.Name, Path: o.Path}
		switch {
		case o.Err != nil:
			st.Status, st.Reason = "refused", o.Reason
			failed = writeFailure(o)
		case o.Action == ActionAlreadyCurrent:
			st.Status = "already_current"
		default:
			st.Status = map[string]string{ActionCreate: "created", ActionUpdate: "updated"}[o.Action]
			changed = append(changed, o.ID)
		}
		rep.Clients = append(rep.Clients, st)
	}
	prog.Done()
	rep.ClientRegistrationChanged, rep.RestartRequired = len(changed) > 0, len(changed) > 0
	rep.NextAction = Reconnect(changed,
		"Restart or reconnect the changed clients so that they start Flameox; running sessions keep their current servers.")
	return rep, failed
}

// customLauncher is the warning for a plan that replaces an existing entry's launcher
// that the recognition rule does not recognize as Flameox: setup replaces it because it
// was asked to, but says so.
func customLauncher(ctx context.Context, p Plan, l Launcher, recognize func(context.Context, Launcher) (Identity, bool)) (Warning, bool) {
	ex := p.Existing.Launcher
	if p.Action != ActionUpdate || !p.Existing.Present || ex.Command == "" ||
		(ex.Command == l.Command && slices.Equal(ex.Args, l.Args)) {
		return Warning{}, false
	}
	if _, ok := recognize(ctx, ex); ok {
		return Warning{}, false
	}
	return Warning{Code: WarnCustomLauncher, Message: "the flameox entry ran `" + strings.Join(append([]string{ex.Command}, ex.Args...), " ") +
		"`, which is not a Flameox executable run as `mcp serve`; setup replaces its command with this flameox and keeps the entry's other settings"}, true
}

// Step is the progress message of applying one plan in setup.
func Step(p Plan) string {
	if p.Action == ActionAlreadyCurrent {
		return p.Name + " is already current"
	}
	return "writing the " + p.Name + " configuration"
}

// writeFailure is setup's failure of the plan that could not be written.
func writeFailure(o Outcome) *failure.Failure {
	if o.Reason == ReasonChanged {
		return failure.Wrap(o.Err, gen.FailureCodeSetupFailure,
			"the %s configuration changed after setup planned its edit; run setup again", o.Name).
			With("client", o.ID).With("reason", o.Reason)
	}
	return failure.Wrap(o.Err, gen.FailureCodeSetupFailure,
		"the %s configuration could not be written; check the permissions of its directory", o.Name).
		With("client", o.ID).With("reason", o.Reason)
}

// refusedFailure is the typed failure of a selection with a client that cannot be edited
// safely; nothing was written.
func refusedFailure(ids []string, plans []Plan, dryRun bool) *failure.Failure {
	reasons := map[string]string{}
	for _, p := range plans {
		if p.Action == ActionRefused {
			reasons[p.ID] = p.Reason
		}
	}
	verb := "nothing was written"
	if dryRun {
		verb = "a run with --yes would write nothing"
	}
	return failure.New(gen.FailureCodeSetupFailure,
		"setup refuses to edit the configuration of %s (see the plan's reason and message); %s. Fix those files or leave those clients out of the selection",
		strings.Join(ids, ", "), verb).With("refused", reasons)
}

// Reasons of a plan that ApplyAll could not write.
const (
	ReasonChanged     = "changed_since_planning"
	ReasonWriteFailed = "write_failed"
)

// Outcome is what ApplyAll did with one plan: applied, or, with Err set, not written
// for Reason (ReasonChanged when the file changed after it was planned, else
// ReasonWriteFailed).
type Outcome struct {
	Plan
	Reason string
	Err    error
}

// ApplyAll applies the plans in order, each atomically (Apply), telling progress each
// step (step(p) is its message) and, when every plan is applied, "<verb> N clients". It
// stops at the first plan that cannot be written, whose outcome is the last one and
// carries the error: several client files are not one transaction, so the earlier
// clients stay written.
func ApplyAll(plans []Plan, progress Progress, step func(Plan) string, verb string) []Outcome {
	progress = OrNone(progress)
	n := float64(len(plans))
	out := make([]Outcome, 0, len(plans))
	for i, p := range plans {
		progress.Update(float64(i), n, step(p))
		if err := Apply(p); err != nil {
			o := Outcome{Plan: p, Reason: ReasonChanged, Err: err}
			if !errors.Is(err, ErrChanged) {
				o.Reason = ReasonWriteFailed
			}
			return append(out, o)
		}
		out = append(out, Outcome{Plan: p})
	}
	progress.Update(n, n, verb+" "+Plural(len(plans), "client"))
	return out
}

// Plural is "1 client", "2 clients".
func Plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}
