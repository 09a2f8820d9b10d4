package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/sourcefile"
	"github.com/flameox/flameox/runtime"
)

// maxViewerRequestBytes bounds a request body (analysis arguments).
const maxViewerRequestBytes = 1 << 20

func newEvidenceServeCommand() *cobra.Command {
	var addr, store string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the evidence store read-only over HTTP (the evidence viewer API; loopback only)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			defer collectAsServer()()
			var opts []runtime.Option
			if store != "" {
				opts = append(opts, runtime.WithStoreDir(store))
			}
			rt, err := newRuntime(nil, opts...)
			if err != nil {
				return err
			}
			defer rt.Close()
			srv, ln, f := startViewer(rt, addr)
			if f != nil {
				return f
			}
			fmt.Fprintf(c.ErrOrStderr(), "flameox evidence viewer: http://%s/\n", ln.Addr())
			go func() {
				<-c.Context().Done()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = srv.Shutdown(ctx)
			}()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return failure.Wrap(err, gen.FailureCodeIoFailure, "the evidence viewer stopped")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "listen address: a loopback host (127.0.0.1, [::1] or localhost) and a port; reach it from another machine with ssh -L")
	cmd.Flags().StringVar(&store, "store", "", "serve this evidence store directory instead of the configured one")
	return cmd
}

// startViewer checks the address and listens. The viewer listens on loopback only (seed
// 002: all work stays local; decision 0046): any other address, the unspecified 0.0.0.0
// and [::] included, is INVALID_INPUT at addr before anything listens.
func startViewer(rt *runtime.Runtime, addr string) (*http.Server, net.Listener, *failure.Failure) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, failure.Invalid(failure.Path("addr"), nil, "--addr must be host:port, such as 127.0.0.1:0")
	}
	if !loopbackHost(host) {
		return nil, nil, notLoopback(port)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, failure.Wrap(err, gen.FailureCodeIoFailure, "the evidence viewer could not listen on %s", addr).
			Field(failure.Path("addr"), nil)
	}
	// localhost is resolved by the system: a name that resolved off loopback is refused too.
	bound, ok := ln.Addr().(*net.TCPAddr)
	if !ok || !bound.IP.IsLoopback() {
		ln.Close()
		return nil, nil, notLoopback(port)
	}
	h, err := viewerHandler(rt, bound)
	if err != nil {
		ln.Close()
		return nil, nil, failure.Wrap(err, gen.FailureCodeInternalFailure, "the evidence viewer could not be built")
	}
	return newViewerServer(h), newLimitListener(ln, viewerMaxConns), nil
}

// notLoopback is the refusal of a non-loopback --addr: the viewer listens on loopback
// only, and another machine reaches it through an SSH tunnel. The next action is the
// command to run here, on the port asked for (8080 when none was).
func notLoopback(port string) *failure.Failure {
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		port = "8080"
	}
	f := failure.Invalid(failure.Path("addr"), nil,
		"the evidence viewer listens on loopback only (127.0.0.1, [::1] or localhost); to reach it from another machine, "+
			"run `ssh -L %[1]s:127.0.0.1:%[1]s host` there and open http://127.0.0.1:%[1]s/", port)
	f.NextAction = &gen.NextAction{OperatorAction: &gen.OperatorAction{Kind: "operator_action",
		Message: fmt.Sprintf("Run `flameox evidence serve --addr 127.0.0.1:%[1]s` (with the same --store, if you gave one); "+
			"from another machine, run `ssh -L %[1]s:127.0.0.1:%[1]s host` (host: this machine) and open http://127.0.0.1:%[1]s/.", port)}}
	return f
}

// loopbackHost reports whether host is a loopback IP address or localhost.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// viewerHandler is the viewer's HTTP handler over the bound address: no-store and the
// hardening headers on every response, requests for other hosts refused (421) and writes
// from other origins refused (403) before anything is routed (decision 0056), bounded
// bodies, HEAD on every GET route, and the ogen server with typed failures.
func viewerHandler(rt *runtime.Runtime, bound *net.TCPAddr) (http.Handler, error) {
	v := &viewer{rt: rt}
	hosts := viewerHosts(bound)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxViewerRequestBytes)
		vw := newViewerResponse(w)
		defer vw.arm() // a response the handler left empty is written after it returns
		w = vw
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", sandboxCSP)
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Referrer-Policy", "no-referrer")
		if !slices.ContainsFunc(hosts, func(host string) bool { return strings.EqualFold(r.Host, host) }) {
			httpFailure(w, http.StatusMisdirectedRequest, failure.Invalid(failure.Path("host"), hosts,
				"this evidence viewer answers requests for %s only (its loopback address); "+
					"a request naming another host is refused, as a page of another site would send it", strings.Join(hosts, ", ")))
			return
		}
		if f := crossOrigin(r); f != nil {
			httpFailure(w, http.StatusForbidden, f)
			return
		}
		if !strings.HasPrefix(r.URL.Path, "/api/") {
			v.servePage(w, r)
			return
		}
		v.serveAPI(w, r)
	}), nil
}

