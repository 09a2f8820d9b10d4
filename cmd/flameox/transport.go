package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of one inbound frame of `mcp serve`.
const (
	// maxFrameBytes bounds one line, without its newline: the SDK's stdio default.
	maxFrameBytes = mcp.DefaultMaxLineLength
	// maxFrameDepth is the deepest nesting of objects and arrays the SDK decodes.
	maxFrameDepth = 1000
	// drainTimeout bounds how long `mcp serve` outlives its input: at the end of stdin
	// the session waits up to this long for the requests it has read to be answered. A
	// request still unanswered then is cancelled without a reply (the SDK writes nothing
	// once the input has ended), so a hung call cannot keep the process forever. A client
	// that wants a longer call's answer keeps stdin open until the answer arrives.
	drainTimeout = time.Minute
	// maxInFlight bounds the requests of a session read and not yet answered (decision
	// 0047). With that many in flight the session reads no further request until one is
	// answered, so a client that sends without reading its replies holds at most this many
	// replies in the server, each waiting for stdout in the handler that wrote it.
	maxInFlight = 32
)

// lineTransport is the stdio transport of `mcp serve`: newline-delimited JSON-RPC like
// the SDK's StdioTransport, except that a frame that is not a JSON-RPC message (not
// JSON, not UTF-8, too deep, too large, a batch, a bad id, version, method or params) is
// answered here with a JSON-RPC error (-32700 parse error, -32600 invalid request; id
// null when it cannot be read) and the session goes on reading. The SDK's transport ends
// the session on such a frame without a reply.
//
// At the end of the input every request read before it is answered before the session
// ends (see lineConn.Read), within drainTimeout; with the SDK's transport the session
// ended at once and dropped the replies still due.
//
// Backpressure (decision 0047): at most maxInFlight requests are unanswered at once. The
// SDK runs each request in its own goroutine and writes its reply there; stdout is not
// buffered, so the replies waiting for a client that does not read are those handlers,
// blocked in Write, and with maxInFlight of them unanswered the session stops reading its
// input (see lineConn.admit). The SDK's transport read on and ran every request it was
// sent, each holding its reply: 8,000 requests held 2.95 GB.
type lineTransport struct {
	in          io.Reader
	out         io.Writer
	maxFrame    int           // 0 means maxFrameBytes
	drain       time.Duration // 0 means drainTimeout
	maxInFlight int           // 0 means maxInFlight
}

// Connect implements mcp.Transport.
func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	max := t.maxFrame
	if max <= 0 {
		max = maxFrameBytes
	}
	drain := t.drain
	if drain <= 0 {
		drain = drainTimeout
	}
	inFlight := t.maxInFlight
	if inFlight <= 0 {
		inFlight = maxInFlight
	}
	c := &lineConn{in: t.in, out: t.out, drain: drain, maxInFlight: inFlight, incoming: make(chan frameOrErr),
		closed: make(chan struct{}), pending: map[jsonrpc.ID]bool{}, changed: make(chan struct{})}
	go c.readLoop(max)
	return c, nil
}

type frameOrErr struct {
	msg jsonrpc.Message
	err error
}

type lineConn struct {
	in          io.Reader
	out         io.Writer
	drain       time.Duration
	maxInFlight int

	writeMu sync.Mutex

	incoming  chan frameOrErr
	closeOnce sync.Once
	closed    chan struct{}

	// pendingMu guards pending, writeFailed, changed and admitting. pending holds the ids
	// of the requests read and no response has been written for; changed is closed (and
	// replaced) whenever one is answered or a write fails. admitting is true while the
	// input waits for a request to be answered (tests read it).
	pendingMu   sync.Mutex
	pending     map[jsonrpc.ID]bool
	writeFailed bool
	changed     chan struct{}
	admitting   bool
}

