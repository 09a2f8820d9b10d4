package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/runtime"
)

// viewerFixture is a store holding real preserved cProfile evidence and a viewer over it.
type viewerFixture struct {
	store    string
	pstats   []byte // the corpus file's bytes
	evidence []string
	rt       *runtime.Runtime // a separate runtime over the same store: the CLI's view
	base     string
}

func newViewerFixture(t *testing.T) *viewerFixture {
	t.Helper()
	fx := &viewerFixture{store: filepath.Join(t.TempDir(), "store")}
	src := filepath.Join(corpusDir(t), "gprof2dot__print1.pstats")
	var err error
	if fx.pstats, err = os.ReadFile(src); err != nil {
		t.Fatal(err)
	}
	if fx.rt, err = newRuntime(nil, runtime.WithStoreDir(fx.store)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fx.rt.Close)
	// Two analyses of the same profile (two page sizes) preserved as two bundles.
	for _, size := range []int{5, 7} {
		args, _ := json.Marshal(map[string]any{"sources": []any{map[string]any{"kind": "path", "path": src}}, "page_size": size})
		res, f := fx.rt.Call(context.Background(), "rank_cpu_hotspots", args)
		if f != nil {
			t.Fatal(f)
		}
		p, f := fx.rt.Preserve(res.(*runtime.Result).AnalysisID)
		if f != nil {
			t.Fatal(f)
		}
		fx.evidence = append(fx.evidence, p.EvidenceID)
	}
	fx.base = serveViewer(t, fx.store)
	return fx
}

// serveViewer starts a viewer (its own runtime, as `flameox evidence serve --store`) on
// 127.0.0.1:0 and returns its base URL.
func serveViewer(t *testing.T, store string) string {
	t.Helper()
	rt, err := newRuntime(nil, runtime.WithStoreDir(store))
	if err != nil {
		t.Fatal(err)
	}
	srv, ln, f := startViewer(rt, "127.0.0.1:0")
	if f != nil {
		t.Fatal(f)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); rt.Close() })
	return "http://" + ln.Addr().String()
}

// storeSnapshot records every path of the store with its mode, size and digest.
func storeSnapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		v := info.Mode().String()
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			v += " " + hex.EncodeToString(sum[:])
		}
		out[p] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func call(t *testing.T, rt *runtime.Runtime, tool string, args any) any {
	t.Helper()
	raw, _ := json.Marshal(args)
	res, f := rt.Call(context.Background(), tool, raw)
	if f != nil {
		t.Fatal(f)
	}
	return testtool.JSONValue(t, res)
}

