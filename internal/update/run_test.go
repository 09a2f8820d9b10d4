package update

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// alive reports whether pid is a running (not zombie) process, read from /proc.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}

// TestExecThroughBroker: Exec's subprocess goes through the broker, so a deadline ends the
// whole tree, a daemon that left the process group (setsid) included, before Exec returns;
// a failing exit is an error; output is bounded. /proc is the truth for the process tree.
func TestExecThroughBroker(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		timeout time.Duration
		wantErr error // nil: any error is checked by errText
		errText string
		stdout  string
	}{
		{name: "exit 0", script: "echo hello", timeout: time.Minute, stdout: "hello\n"},
		{name: "exit status", script: "echo partial; exit 3", timeout: time.Minute, errText: "exited with status 3", stdout: "partial\n"},
		{name: "deadline kills an escaped daemon", script: "setsid sleep 300 & echo $!; sleep 300", timeout: 2 * time.Second,
			wantErr: context.DeadlineExceeded},
		{name: "output bound", script: "head -c 20000000 /dev/zero", timeout: time.Minute, errText: "output_limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
			defer cancel()
			out, _, err := Exec(ctx, nil, "sh", "-c", tt.script)
			switch {
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			case tt.errText != "" && (err == nil || !strings.Contains(err.Error(), tt.errText)):
				t.Fatalf("err = %v, want one naming %q", err, tt.errText)
			case tt.wantErr == nil && tt.errText == "" && err != nil:
				t.Fatalf("err = %v", err)
			}
			if len(out) > maxOutput {
				t.Errorf("stdout kept %d bytes, more than %d", len(out), maxOutput)
			}
			if tt.stdout != "" && string(out) != tt.stdout {
				t.Errorf("stdout = %q, want %q", out, tt.stdout)
			}
			if tt.wantErr == context.DeadlineExceeded {
				pid, perr := strconv.Atoi(strings.TrimSpace(string(out)))
				if perr != nil {
					t.Fatalf("no daemon pid on stdout: %q", out)
				}
				if alive(pid) {
					t.Errorf("the setsid daemon %d survived Exec", pid)
				}
			}
		})
	}
}

// TestExecCancelled: cancelling the context ends the subprocess and Exec reports it.
func TestExecCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	_, _, err := Exec(ctx, nil, "sleep", "300")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