// readLoop reads frames until the input ends or fails, hands each JSON-RPC message to
// Read and answers each malformed frame itself.
func (c *lineConn) readLoop(max int) {
	r := bufio.NewReaderSize(c.in, 64<<10)
	var frame []byte
	for {
		oversize, err := readFrame(r, max, &frame)
		var msg jsonrpc.Message
		switch {
		case oversize:
			err = c.reject(nil, jsonrpc.CodeInvalidRequest, "frame_too_large",
				"the frame exceeds "+strconv.Itoa(max)+" bytes; it was discarded up to its newline", map[string]any{"max_frame_bytes": max})
		case len(bytes.TrimSpace(frame)) > 0:
			var bad *frameError
			if msg, bad = decodeFrame(frame); bad != nil {
				if werr := c.reject(bad.id, bad.code, bad.reason, bad.message, nil); werr != nil {
					err = werr
				}
			}
		}
		if msg != nil {
			if !c.admit(msg) {
				return
			}
			select {
			case c.incoming <- frameOrErr{msg: msg}:
			case <-c.closed:
				return
			}
		}
		if err != nil {
			select {
			case c.incoming <- frameOrErr{err: err}:
			case <-c.closed:
			}
			return
		}
	}
}

// readFrame reads one line into *frame, without its line ending. A line longer than max
// is read to its end and discarded, and oversize is true (err is then nil). A last line
// without a newline is returned first, and io.EOF at the next call.
func readFrame(r *bufio.Reader, max int, frame *[]byte) (oversize bool, err error) {
	*frame = (*frame)[:0]
	for {
		chunk, err := r.ReadSlice('\n')
		if !oversize {
			if len(*frame)+len(chunk) > max+2 { // room for "\r\n"
				oversize = true
				*frame = (*frame)[:0]
			} else {
				*frame = append(*frame, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && err != io.EOF {
			*frame = (*frame)[:0]
			return false, err
		}
		*frame = bytes.TrimSuffix(bytes.TrimSuffix(*frame, []byte("\n")), []byte("\r"))
		if !oversize && len(*frame) > max {
			oversize = true
		}
		if err == io.EOF && (oversize || len(*frame) > 0) {
			// The last frame has no newline: answer it, then end at the next read.
			r.Reset(eofReader{})
			return oversize, nil
		}
		return oversize, err
	}
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// frameError is a malformed frame: the JSON-RPC error code, a stable reason for the
// error's data, a message and the request id where it could be read (nil: null).
type frameError struct {
	id      json.RawMessage
	code    int64
	reason  string
	message string
}

// decodeFrame decodes one frame as a single JSON-RPC message, checking what the SDK's
// decoder would otherwise fail on or accept wrongly.
func decodeFrame(frame []byte) (jsonrpc.Message, *frameError) {
	bad := func(id json.RawMessage, code int64, reason, message string) (jsonrpc.Message, *frameError) {
		return nil, &frameError{id: id, code: code, reason: reason, message: message}
	}
	if !utf8.Valid(frame) {
		return bad(nil, jsonrpc.CodeParseError, "invalid_utf8", "the frame is not valid UTF-8")
	}
	if tooDeep(frame, maxFrameDepth) {
		return bad(nil, jsonrpc.CodeInvalidRequest, "nesting_too_deep",
			"the frame nests objects and arrays deeper than "+strconv.Itoa(maxFrameDepth)+" levels")
	}
	if !json.Valid(frame) {
		return bad(nil, jsonrpc.CodeParseError, "invalid_json", "the frame is not one JSON value")
	}
	switch bytes.TrimSpace(frame)[0] {
	case '{':
	case '[':
		return bad(nil, jsonrpc.CodeInvalidRequest, "batch_not_supported",
			"JSON-RPC batches are not supported; send one message per line")
	default:
		return bad(nil, jsonrpc.CodeInvalidRequest, "not_an_object", "a JSON-RPC message is a JSON object")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(frame, &m); err != nil {
		return bad(nil, jsonrpc.CodeParseError, "invalid_json", "the frame is not one JSON object")
	}
	rawID, hasID := m["id"]
	var id json.RawMessage
	if hasID {
		if !validID(rawID) {
			return bad(nil, jsonrpc.CodeInvalidRequest, "invalid_id",
				"the id must be a string, an integer of at most 2^53 in magnitude, or null")
		}
		id = rawID
	}
	if string(m["jsonrpc"]) != `"2.0"` {
		return bad(id, jsonrpc.CodeInvalidRequest, "invalid_version", `the frame's "jsonrpc" member must be "2.0"`)
	}
	method, isRequest := m["method"]
	if isRequest {
		if len(method) == 0 || method[0] != '"' {
			return bad(id, jsonrpc.CodeInvalidRequest, "invalid_method", "the method must be a string")
		}
		if p, ok := m["params"]; ok && !(p[0] == '{' || p[0] == '[' || string(p) == "null") {
			return bad(id, jsonrpc.CodeInvalidRequest, "invalid_params", "params must be an object or an array")
		}
	} else {
		_, hasResult := m["result"]
		_, hasError := m["error"]
		if hasResult == hasError {
			return bad(id, jsonrpc.CodeInvalidRequest, "invalid_message",
				"the frame is neither a request (method) nor a response (result or error)")
		}
		if !hasID || string(id) == "null" {
			// A response to no request of this server: nothing to answer and nothing to
			// route, as with a response of an unknown id.
			return nil, nil
		}
	}
	msg, err := jsonrpc.DecodeMessage(frame)
	if err != nil {
		return bad(id, jsonrpc.CodeInvalidRequest, "invalid_message", "the frame is not a valid JSON-RPC message")
	}
	return msg, nil
}

// validID reports whether raw is a JSON-RPC id the SDK represents exactly: a string, null
// or an integer within +-2^53.
func validID(raw json.RawMessage) bool {
	switch {
	case string(raw) == "null":
		return true
	case raw[0] == '"':
		return true
	case raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9':
		n, err := strconv.ParseInt(string(raw), 10, 64)
		return err == nil && n >= -(1<<53) && n <= 1<<53
	}
	return false
}

// tooDeep reports whether frame nests objects and arrays deeper than max, skipping strings.
func tooDeep(frame []byte, max int) bool {
	depth, inString, escaped := 0, false, false
	for _, b := range frame {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			if depth++; depth > max {
				return true
			}
		case b == '}' || b == ']':
			depth--
		}
	}
	return false
}

// reject writes a JSON-RPC error response for a malformed frame. id nil is written as null,
// which the SDK's encoder would omit.
func (c *lineConn) reject(id json.RawMessage, code int64, reason, message string, data map[string]any) error {
	if id == nil {
		id = json.RawMessage("null")
	}
	if data == nil {
		data = map[string]any{}
	}
	data["reason"] = reason
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: message, Data: mustJSON(data)}})
	if err != nil {
		return err
	}
	return c.write(append(b, '\n'))
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// write writes one frame, b with its newline; a failed write ends any wait for replies
// (see drained).
func (c *lineConn) write(b []byte) error {
	c.writeMu.Lock()
	_, err := c.out.Write(b)
	c.writeMu.Unlock()
	if err != nil {
		c.settle(nil)
	}
	return err
}

// methodListen is the SEP-2575 subscriptions/listen request, which by design is answered
// only when the session ends: the end of the input does not wait for it.
const methodListen = "subscriptions/listen"

// admit counts a request that is due a reply in pending before the read loop hands it
// on, first waiting, while maxInFlight requests are unanswered, until one is answered: the
// input is not read meanwhile (backpressure). It returns false when the connection closed
// during the wait. Notifications and responses pass at once (a notifications/cancelled
// read before the next request still cancels what is in flight); so do a request of an id
// already pending, which the SDK refuses at once, and subscriptions/listen, which is
// answered only when the session ends. Once a write has failed nothing waits: no reply
// can be written, so none is held.
func (c *lineConn) admit(msg jsonrpc.Message) bool {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() || req.Method == methodListen {
		return true
	}
	c.pendingMu.Lock()
	defer c.pendingMu.Unlock()
	for !c.pending[req.ID] && len(c.pending) >= c.maxInFlight && !c.writeFailed {
		changed := c.changed
		c.admitting = true
		c.pendingMu.Unlock()
		select {
		case <-changed:
		case <-c.closed:
			c.pendingMu.Lock()
			c.admitting = false
			return false
		}
		c.pendingMu.Lock()
		c.admitting = false
	}
	c.pending[req.ID] = true
	return true
}

// Read implements mcp.Connection. It returns the end of the input (or a read error) only
// once every request it delivered has been answered, no write can succeed any more, or
// the drain bound has passed (see drainTimeout). The SDK's connection stops writing
// replies and cancels the requests in flight as soon as Read fails, so delivering EOF
// at once dropped the replies to the requests that came just before it.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case v := <-c.incoming:
		if v.err != nil {
			return nil, c.drained(ctx, v.err)
		}
		return v.msg, nil
	case <-c.closed:
		return nil, io.EOF
	}
}

