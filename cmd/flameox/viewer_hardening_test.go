package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/runtime"
)

// xhtmlArtifact is an XML document a browser renders as XHTML and whose script it runs:
// served inline on the viewer's origin it could read /api/evidence.
const xhtmlArtifact = `<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><script>alert(1)</script></html>`

// xhtmlSanitizerLog is the same script in a document the Compute Sanitizer reader
// accepts (its root's local name), so that evidence records it as compute-sanitizer, the
// format that was served as application/xml.
const xhtmlSanitizerLog = `<?xml version="1.0"?><ComputeSanitizerOutput xmlns="http://www.w3.org/1999/xhtml"><script>alert(1)</script></ComputeSanitizerOutput>`

// preserveFile analyzes content (written to a file named name) with op, preserves the
// analysis and returns the evidence id and the content's SHA-256.
func preserveFile(t *testing.T, rt *runtime.Runtime, op, name, content string, source map[string]any) (evidence, sum string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	source["kind"], source["path"] = "path", path
	args, _ := json.Marshal(map[string]any{"sources": []any{source}})
	res, f := rt.Call(context.Background(), op, args)
	if f != nil {
		t.Fatalf("%s: %v", op, f)
	}
	p, f := rt.Preserve(res.(*runtime.Result).AnalysisID)
	if f != nil {
		t.Fatal(f)
	}
	s := sha256.Sum256([]byte(content))
	return p.EvidenceID, hex.EncodeToString(s[:])
}

// TestViewerArtifactDownloadOnly checks that a preserved artifact holding a script is
// served for download only: application/octet-stream, Content-Disposition attachment
// with a file name of its digest, nosniff and a sandbox CSP, with or without the
// evidence that records its format, whole or as a range; and that every other response,
// the page included, carries nosniff and a CSP.
func TestViewerArtifactDownloadOnly(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	rt, err := newRuntime(nil, runtime.WithStoreDir(store))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	textEvidence, textSum := preserveFile(t, rt, "preview_artifact", "page.xml", xhtmlArtifact, map[string]any{"format": "text"})
	sanEvidence, sanSum := preserveFile(t, rt, "inspect_sanitizer_failures", "sanitizer.xml", xhtmlSanitizerLog, map[string]any{})
	base := serveViewer(t, store)

	artifacts := []struct {
		name, path, rangeHeader, body, filename string
		status                                  int
	}{
		{"XHTML recorded as text", "/api/artifacts/" + textSum + "?evidence_id=" + textEvidence, "", xhtmlArtifact, textSum + ".txt", 200},
		{"XHTML without evidence", "/api/artifacts/" + textSum, "", xhtmlArtifact, textSum + ".bin", 200},
		{"XHTML range", "/api/artifacts/" + textSum + "?evidence_id=" + textEvidence, "bytes=0-20", xhtmlArtifact[:21], textSum + ".txt", 206},
		{"XHTML Sanitizer log", "/api/artifacts/" + sanSum + "?evidence_id=" + sanEvidence, "", xhtmlSanitizerLog, sanSum + ".xml", 200},
	}
	for _, c := range artifacts {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", base+c.path, nil)
			if c.rangeHeader != "" {
				req.Header.Set("Range", c.rangeHeader)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.status || string(body) != c.body {
				t.Errorf("status %d, body %q; want %d, %q", resp.StatusCode, body, c.status, c.body)
			}
			h := resp.Header
			if got := h.Get("Content-Type"); got != "application/octet-stream" {
				t.Errorf("Content-Type %q, want application/octet-stream", got)
			}
			disp, params, err := mime.ParseMediaType(h.Get("Content-Disposition"))
			if err != nil || disp != "attachment" || params["filename"] != c.filename {
				t.Errorf("Content-Disposition %q, want attachment with filename %q", h.Get("Content-Disposition"), c.filename)
			}
			checkHardened(t, h, true)
		})
	}

	// Every other response: the page and its assets (the page's CSP), the API, charts,
	// and failures (the sandbox).
	others := []struct {
		name, path string
		status     int
		sandbox    bool
	}{
		{"page", "/", 200, false},
		{"script", "/assets/app.js", 200, false},
		{"style", "/assets/app.css", 200, false},
		{"evidence list", "/api/evidence", 200, true},
		{"evidence", "/api/evidence/" + sanEvidence, 200, true},
		{"chart of non-CPU evidence", "/charts/flamegraph/" + sanEvidence, 422, true},
		{"unknown page", "/index.html", 404, true},
		{"unknown endpoint", "/api/nothing", 404, true},
		{"absent artifact", "/api/artifacts/" + strings.Repeat("0", 64), 404, true},
	}
	for _, c := range others {
		t.Run(c.name, func(t *testing.T) {
			resp, err := http.Get(base + c.path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Errorf("status %d, want %d", resp.StatusCode, c.status)
			}
			if d := resp.Header.Get("Content-Disposition"); d != "" {
				t.Errorf("Content-Disposition %q on a non-artifact", d)
			}
			checkHardened(t, resp.Header, c.sandbox)
		})
	}

	// The page links artifacts for download, never to be opened in the page.
	js, err := viewerPage.ReadFile("viewerpage/app.js")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `a.setAttribute("download", "")`) {
		t.Error("app.js does not mark the artifact link as a download")
	}
}