func TestViewerAPI(t *testing.T) {
	fx := newViewerFixture(t)
	before := storeSnapshot(t, fx.store)

	t.Run("query pages like query_evidence", func(t *testing.T) {
		var got []string
		query := "page_size=1"
		for pages := 0; ; pages++ {
			if pages > 2 {
				t.Fatal("paging did not end")
			}
			res, doc := viewerDocument(t, fx.base, "GET", "/api/evidence?"+query, "", "QueryResult")
			if res.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("Cache-Control %q", res.Header.Get("Cache-Control"))
			}
			// The viewer's document is the tool's: same JSON.
			args := map[string]any{"page_size": 1}
			q, _ := url.ParseQuery(query)
			if c := q.Get("cursor"); c != "" {
				args["cursor"] = c
			}
			if d := cmp.Diff(call(t, fx.rt, "query_evidence", args), doc); d != "" {
				t.Fatalf("viewer page differs from query_evidence (-tool +viewer):\n%s", d)
			}
			page := doc.(map[string]any)
			for _, e := range page["evidence"].([]any) {
				got = append(got, e.(map[string]any)["evidence_id"].(string))
			}
			next, ok := page["next_page"].(map[string]any)
			if !ok {
				break
			}
			query = "page_size=1&cursor=" + url.QueryEscape(next["arguments"].(map[string]any)["cursor"].(string))
		}
		want := append([]string{}, fx.evidence...)
		if want[0] > want[1] {
			want[0], want[1] = want[1], want[0]
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("evidence ids (-want +got):\n%s", d)
		}
	})

	t.Run("inspect is the inspect_evidence projection", func(t *testing.T) {
		_, doc := viewerDocument(t, fx.base, "GET", "/api/evidence/"+fx.evidence[0], "", "EvidenceProjection")
		want := call(t, fx.rt, "inspect_evidence", map[string]any{"evidence_id": fx.evidence[0]})
		if d := cmp.Diff(want, doc); d != "" {
			t.Errorf("(-inspect_evidence +viewer):\n%s", d)
		}
	})

	sum := sha256.Sum256(fx.pstats)
	digest := hex.EncodeToString(sum[:])

	t.Run("artifact bytes, ETag and one range", func(t *testing.T) {
		resp, body := viewerRequest(t, fx.base, "GET", "/api/artifacts/"+digest+"?evidence_id="+fx.evidence[0], nil, "")
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		if !bytes.Equal(body, fx.pstats) {
			t.Errorf("artifact bytes differ from the corpus file (%d vs %d bytes)", len(body), len(fx.pstats))
		}
		h := resp.Header
		for k, want := range map[string]string{"ETag": `"` + digest + `"`, "Cache-Control": "no-store",
			"Content-Type": "application/octet-stream", "Accept-Ranges": "bytes",
			"Content-Disposition": "attachment; filename=" + digest + ".pstats", "X-Content-Type-Options": "nosniff"} {
			if h.Get(k) != want {
				t.Errorf("%s: got %q, want %q", k, h.Get(k), want)
			}
		}
		resp, body = viewerRequest(t, fx.base, "GET", "/api/artifacts/"+digest, map[string]string{"Range": "bytes=10-19"}, "")
		if resp.StatusCode != 206 {
			t.Fatalf("range response status %d", resp.StatusCode)
		}
		if !bytes.Equal(body, fx.pstats[10:20]) {
			t.Errorf("range bytes %q, want %q", body, fx.pstats[10:20])
		}
		if got, want := resp.Header.Get("Content-Range"), "bytes 10-19/"+itoa(len(fx.pstats)); got != want {
			t.Errorf("Content-Range %q, want %q", got, want)
		}
		resp, body = viewerRequest(t, fx.base, "GET", "/api/artifacts/"+digest, map[string]string{"If-None-Match": `"` + digest + `"`}, "")
		if resp.StatusCode != 304 || len(body) != 0 {
			t.Errorf("If-None-Match with the ETag: status %d and %d bytes, want 304 and none", resp.StatusCode, len(body))
		}
	})

	t.Run("analyze over evidence sources equals the tool", func(t *testing.T) {
		sources, f := fx.rt.EvidenceSources(fx.evidence[0])
		if f != nil {
			t.Fatal(f)
		}
		args := map[string]any{"sources": sources, "page_size": 5}
		b, _ := json.Marshal(args)
		_, doc := viewerDocument(t, fx.base, "POST", "/api/analyze/rank_cpu_hotspots", string(b), "AnalysisResult")
		got := doc.(map[string]any)
		want := call(t, fx.rt, "rank_cpu_hotspots", args).(map[string]any)
		if got["analysis_id"] != nil {
			t.Errorf("the viewer's result has a session handle: %v", got["analysis_id"])
		}
		delete(want, "analysis_id")
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("(-tool +viewer):\n%s", d)
		}
		rows := got["blocks"].([]any)
		if len(rows) == 0 {
			t.Fatal("no blocks")
		}
	})

	t.Run("hostile requests get typed failures", func(t *testing.T) {
		long := strings.Repeat("9", 30)
		cases := []struct {
			name, method, path, rangeHeader, body string
			status                                int
			code                                  gen.FailureCode
			field                                 string
		}{
			{"short digest", "GET", "/api/artifacts/abc", "", "", 400, gen.FailureCodeInvalidInput, "sha256"},
			{"uppercase digest", "GET", "/api/artifacts/" + strings.ToUpper(digest), "", "", 400, gen.FailureCodeInvalidInput, "sha256"},
			{"encoded dot-dot", "GET", "/api/artifacts/..%2F..%2F..%2Fetc%2Fpasswd", "", "", 400, gen.FailureCodeInvalidInput, "sha256"},
			{"dot-dot segments", "GET", "/api/artifacts/../../etc/passwd", "", "", 404, gen.FailureCodeUnknownOperation, "path"},
			{"absent artifact", "GET", "/api/artifacts/" + strings.Repeat("0", 64), "", "", 404, gen.FailureCodeMissingEvidence, ""},
			{"inverted range", "GET", "/api/artifacts/" + digest, "bytes=20-10", "", 416, gen.FailureCodeInvalidInput, "range"},
			{"range past the end", "GET", "/api/artifacts/" + digest, "bytes=" + itoa(len(fx.pstats)) + "-", "", 416, gen.FailureCodeInvalidInput, "range"},
			{"huge range", "GET", "/api/artifacts/" + digest, "bytes=" + long + "-" + long, "", 416, gen.FailureCodeInvalidInput, "range"},
			{"several ranges", "GET", "/api/artifacts/" + digest, "bytes=0-1,4-5", "", 416, gen.FailureCodeInvalidInput, "range"},
			{"absent evidence", "GET", "/api/evidence/" + strings.Repeat("0", 64), "", "", 404, gen.FailureCodeMissingEvidence, "evidence_id"},
			{"bad evidence id", "GET", "/api/evidence/xyz", "", "", 400, gen.FailureCodeInvalidInput, "evidence_id"},
			{"page size over the bound", "GET", "/api/evidence?page_size=5000", "", "", 400, gen.FailureCodeInvalidInput, "page_size"},
			{"forged cursor", "GET", "/api/evidence?cursor=abc", "", "", 400, gen.FailureCodeInvalidInput, "cursor"},
			{"write method", "DELETE", "/api/evidence", "", "", 405, gen.FailureCodeInvalidInput, "method"},
			{"path source", "POST", "/api/analyze/rank_cpu_hotspots", "",
				`{"sources":[{"kind":"path","path":"/etc/passwd"}]}`, 400, gen.FailureCodeInvalidInput, "sources/0/kind"},
			{"unknown operation", "POST", "/api/analyze/no_such_tool", "", `{"sources":[]}`, 400, gen.FailureCodeUnknownOperation, "operation"},
			{"not an object", "POST", "/api/analyze/rank_cpu_hotspots", "", `[1,2]`, 400, gen.FailureCodeInvalidInput, "body"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				req, err := http.NewRequest(c.method, fx.base+"/", strings.NewReader(c.body))
				if err != nil {
					t.Fatal(err)
				}
				// Opaque keeps the path exactly as written (no client-side cleaning).
				req.URL.Opaque = strings.SplitN(c.path, "?", 2)[0]
				if q := strings.SplitN(c.path, "?", 2); len(q) == 2 {
					req.URL.RawQuery = q[1]
				}
				if c.rangeHeader != "" {
					req.Header.Set("Range", c.rangeHeader)
				}
				if c.body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				expectFailure(t, req, c.status, c.code, c.field)
			})
		}
	})

	if d := cmp.Diff(before, storeSnapshot(t, fx.store)); d != "" {
		t.Errorf("the viewer changed the store (-before +after):\n%s", d)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// expectFailure sends req and checks a typed failure envelope with status, code and field.
func expectFailure(t *testing.T, req *http.Request, status int, code gen.FailureCode, field string) {
	t.Helper()
	resp, b := doViewer(t, req)
	if resp.StatusCode != status {
		t.Errorf("status %d, want %d: %s", resp.StatusCode, status, b)
	}
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q", resp.Header.Get("Cache-Control"))
	}
	checkViewerDocument(t, b, "Failure")
	var env gen.Failure
	if err := json.Unmarshal(b, &env); err != nil || env.Status != "failed" && env.Status != "" {
		t.Fatalf("not a failure envelope (%v): %s", err, b)
	}
	if env.Code != code {
		t.Errorf("code %s, want %s: %s", env.Code, code, b)
	}
	var path []string
	for _, p := range env.FieldPath {
		path = append(path, strings.Trim(jsonString(p), `"`))
	}
	if got := strings.Join(path, "/"); got != field {
		t.Errorf("field_path %q, want %q: %s", got, field, b)
	}
	if strings.Contains(string(b), "/etc/passwd") || strings.Contains(string(b), os.TempDir()) {
		t.Errorf("the failure echoes a path: %s", b)
	}
}