// drained waits until no reply is due, a write has failed, the connection is closed or
// c.drain has passed, and returns err, the error that ended the input.
func (c *lineConn) drained(ctx context.Context, err error) error {
	bound := time.NewTimer(c.drain)
	defer bound.Stop()
	for {
		c.pendingMu.Lock()
		done := len(c.pending) == 0 || c.writeFailed
		changed := c.changed
		c.pendingMu.Unlock()
		if done {
			return err
		}
		select {
		case <-changed:
		case <-bound.C:
			return err
		case <-c.closed:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// settle records, under pendingMu, that the response to id was written (id nil: that a
// write failed) and wakes whoever waits on pending.
func (c *lineConn) settle(id *jsonrpc.ID) {
	c.pendingMu.Lock()
	defer c.pendingMu.Unlock()
	if id != nil {
		delete(c.pending, *id)
	} else {
		c.writeFailed = true
	}
	close(c.changed)
	c.changed = make(chan struct{})
}

// Write implements mcp.Connection. A response written (stdout is not buffered) settles
// its request, for admit's wait for a request slot and Read's at the end of the input.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := encodeFrame(msg)
	if err != nil {
		return err
	}
	if err := c.write(b); err != nil {
		return err
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.settle(&resp.ID)
	}
	return nil
}

// encodeFrame returns msg as one output frame, its newline included, byte for byte what
// jsonrpc.EncodeMessage writes. A response with a result is written around the result's
// bytes, which the SDK marshaled compact and without HTML escaping, so that encoding them
// again could only copy them: on a tools/list answer EncodeMessage scanned, compacted and
// copied 280 kB once more, and the newline cost another copy. Anything else goes through
// EncodeMessage.
func encodeFrame(msg jsonrpc.Message) ([]byte, error) {
	if r, ok := msg.(*jsonrpc.Response); ok && r.Error == nil && len(r.Result) > 0 && r.ID.IsValid() {
		var id bytes.Buffer
		enc := json.NewEncoder(&id)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(r.ID.Raw()); err == nil {
			const head, mid = `{"jsonrpc":"2.0","id":`, `,"result":`
			idb := bytes.TrimRight(id.Bytes(), "\n")
			b := make([]byte, 0, len(head)+len(idb)+len(mid)+len(r.Result)+2)
			b = append(append(append(append(b, head...), idb...), mid...), r.Result...)
			return append(b, '}', '\n'), nil
		}
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Close implements mcp.Connection: it stops reading and closes the input where it can be
// closed. The output (stdout) stays open, as with the SDK's StdioTransport.
func (c *lineConn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.closed)
		if rc, ok := c.in.(io.Closer); ok {
			err = rc.Close()
		}
	})
	return err
}

// SessionID implements mcp.Connection; a stdio session has none.
func (c *lineConn) SessionID() string { return "" }