// checkHardened checks nosniff, the same-origin resource policy, no referrer and the CSP:
// the sandbox when sandbox is set, else the page's policy (no inline script or style).
func checkHardened(t *testing.T, h http.Header, sandbox bool) {
	t.Helper()
	for k, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store",
		"Cross-Origin-Resource-Policy": "same-origin", "Referrer-Policy": "no-referrer"} {
		if got := h.Get(k); got != want {
			t.Errorf("%s %q, want %q", k, got, want)
		}
	}
	csp := h.Get("Content-Security-Policy")
	want := pageCSP
	if sandbox {
		want = sandboxCSP
	}
	if csp != want {
		t.Errorf("Content-Security-Policy %q, want %q", csp, want)
	}
	directives := map[string]bool{}
	for _, d := range strings.Split(csp, ";") {
		directives[strings.TrimSpace(d)] = true
	}
	if !directives["default-src 'none'"] || !directives["frame-ancestors 'none'"] || sandbox != directives["sandbox"] ||
		strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("Content-Security-Policy %q: want default-src 'none', frame-ancestors 'none', no unsafe-*, sandbox %v", csp, sandbox)
	}
}

// TestViewerServerBounds checks the server's timeouts and header bound and that the
// viewer's listener caps its connections at viewerMaxConns.
func TestViewerServerBounds(t *testing.T) {
	rt, err := newRuntime(nil, runtime.WithStoreDir(filepath.Join(t.TempDir(), "store")))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	srv, ln, f := startViewer(rt, "127.0.0.1:0")
	if f != nil {
		t.Fatal(f)
	}
	defer ln.Close()
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"ReadHeaderTimeout", srv.ReadHeaderTimeout, viewerReadHeaderTimeout},
		{"ReadTimeout", srv.ReadTimeout, viewerReadTimeout},
		{"WriteTimeout", srv.WriteTimeout, viewerWriteTimeout},
		{"IdleTimeout", srv.IdleTimeout, viewerIdleTimeout},
		{"MaxHeaderBytes", srv.MaxHeaderBytes, viewerMaxHeaderBytes},
	} {
		if c.got != c.want {
			t.Errorf("%s %v, want %v", c.name, c.got, c.want)
		}
	}
	lim, ok := ln.(*limitListener)
	if !ok || cap(lim.sem) != viewerMaxConns {
		t.Fatalf("listener %T, want a limitListener of %d connections", ln, viewerMaxConns)
	}
}

