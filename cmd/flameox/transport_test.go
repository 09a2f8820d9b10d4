package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// Lines of a session that ends its input right after its requests.
const (
	initializeLine  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	initializedLine = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// TestMCPServeAnswersEveryRequestBeforeEOF gives `mcp serve` requests followed at once by
// the end of its input: every request gets its reply before the server exits 0. The
// SDK's connection closed at the read EOF and dropped the replies still due (tools/list,
// at times initialize too, and a tools/call still running).
func TestMCPServeAnswersEveryRequestBeforeEOF(t *testing.T) {
	t.Setenv("FLAMEOX_DATA_DIR", filepath.Join(t.TempDir(), "store"))
	small := filepath.Join(t.TempDir(), "small.txt")
	if err := os.WriteFile(small, []byte("first\nsecond\nthird\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pathJSON, _ := json.Marshal(small)
	call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"preview_artifact","arguments":{"sources":[{"kind":"path","path":` + string(pathJSON) + `}]}}}`
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	var pings []string
	for i := 10; i < 30; i++ {
		pings = append(pings, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i))
	}
	// More requests than a session has in flight (maxInFlight): the input is read in turn.
	var many, manyIDs []string
	for i := 100; i < 100+3*maxInFlight; i++ {
		many = append(many, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i))
		manyIDs = append(manyIDs, fmt.Sprint(i))
	}
	cases := []struct {
		name  string
		input string
		want  []string // the ids of the replies, in any order
	}{
		{"tools/list", strings.Join([]string{initializeLine, initializedLine, list}, "\n") + "\n", []string{"1", "2"}},
		{"no final newline", strings.Join([]string{initializeLine, initializedLine, list}, "\n"), []string{"1", "2"}},
		{"tools/call in flight", strings.Join([]string{initializeLine, initializedLine, call}, "\n") + "\n", []string{"1", "3"}},
		{"call, list and pings", strings.Join(append([]string{initializeLine, initializedLine, call, list}, pings...), "\n") + "\n",
			append([]string{"1", "2", "3"}, strings.Fields("10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29")...)},
		{"more than in flight", strings.Join(append([]string{initializeLine, initializedLine, list}, many...), "\n") + "\n",
			append([]string{"1", "2"}, manyIDs...)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, stderr bytes.Buffer
			if code := run([]string{"mcp", "serve"}, strings.NewReader(c.input), &out, &stderr); code != 0 {
				t.Errorf("mcp serve exited %d: %s", code, stderr.String())
			}
			got := map[string]map[string]json.RawMessage{}
			for _, line := range strings.Split(out.String(), "\n") {
				if line == "" {
					continue
				}
				var r map[string]json.RawMessage
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					t.Fatalf("the server wrote %q: %v", line, err)
				}
				got[string(r["id"])] = r
			}
			for _, id := range c.want {
				r := got[id]
				if r == nil {
					t.Errorf("no reply of id %s; the replies:\n%s", id, out.String())
					continue
				}
				delete(got, id)
				var res struct {
					Tools             []struct{ Name string }
					IsError           bool
					StructuredContent struct{ Status string }
				}
				if err := json.Unmarshal(r["result"], &res); err != nil || r["error"] != nil {
					t.Errorf("reply %s: %s", id, r["error"])
				}
				switch id {
				case "2":
					if len(res.Tools) == 0 {
						t.Errorf("tools/list listed no tools: %s", r["result"])
					}
				case "3":
					if res.IsError || res.StructuredContent.Status != "complete" {
						t.Errorf("preview_artifact: %.300s", r["result"])
					}
				}
			}
			for id := range got {
				t.Errorf("an unexpected reply of id %s", id)
			}
		})
	}
}

// TestLineTransportDrainIsBounded ends the input while a call that returns only when
// cancelled is in flight: once the drain bound has passed the session ends anyway, and the
// call is cancelled without a reply.
func TestLineTransportDrainIsBounded(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "drain", Version: "1"}, nil)
	started, cancelled := make(chan struct{}), make(chan struct{})
	s.AddTool(&mcp.Tool{Name: "hang", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			close(started)
			<-ctx.Done()
			close(cancelled)
			return nil, ctx.Err()
		})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ended := make(chan error, 1)
	go func() {
		ended <- s.Run(context.Background(), &lineTransport{in: inR, out: outW, drain: time.Millisecond})
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	exchange := func(line, wantID string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
		if wantID == "" {
			return
		}
		var r struct{ ID json.RawMessage }
		if !lines.Scan() || json.Unmarshal(lines.Bytes(), &r) != nil || string(r.ID) != wantID {
			t.Fatalf("after %.40s the session wrote %q, want the reply of id %s", line, lines.Text(), wantID)
		}
	}
	exchange(initializeLine, "1")
	exchange(initializedLine, "")
	exchange(`{"jsonrpc":"2.0","id":"hang","method":"tools/call","params":{"name":"hang","arguments":{}}}`, "")
	<-started
	inW.Close()
	if err := <-ended; err != nil {
		t.Errorf("the session ended with %v", err)
	}
	for lines.Scan() {
		t.Errorf("the session wrote %s after the end of its input", lines.Text())
	}
	select {
	case <-cancelled:
	default:
		t.Error("the session ended before the hung call returned")
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// capturingTransport hands the test the connection it makes.
type capturingTransport struct {
	*lineTransport
	conn chan *lineConn
}

func (t capturingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.lineTransport.Connect(ctx)
	if err == nil {
		t.conn <- c.(*lineConn)
	}
	return c, err
}

// TestLineTransportBackpressure: a client writes 200 requests without reading a reply.
// The session reads the first maxInFlight, and with that many unanswered it reads no
// further (its input stops at maxInFlight requests plus the read buffer's lookahead),
// instead of reading on and holding a reply for each; once the client reads, every
// request is answered. Nothing here measures time.
func TestLineTransportBackpressure(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "backpressure", Version: "1"}, nil)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	in := &countingReader{r: inR}
	conns := make(chan *lineConn, 1)
	ended := make(chan error, 1)
	go func() {
		ended <- s.Run(context.Background(), capturingTransport{&lineTransport{in: in, out: outW}, conns})
		outW.Close()
	}()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	out := bufio.NewReader(outR)
	readID := func() string {
		t.Helper()
		line, err := out.ReadBytes('\n')
		var r struct {
			ID     json.RawMessage
			Result json.RawMessage
		}
		if err != nil || json.Unmarshal(line, &r) != nil || r.Result == nil {
			t.Fatalf("the session wrote %q (%v), want a result", line, err)
		}
		return string(r.ID)
	}
	if _, err := io.WriteString(inW, initializeLine+"\n"+initializedLine+"\n"); err != nil {
		t.Fatal(err)
	}
	if id := readID(); id != "1" {
		t.Fatalf("initialize answered as id %s", id)
	}
	conn := <-conns
	start := in.n.Load()

	// Each request is one 8 KiB line (ids of fixed width), so that the read buffer's
	// lookahead is a few requests.
	const n = 200
	pad := strings.Repeat("a", 8<<10)
	line := func(i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":"p%03d","method":"ping","params":{"_meta":{"pad":"%s"}}}`, i, pad) + "\n"
	}
	size := int64(len(line(0)))
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for i := range n {
			if _, err := io.WriteString(inW, line(i)); err != nil {
				return
			}
		}
	}()
	// Until the session is full and its read loop waits for an answer; none can be written
	// (the client reads nothing), so it reads nothing more. A session that read all the
	// input instead fails below.
	for full := false; !full; time.Sleep(time.Millisecond) {
		select {
		case <-wrote:
			full = true
			continue
		default:
		}
		conn.pendingMu.Lock()
		full = conn.admitting && len(conn.pending) == maxInFlight
		conn.pendingMu.Unlock()
	}
	read := (in.n.Load() - start) / size
	lookahead := int64(64<<10)/size + 2 // the read buffer, and the request waiting for its slot
	if read < maxInFlight || read > maxInFlight+lookahead {
		t.Fatalf("the session read %d of %d requests with %d in flight, want %d to %d", read, n, maxInFlight, maxInFlight, maxInFlight+lookahead)
	}

	// The client reads: every request is answered, once.
	seen := map[string]bool{}
	for range n {
		id := readID()
		if seen[id] {
			t.Fatalf("two replies of id %s", id)
		}
		seen[id] = true
	}
	inW.Close()
	if err := <-ended; err != nil {
		t.Errorf("the session ended with %v", err)
	}
	if _, err := out.ReadByte(); err != io.EOF {
		t.Errorf("the session wrote more after the last reply")
	}
}