func jsonString(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestViewerAccess checks that the viewer listens on loopback only (decision 0046): every
// other address is INVALID_INPUT at addr before anything listens, with the SSH tunnel
// in the message and a next action whose command runs as given.
func TestViewerAccess(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	rt, err := newRuntime(nil, runtime.WithStoreDir(store))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for _, tc := range []struct{ addr, port string }{
		{"0.0.0.0:0", "8080"},
		{":0", "8080"},
		{"[::]:0", "8080"},
		{"192.168.1.20:9000", "9000"},
		{"10.0.0.7:8080", "8080"},
		{"example.com:0", "8080"},
		{"localhost.example.com:0", "8080"},
	} {
		_, _, f := startViewer(rt, tc.addr)
		if f == nil || f.Code != gen.FailureCodeInvalidInput || len(f.FieldPath) != 1 || f.FieldPath[0] != "addr" {
			t.Errorf("%s: %v, want INVALID_INPUT at addr", tc.addr, f)
			continue
		}
		tunnel := "ssh -L " + tc.port + ":127.0.0.1:" + tc.port + " host"
		if !strings.Contains(f.Message, "loopback only") || !strings.Contains(f.Message, tunnel) ||
			!strings.Contains(f.Message, "http://127.0.0.1:"+tc.port+"/") {
			t.Errorf("%s: message %q does not say loopback only and %q", tc.addr, f.Message, tunnel)
		}
		next := f.Envelope().NextAction
		if next == nil || next.OperatorAction == nil ||
			!strings.HasPrefix(next.OperatorAction.Message, "Run `flameox evidence serve --addr 127.0.0.1:"+tc.port+"`") ||
			!strings.Contains(next.OperatorAction.Message, tunnel) {
			t.Errorf("%s: next action %+v", tc.addr, next)
		}
	}
	accepted := []string{"127.0.0.1:0", "localhost:0"}
	if ln, err := net.Listen("tcp", "[::1]:0"); err == nil {
		ln.Close()
		accepted = append(accepted, "[::1]:0")
	}
	for _, addr := range accepted {
		srv, ln, f := startViewer(rt, addr)
		if f != nil {
			t.Errorf("%s: %v", addr, f)
			continue
		}
		go func() { _ = srv.Serve(ln) }()
		base := "http://" + ln.Addr().String()
		_, doc := viewerDocument(t, base, "GET", "/api/evidence", "", "QueryResult")
		if page := doc.(map[string]any); len(page["evidence"].([]any)) != 0 || page["inventory_size"] != 0.0 {
			t.Errorf("%s: an empty store lists %v", addr, page)
		}
		req := viewerHTTPRequest(t, base, "GET", "/api/evidence/"+strings.Repeat("a", 64), nil, "")
		expectFailure(t, req, 404, gen.FailureCodeMissingEvidence, "evidence_id")
		srv.Close()
	}
}

// TestViewerRefusalNextActionRuns runs the command a refused --addr names, as given,
// through the CLI: it serves on loopback until cancelled.
func TestViewerRefusalNextActionRuns(t *testing.T) {
	t.Setenv("FLAMEOX_DATA_DIR", filepath.Join(t.TempDir(), "store"))
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(free.Addr().String())
	free.Close()
	var refusal syncBuffer
	if code := run([]string{"evidence", "serve", "--addr", "0.0.0.0:" + port}, nil, io.Discard, &refusal); code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, refusal.String())
	}
	var env struct {
		Code       string `json:"code"`
		NextAction struct {
			Kind    string `json:"kind"`
			Message string `json:"message"`
		} `json:"next_action"`
	}
	if err := json.Unmarshal([]byte(refusal.String()), &env); err != nil || env.Code != "INVALID_INPUT" || env.NextAction.Kind != "operator_action" {
		t.Fatalf("refusal %s (%v)", refusal.String(), err)
	}
	_, command, _ := strings.Cut(env.NextAction.Message, "`")
	command, _, _ = strings.Cut(command, "`")
	argv := strings.Fields(command)
	if len(argv) < 2 || argv[0] != "flameox" {
		t.Fatalf("next action names no flameox command: %q", env.NextAction.Message)
	}
	var stderr syncBuffer
	cmd := newRootCommand(nil, io.Discard, &stderr)
	cmd.SetArgs(argv[1:])
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	want := "flameox evidence viewer: http://127.0.0.1:" + port + "/"
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stderr.String(), want) {
		select {
		case err := <-done:
			t.Fatalf("%q ended: %v: %s", command, err, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q printed %q, want %q", command, stderr.String(), want)
		}
	}
	resp, err := http.Get("http://127.0.0.1:" + port + "/api/evidence")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET /api/evidence: %d", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("%q after cancel: %v", command, err)
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and a polling reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestViewerGzipArtifact checks that a gzip payload is served as stored: the bytes of the
// corpus file, for download (octet-stream, a .gz file name), and no Content-Encoding a
// client would undo.
func TestViewerGzipArtifact(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	src := filepath.Join(corpusDir(t), "speedscope__simple.pprof.gz")
	want, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := newRuntime(nil, runtime.WithStoreDir(store))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	args, _ := json.Marshal(map[string]any{"sources": []any{map[string]any{"kind": "path", "path": src}}})
	res, f := rt.Call(context.Background(), "rank_cpu_hotspots", args)
	if f != nil {
		t.Fatal(f)
	}
	p, f := rt.Preserve(res.(*runtime.Result).AnalysisID)
	if f != nil {
		t.Fatal(f)
	}
	sum := sha256.Sum256(want)
	base := serveViewer(t, store)
	req, _ := http.NewRequest("GET", base+"/api/artifacts/"+hex.EncodeToString(sum[:])+"?evidence_id="+p.EvidenceID, nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !bytes.Equal(got, want) {
		t.Errorf("status %d, %d bytes; want 200 and the %d bytes of the corpus file", resp.StatusCode, len(got), len(want))
	}
	if ct, ce := resp.Header.Get("Content-Type"), resp.Header.Get("Content-Encoding"); ct != "application/octet-stream" || ce != "" {
		t.Errorf("Content-Type %q, Content-Encoding %q; want application/octet-stream and none", ct, ce)
	}
	if got, want := resp.Header.Get("Content-Disposition"), "attachment; filename="+hex.EncodeToString(sum[:])+".pprof.gz"; got != want {
		t.Errorf("Content-Disposition %q, want %q", got, want)
	}
}
