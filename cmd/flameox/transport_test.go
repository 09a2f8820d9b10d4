package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rawServer is `flameox mcp serve` run in process on pipes, spoken to in raw lines.
type rawServer struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan int
}

func startRawServer(t *testing.T) *rawServer {
	t.Helper()
	t.Setenv("FLAMEOX_DATA_DIR", filepath.Join(t.TempDir(), "store"))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &rawServer{t: t, in: inW, out: bufio.NewReaderSize(outR, 1<<20), done: make(chan int, 1)}
	var stderr bytes.Buffer
	go func() {
		code := run([]string{"mcp", "serve"}, inR, outW, &stderr)
		outW.Close()
		s.done <- code
	}()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	s.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` + "\n")
	if r := s.reply(); string(r["id"]) != `"init"` || r["result"] == nil {
		t.Fatalf("initialize: %v", r)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	return s
}

// send writes lines from another goroutine, so that the server's replies can be read
// while a large write is in progress.
func (s *rawServer) send(lines ...string) {
	go func() {
		for _, l := range lines {
			if _, err := io.WriteString(s.in, l); err != nil {
				return
			}
		}
	}()
}

// reply reads the next line the server writes, as a JSON object.
func (s *rawServer) reply() map[string]json.RawMessage {
	s.t.Helper()
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		l, err := s.out.ReadString('\n')
		ch <- result{l, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			s.t.Fatalf("the server ended the session without a reply: %v", r.err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(r.line), &m); err != nil {
			s.t.Fatalf("the server wrote %q: %v", r.line, err)
		}
		return m
	case <-time.After(30 * time.Second):
		s.t.Fatal("no reply within 30 s")
	}
	return nil
}

// untilList reads replies up to the reply to the tools/list request of id "list", which
// must list the tools, and returns the replies before it.
func (s *rawServer) untilList() []map[string]json.RawMessage {
	s.t.Helper()
	var before []map[string]json.RawMessage
	for {
		r := s.reply()
		if string(r["id"]) != `"list"` {
			before = append(before, r)
			continue
		}
		var res struct{ Tools []struct{ Name string } }
		if err := json.Unmarshal(r["result"], &res); err != nil || len(res.Tools) == 0 {
			s.t.Fatalf("tools/list after the bad frames: %s", r["result"])
		}
		return before
	}
}

const listLine = `{"jsonrpc":"2.0","id":"list","method":"tools/list"}` + "\n"

// TestMCPServeAnswersMalformedFramesAndKeepsServing sends `mcp serve` every kind of
// malformed line, each of which ended the session without a reply with the SDK's stdio
// transport (17 of them did), then a valid tools/list: every bad line gets its JSON-RPC
// error (id null where it cannot be read), in order, and tools/list is answered after all.
// Frames the SDK answers itself (unknown method, bad params shape) and frames that need
// no answer (an unknown notification, a response to nothing) pass through.
func TestMCPServeAnswersMalformedFramesAndKeepsServing(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	const parse, invalid = "-32700", "-32600"
	cases := []struct {
		line string
		id   string // the reply's id as JSON; "" for no reply at all
		code string
	}{
		{`{`, "null", parse},
		{`]`, "null", parse},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"`, "null", parse},
		{"{\"jsonrpc\":\"2.0\",\"id\":\"u\",\"method\":\"\xff\xfe\"}", "null", parse},
		{`{"jsonrpc":"2.0","id":"a","method":"ping"}{"jsonrpc":"2.0","id":"b","method":"ping"}`, "null", parse},
		{`{"jsonrpc":"2.0","id":"c","method":"ping"} x`, "null", parse},
		{`{"jsonrpc":"2.0","id":"d","method":"ping",}`, "null", parse},
		{`{'jsonrpc':'2.0'}`, "null", parse},
		{`{"jsonrpc":"2.0","id":NaN,"method":"ping"}`, "null", parse},
		{"{\"jsonrpc\":\"2.0\",\"id\":\"e\",\"method\":\"pi\x01ng\"}", "null", parse},
		{`nul`, "null", parse},
		{`[]`, "null", invalid},
		{`[{"jsonrpc":"2.0","id":"b1","method":"ping"}]`, "null", invalid},
		{`[{"jsonrpc":"2.0","id":"b2","method":"ping"},{"jsonrpc":"2.0","id":"b3","method":"ping"}]`, "null", invalid},
		{`null`, "null", invalid},
		{`42`, "null", invalid},
		{`"tools/list"`, "null", invalid},
		{`true`, "null", invalid},
		{`{}`, "null", invalid},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, "null", invalid},
		{`{"jsonrpc":"2.0","id":[1],"method":"ping"}`, "null", invalid},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, "null", invalid},
		{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, "null", invalid},
		{`{"jsonrpc":"2.0","id":12345678901234567890,"method":"ping"}`, "null", invalid},
		{`{"jsonrpc":"2.0","id":"deep","method":"tools/list","params":{"x":` + deep(100000) + `}}`, "null", invalid},
		{`{"jsonrpc":"2.0","id":"deep2","method":"tools/list","params":{"x":` + deep(1000) + `}}`, "null", invalid},
		{`{"jsonrpc":"1.0","id":"v1","method":"ping"}`, `"v1"`, invalid},
		{`{"id":"v2","method":"ping"}`, `"v2"`, invalid},
		{`{"jsonrpc":"2.0","id":"m1","method":42}`, `"m1"`, invalid},
		{`{"jsonrpc":"2.0","id":"m2","method":null}`, `"m2"`, invalid},
		{`{"jsonrpc":"2.0","id":"p1","method":"tools/list","params":42}`, `"p1"`, invalid},
		{`{"jsonrpc":"2.0","id":"p2","method":"tools/list","params":"x"}`, `"p2"`, invalid},
		{`{"jsonrpc":"2.0","id":"r1"}`, `"r1"`, invalid},
		{`{"jsonrpc":"2.0","id":7,"result":{},"error":{"code":1,"message":"x"}}`, `7`, invalid},
		// The SDK answers these itself.
		{`{"jsonrpc":"2.0","id":"n1","method":"no/such/method"}`, `"n1"`, "-32601"},
		{`{"jsonrpc":"2.0","id":"n2","method":""}`, `"n2"`, "-32601"},
		{`{"jsonrpc":"2.0","id":"n3","method":"tools/call","params":{"name":5}}`, `"n3"`, "-32602"},
		// No answer is due.
		{`{"jsonrpc":"2.0","method":"notifications/no-such"}`, "", ""},
		{`{"jsonrpc":"2.0","result":{}}`, "", ""},
		{`{"jsonrpc":"2.0","id":"unasked","result":{}}`, "", ""},
		{"   \r", "", ""},
	}
	s := startRawServer(t)
	var lines []string
	for _, c := range cases {
		lines = append(lines, c.line+"\n")
	}
	s.send(append(lines, listLine)...)
	got := s.untilList()

	// Replies of known id may come in any order; those of id null come in frame order.
	byID := map[string]map[string]json.RawMessage{}
	var nulls []map[string]json.RawMessage
	for _, r := range got {
		if id := string(r["id"]); id == "null" {
			nulls = append(nulls, r)
		} else if byID[id] != nil {
			t.Errorf("two replies of id %s", id)
		} else {
			byID[id] = r
		}
	}
	want := 0
	for i, c := range cases {
		if c.id == "" {
			continue
		}
		want++
		var r map[string]json.RawMessage
		if c.id == "null" {
			if len(nulls) == 0 {
				t.Errorf("case %d %.60q: no reply", i, c.line)
				continue
			}
			r, nulls = nulls[0], nulls[1:]
		} else if r = byID[c.id]; r == nil {
			t.Errorf("case %d %.60q: no reply of id %s", i, c.line, c.id)
			continue
		}
		var e struct {
			Code    json.Number
			Message string
		}
		if err := json.Unmarshal(r["error"], &e); err != nil || string(e.Code) != c.code || e.Message == "" {
			t.Errorf("case %d %.60q: reply %s, want error %s", i, c.line, r["error"], c.code)
		}
	}
	if len(got) != want {
		t.Errorf("%d replies before tools/list, want %d", len(got), want)
	}
}