// TestViewerConnectionCap serves the viewer with a cap of 2 connections: with two
// keep-alive connections open the server's next Accept waits (the listener says so)
// with exactly two accepted while a third client has connected and sent its request;
// closing one connection lets the third be accepted and answered.
func TestViewerConnectionCap(t *testing.T) {
	rt, err := newRuntime(nil, runtime.WithStoreDir(filepath.Join(t.TempDir(), "store")))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	srv, ln, f := startViewer(rt, "127.0.0.1:0")
	if f != nil {
		t.Fatal(f)
	}
	capped := newLimitListener(ln.(*limitListener).Listener, 2)
	waited := make(chan struct{}, 1)
	capped.waiting = func() {
		select {
		case waited <- struct{}{}:
		default:
		}
	}
	var accepted atomic.Int64
	srv.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			accepted.Add(1)
		}
	}
	go func() { _ = srv.Serve(capped) }()
	defer srv.Close()
	addr := capped.Addr().String()

	type client struct {
		conn net.Conn
		r    *bufio.Reader
	}
	dial := func() client {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := io.WriteString(c, "GET /assets/app.css HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		return client{c, bufio.NewReader(c)}
	}
	answered := func(c client) {
		t.Helper()
		resp, err := http.ReadResponse(c.r, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Close {
			t.Fatalf("status %d, close %v; want 200 on a kept-alive connection", resp.StatusCode, resp.Close)
		}
	}
	a, b := dial(), dial()
	answered(a)
	answered(b)
	c := dial() // connected (the kernel's backlog) and its request sent
	<-waited
	if n := accepted.Load(); n != 2 {
		t.Fatalf("%d connections accepted while the listener waits, want 2", n)
	}
	a.conn.Close()
	answered(c)
	if n := accepted.Load(); n != 3 {
		t.Errorf("%d connections accepted, want 3", n)
	}
}

// scriptSanitizerLog is a Compute Sanitizer log (by its root's local name) in the XHTML
// namespace whose script records, in localStorage, the origin it ran on.
const scriptSanitizerLog = `<?xml version="1.0"?><ComputeSanitizerOutput xmlns="http://www.w3.org/1999/xhtml"><script>localStorage.setItem("ran", location.origin)</script></ComputeSanitizerOutput>`

// TestViewerBrowserArtifactScript replays the stored XSS in headless Chromium: the same
// XHTML served inline (application/xml) from another origin runs its script there (the
// control), while on the viewer neither the page's artifact link nor navigating to the
// artifact's URL runs it on the viewer's origin.
func TestViewerBrowserArtifactScript(t *testing.T) {
	browser := testtool.Require(t, "chromium")
	store := filepath.Join(t.TempDir(), "store")
	rt, err := newRuntime(nil, runtime.WithStoreDir(store))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	evidence, sum := preserveFile(t, rt, "inspect_sanitizer_failures", "sanitizer.xml", scriptSanitizerLog, map[string]any{})
	base := serveViewer(t, store)
	inline := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		_, _ = io.WriteString(w, scriptSanitizerLog)
	}))
	defer inline.Close()

	ctx := headless(t, browser, 60*time.Second)
	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	ran := func(what string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`localStorage.getItem("ran") ?? ""`))
		step(what, err)
		return v
	}

	step("open the inline control", chromedp.Do(ctx, chromedp.Navigate(inline.URL+"/"), chromedp.WaitReady(`script`)))
	if got := ran("read the control's storage"); got != inline.URL {
		t.Fatalf("the control's script did not run (%q): this browser would not show the XSS", got)
	}

	step("open the evidence", chromedp.Do(ctx, chromedp.Navigate(base+"/#/evidence/"+evidence),
		chromedp.WaitVisible(`body[data-view="evidence"][data-ready="true"]`)))
	link := `#inputs-table tbody a[href^="/api/artifacts/` + sum + `"]`
	download, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector(`+jsonString(link)+`).hasAttribute("download")`))
	step("read the artifact link", err)
	if !download {
		t.Error("the artifact link is not a download")
	}
	step("click the artifact link", chromedp.Do(ctx, chromedp.Click(link)))
	// Navigating to an attachment is a download, which Chromium reports as aborted.
	_ = chromedp.Do(ctx, chromedp.Navigate(base+"/api/artifacts/"+sum+"?evidence_id="+evidence))
	step("reopen the viewer", chromedp.Do(ctx, chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(`body[data-view="list"][data-ready="true"]`)))
	if got := ran("read the viewer's storage"); got != "" {
		t.Errorf("the artifact's script ran on %s", got)
	}
}