// viewerHosts are the Host header values the viewer answers on the bound address: the
// port it listens on with 127.0.0.1, [::1], localhost, or the bound IP itself (any of
// 127.0.0.0/8); without a port too when that port is HTTP's default, 80. A page of
// another site whose name was made to resolve to loopback (DNS rebinding) sends its own
// name, so it is refused.
func viewerHosts(bound *net.TCPAddr) []string {
	port := strconv.Itoa(bound.Port)
	var hosts []string
	for _, name := range []string{"127.0.0.1", "::1", "localhost", bound.IP.String()} {
		if h := net.JoinHostPort(name, port); !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	if bound.Port == 80 {
		for _, h := range slices.Clone(hosts) {
			name, _, _ := net.SplitHostPort(h)
			if strings.Contains(name, ":") {
				name = "[" + name + "]"
			}
			hosts = append(hosts, name)
		}
	}
	return hosts
}

// crossOrigin refuses a state-changing request (any method but GET, HEAD and OPTIONS:
// POST /api/analyze, and the writes that would be 405) that a browser sent from another
// origin: a Sec-Fetch-Site other than same-origin or none (a typed URL), or an Origin
// other than http:// and the request's own Host ("null" included). A request with
// neither header comes from a client that is not a browser, and is served.
func crossOrigin(r *http.Request) *failure.Failure {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	self := "http://" + r.Host
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return failure.Invalid(failure.Path("sec-fetch-site"), []string{"same-origin"},
			"the viewer accepts writes from its own page only; this request came from a %s page", site)
	}
	if origin, ok := r.Header["Origin"]; ok && (len(origin) != 1 || !strings.EqualFold(origin[0], self)) {
		return failure.Invalid(failure.Path("origin"), []string{self},
			"the viewer accepts writes from its own page (Origin %s) only; this request came from another origin", self)
	}
	return nil
}

// unknownRoute is the 404 of a path the viewer does not serve: UNKNOWN_OPERATION at
// path (the contract has no NOT_FOUND; decision 0056).
func unknownRoute(w http.ResponseWriter, message string) {
	httpFailure(w, http.StatusNotFound, failure.New(gen.FailureCodeUnknownOperation, "%s", message).
		Field(failure.Path("path"), nil))
}

