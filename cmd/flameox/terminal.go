package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/flameox/flameox/runtime"
)

// maxProgressRunes bounds one progress line so that it fits a usual terminal row and
// rewriting it in place with \r leaves nothing behind.
const maxProgressRunes = 100

// progressLine prints progress of long CLI work on a terminal's stderr: one line per
// update, rewritten in place with \r, finished with a newline by Done. A nil
// *progressLine prints nothing, so callers report unconditionally.
type progressLine struct {
	mu     sync.Mutex
	w      io.Writer
	width  int  // runes of the line on screen
	closed bool // Stop was called: a late update prints nothing
}

// newProgress returns the progress printer for w, or nil when w is not a terminal: stdout
// stays pure JSON and redirected stderr stays free of progress.
func newProgress(w io.Writer) *progressLine {
	if !isTerminal(w) {
		return nil
	}
	return &progressLine{w: w}
}

// Update shows done of total (total 0: no count) and the message, in the shape of the MCP
// progress notifications (progress, total, message).
func (p *progressLine) Update(done, total float64, message string) {
	if p == nil {
		return
	}
	line := "flameox: " + message
	if total > 0 {
		line = fmt.Sprintf("flameox: [%g/%g] %s", done, total, message)
	}
	line = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, line)
	if n := utf8.RuneCountInString(line); n > maxProgressRunes {
		line = string([]rune(line)[:maxProgressRunes-1]) + "…"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	n := utf8.RuneCountInString(line)
	pad := ""
	if p.width > n {
		pad = strings.Repeat(" ", p.width-n)
	}
	fmt.Fprintf(p.w, "\r%s%s", line, pad)
	p.width = n
}

// Done ends the progress line with a newline, so that what follows (a prompt, a failure on
// stderr, the shell prompt) starts on its own line. It prints nothing when no line is open;
// later updates start a new line.
func (p *progressLine) Done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.end()
}

// Stop ends the line like Done and ignores every later update (a timer that fires late).
func (p *progressLine) Stop() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.end()
	p.closed = true
}

func (p *progressLine) end() {
	if p.width > 0 {
		fmt.Fprint(p.w, "\n")
		p.width = 0
	}
}

// progressContext hooks p into the runtime's progress reports of ctx's work (the reports
// the MCP handler turns into progress notifications).
func progressContext(ctx context.Context, p *progressLine) context.Context {
	if p == nil {
		return ctx
	}
	return runtime.WithProgress(ctx, p.Update)
}

// analysisNoticeDelay is how long an analysis runs before the CLI says it is still at work:
// the runtime reports no steps for analyses, and a quick one should print nothing.
const analysisNoticeDelay = time.Second