// TestMCPServeAnswersAnOversizeFrame sends a 17 MiB frame, larger than the 16 MiB bound
// (with the SDK's stdio transport it ended the session): the reply is a typed JSON-RPC
// error, and the session answers tools/list after it. A frame at the bound is read and
// answered as usual.
func TestMCPServeAnswersAnOversizeFrame(t *testing.T) {
	s := startRawServer(t)
	// pad returns a tools/list request of exactly n bytes.
	pad := func(n int) string {
		const head, tail = `{"jsonrpc":"2.0","id":"big","method":"tools/list","params":{"_meta":{"pad":"`, `"}}}`
		return head + strings.Repeat("a", n-len(head)-len(tail)) + tail
	}
	s.send(pad(17<<20)+"\n", listLine)
	got := s.untilList()
	if len(got) != 1 {
		t.Fatalf("%d replies to the oversize frame, want 1: %v", len(got), got)
	}
	var e struct {
		Code int
		Data struct {
			Reason        string
			MaxFrameBytes int `json:"max_frame_bytes"`
		}
	}
	if err := json.Unmarshal(got[0]["error"], &e); err != nil || string(got[0]["id"]) != "null" ||
		e.Code != -32600 || e.Data.Reason != "frame_too_large" || e.Data.MaxFrameBytes != maxFrameBytes {
		t.Fatalf("reply to the oversize frame: %v", got[0])
	}

	s.send(pad(maxFrameBytes) + "\n")
	if r := s.reply(); string(r["id"]) != `"big"` || r["result"] == nil {
		t.Fatalf("a frame of exactly %d bytes: %s", maxFrameBytes, r["error"])
	}

	s.in.Close()
	select {
	case code := <-s.done:
		if code != 0 {
			t.Errorf("mcp serve exited %d at the end of input", code)
		}
	case <-time.After(30 * time.Second):
		t.Error("mcp serve did not end at the end of input")
	}
}