// TestEncodeFrameIsTheSDKEncoding: every frame the server writes is byte for byte what
// jsonrpc.EncodeMessage writes, with its newline: responses with a result (numeric and
// string ids, HTML characters and escapes in the id and the result, which the SDK does
// not escape), error responses, requests and notifications.
func TestEncodeFrameIsTheSDKEncoding(t *testing.T) {
	// A result as the SDK hands it over: marshaled compact, without HTML escaping.
	var result bytes.Buffer
	enc := json.NewEncoder(&result)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]any{"tools": []any{map[string]any{"name": "a<b>&c", "d": "é \u2028 \"q\" \\ \n"}}, "n": 1.5}); err != nil {
		t.Fatal(err)
	}
	res := strings.TrimSpace(result.String())
	for _, frame := range []string{
		`{"jsonrpc":"2.0","id":7,"result":` + res + `}`,
		`{"jsonrpc":"2.0","id":0,"result":{}}`,
		`{"jsonrpc":"2.0","id":"x<&>\"y","result":` + res + `}`,
		`{"jsonrpc":"2.0","id":9007199254740993,"result":[1,2]}`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad <params>"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`,
	} {
		msg, err := jsonrpc.DecodeMessage([]byte(frame))
		if err != nil {
			t.Fatalf("%s: %v", frame, err)
		}
		want, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeFrame(msg)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want)+"\n" {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}
