package setup

import (
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
	// Version is the report's resolved_version.
	Version string
	// DryRun plans and writes nothing.
	DryRun bool
	// Confirm, when not nil, is asked once every plan is made and none is refused; an
	// error cancels the run before anything is written and is returned without a report.
	Confirm func([]Plan) error
	// Progress is told each step; nil is told nothing.
	Progress Progress
}

// Report is the JSON report of flameox setup (catalog §11.2, less the uvx-specific
// fields: the launcher is the flameox executable, so there is no preparation command).
type Report struct {
	Command                   string        `json:"command"`
	Args                      []string      `json:"args"`
	ResolvedVersion           string        `json:"resolved_version"`
	DryRun                    bool          `json:"dry_run"`
	Plan                      []PlanItem    `json:"plan"`
	Clients                   []ClientState `json:"clients"`
	ClientRegistrationChanged bool          `json:"client_registration_changed"`
	RepositoryCreated         bool          `json:"repository_created"`
	RestartRequired           bool          `json:"restart_required"`
	NextAction                *NextAction   `json:"next_action"`
}

// PlanItem is one planned client of the report.
type PlanItem struct {
	Client   string `json:"client"`
	Name     string `json:"name"`
	Path     string `json:"path"`
	Format   string `json:"format"`
	Action   string `json:"action"`
	Detected bool   `json:"detected"`
	Reason   string `json:"reason,omitempty"`
	Message  string `json:"message,omitempty"`
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

// Run plans the selected clients' entries and, unless the run is a dry run or a plan is
// refused, writes them (ApplyAll). The report is nil only when nothing is to be printed
// (Confirm cancelled); otherwise it is printed before the error, a typed failure. A
// refusal found while planning stops every write: the selection is applied whole or not
// at all as far as planning can tell.
func Run(opts Options) (*Report, error) {
	prog := OrNone(opts.Progress)
	selected := len(opts.Select)
	if opts.All {
		selected = len(opts.Clients)
	}
	prog.Update(0, 0, "planning the configuration of "+Plural(selected, "client"))
	var plans []Plan
	for _, cl := range opts.Clients {
		if opts.All || slices.Contains(opts.Select, cl.ID) {
			plans = append(plans, PlanClient(cl, opts.Launcher))
		}
	}
	rep := &Report{Command: opts.Launcher.Command, Args: opts.Launcher.Args, ResolvedVersion: opts.Version,
		DryRun: opts.DryRun, Plan: []PlanItem{}, Clients: []ClientState{}}
	var refused []string
	for _, p := range plans {
		rep.Plan = append(rep.Plan, PlanItem{Client: p.ID, Name: p.Name, Path: p.Path, Format: string(p.Format),
			Action: p.Action, Detected: p.Detected, Reason: p.Reason, Message: p.Message})
		if p.Action == ActionRefused {
			refused = append(refused, p.ID)
		}
	}
	if opts.DryRun || len(refused) > 0 {
		prog.Done()
		if len(refused) > 0 {
			return rep, refusedFailure(refused, plans, opts.DryRun)
		}
		return rep, nil
	}
	if opts.Confirm != nil {
		prog.Done()
		if err := opts.Confirm(plans); err != nil {
			return nil, err
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
