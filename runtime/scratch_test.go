package runtime

import (
	"errors"
	"io/fs"
	"strings"
	"syscall"
	"testing"
)

func TestScratchIOFailureIsRetryableWithItsReason(t *testing.T) {
	tests := []struct {
		err    error
		reason string
	}{
		{&fs.PathError{Op: "mkdir", Path: "/secret/host/path", Err: syscall.ENOSPC}, "no_space_left"},
		{&fs.PathError{Op: "mkdir", Path: "/secret/host/path", Err: syscall.EACCES}, "permission_denied"},
		{errors.New("other"), "io_error"},
	}
	for _, tt := range tests {
		f := scratchIOFailure(tt.err, "the capture scratch could not be created")
		if !f.Retryable || f.Details["reason"] != tt.reason || f.NextAction.WaitAndRetry == nil {
			t.Errorf("%v: %+v", tt.err, f)
		}
		if env := f.Envelope(); env.Message == "" || strings.Contains(env.Message, "/secret") {
			t.Errorf("%v: message %q", tt.err, env.Message)
		}
	}
}