// httpStatus is the HTTP status of a failure code.
func httpStatus(code gen.FailureCode) int {
	switch code {
	case gen.FailureCodeInvalidInput, gen.FailureCodeUnknownOperation, gen.FailureCodeUnknownTool, gen.FailureCodeLimitExceeded:
		return http.StatusBadRequest
	case gen.FailureCodeMissingEvidence, gen.FailureCodeMissingOrChangedInput, gen.FailureCodeExpiredSessionAnalysis:
		return http.StatusNotFound
	case gen.FailureCodeUnsupportedFormat, gen.FailureCodeDecodeFailure, gen.FailureCodeAnalysisFailure:
		return http.StatusUnprocessableEntity
	case gen.FailureCodeUnavailableCapability, gen.FailureCodeCancelled:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func httpFailure(w http.ResponseWriter, status int, f *failure.Failure) {
	b, err := json.Marshal(f.Envelope())
	if err != nil {
		b, _ = json.Marshal(failure.Unencodable(err).Envelope())
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// viewer serves the API over the runtime.
type viewer struct{ rt *runtime.Runtime }

// getArtifact streams a validated artifact's stored bytes: ETag is its SHA-256, one byte
// range per request (kept by an If-Range of that ETag only), gzip served as stored (never
// as a Content-Encoding); a HEAD gets the same headers and no body.
func (v *viewer) getArtifact(w http.ResponseWriter, r *http.Request, in apiRequest) {
	sum := in.path["sha256"]
	if !isSHA256(sum) {
		httpFailure(w, http.StatusBadRequest, failure.Invalid(failure.Path("sha256"), nil,
			"an artifact digest is 64 lowercase hexadecimal characters"))
		return
	}
	evidence, _ := in.query["evidence_id"].(string)
	if _, ok := in.query["evidence_id"]; ok {
		if !isSHA256(evidence) {
			httpFailure(w, http.StatusBadRequest, failure.Invalid(failure.Path("evidence_id"), nil,
				"an evidence_id is 64 lowercase hexadecimal characters"))
			return
		}
	}
	a, f := v.rt.OpenArtifact(sum, evidence)
	if f != nil {
		httpFailure(w, httpStatus(f.Code), f)
		return
	}
	defer a.File.Close()
	head := make([]byte, 2)
	n, _ := a.File.ReadAt(head, 0)
	etag := `"` + a.SHA256 + `"`
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Accept-Ranges", "bytes")
	// Download only: stored bytes are hostile input (an XHTML "Sanitizer log" runs its
	// script when a browser renders it on the viewer's origin). octet-stream is rendered
	// by no browser, attachment makes navigation a download, and the sandbox CSP set for
	// every API response would keep a rendering scriptless and origin-less anyway.
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment",
		map[string]string{"filename": artifactFileName(a.SHA256, v.rt.Extension(a.Format), head[:n])}))
	if inm, ok := r.Header["If-None-Match"]; ok && len(inm) > 0 && (inm[0] == etag || inm[0] == "*") {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	// If-Range (RFC 9110, 13.1.5) keeps the Range only when it is the artifact's ETag,
	// compared strongly: another or a weak tag, or a date (the viewer sends no
	// Last-Modified), asks for the whole artifact, so the Range is ignored, even an
	// unsatisfiable one.
	ranges, useRange := r.Header["Range"]
	if ir, ok := r.Header["If-Range"]; ok && (len(ir) != 1 || ir[0] != etag) {
		useRange = false
	}
	start, length := int64(0), a.Size
	status := http.StatusOK
	if useRange {
		var f *failure.Failure
		if start, length, f = parseRange(strings.Join(ranges, ","), a.Size); f != nil {
			h.Set("Content-Range", fmt.Sprintf("bytes */%d", a.Size))
			httpFailure(w, http.StatusRequestedRangeNotSatisfiable, f)
			return
		}
		status = http.StatusPartialContent
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, start+length-1, a.Size))
	}
	h.Set("Content-Length", strconv.FormatInt(length, 10))
	if _, err := a.File.Seek(start, io.SeekStart); err != nil {
		h.Del("Content-Length")
		h.Del("Content-Disposition")
		httpFailure(w, http.StatusInternalServerError, failure.Wrap(err, gen.FailureCodeIoFailure, "the artifact could not be read"))
		return
	}
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return // the headers of the GET, the length of its body, and no body
	}
	// Each chunk has artifactChunkTimeout to reach the client, so a download of any size
	// proceeds while the client reads and a stalled one is cut. io.CopyN keeps sendfile.
	rc := http.NewResponseController(w)
	for length > 0 {
		chunk := min(length, artifactChunkBytes)
		_ = rc.SetWriteDeadline(time.Now().Add(artifactChunkTimeout))
		if _, err := io.CopyN(w, a.File, chunk); err != nil {
			// The status and length are sent: the short body tells the client.
			return
		}
		length -= chunk
	}
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// parseRange parses one byte range of a size-byte artifact: bytes=first-last, bytes=first-
// or bytes=-suffix. Several ranges, an inverted or malformed range, and one that starts at
// or past the end are INVALID_INPUT at the range header.
func parseRange(spec string, size int64) (start, length int64, f *failure.Failure) {
	bad := func(why string) (int64, int64, *failure.Failure) {
		return 0, 0, failure.Invalid(failure.Path("range"), nil, "Range %s; the artifact has %d bytes", why, size).
			With("size_bytes", size)
	}
	r, ok := strings.CutPrefix(spec, "bytes=")
	if !ok || strings.Contains(r, ",") {
		return bad("must be one range of bytes: bytes=first-last, bytes=first- or bytes=-suffix")
	}
	first, last, ok := strings.Cut(r, "-")
	if !ok {
		return bad("must be bytes=first-last, bytes=first- or bytes=-suffix")
	}
	num := func(s string) (int64, bool) {
		if s == "" || len(s) > 19 || strings.TrimLeft(s, "0123456789") != "" {
			return 0, false
		}
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	}
	if first == "" {
		n, ok := num(last)
		if !ok || n == 0 || size == 0 {
			return bad("asks for no bytes or is not a number")
		}
		n = min(n, size)
		return size - n, n, nil
	}
	s, ok := num(first)
	if !ok {
		return bad("does not start with a byte offset")
	}
	if s >= size {
		return bad("starts at or past the end")
	}
	e := size - 1
	if last != "" {
		if e, ok = num(last); !ok {
			return bad("does not end with a byte offset")
		}
		if e < s {
			return bad("ends before it starts")
		}
		e = min(e, size-1)
	}
	return s, e - s + 1, nil
}

// artifactFileName is the download name of an artifact: its digest and the extension
// its format's family declares (ext; .bin when none), with .gz when the payload is gzip
// (served as stored). The name is lowercase hexadecimal, letters, dots and dashes.
func artifactFileName(sum, ext string, head []byte) string {
	if ext == "" {
		ext = ".bin"
	}
	if sourcefile.IsGzip(head) {
		if ext == ".bin" {
			ext = ""
		}
		ext = strings.TrimSuffix(ext, ".gz") + ".gz"
	}
	return sum + ext
}
