package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
)

// viewerRequest sends method path (kept as written, query included) to base with the
// given headers ("Host" sets the Host header) and body, and returns the response with
// its body read.
func viewerRequest(t *testing.T, base, method, path string, headers map[string]string, body string) (*http.Response, []byte) {
	t.Helper()
	return doViewer(t, viewerHTTPRequest(t, base, method, path, headers, body))
}

func viewerHTTPRequest(t *testing.T, base, method, path string, headers map[string]string, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, base+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	p, q, _ := strings.Cut(path, "?")
	req.URL.Opaque, req.URL.RawQuery = p, q
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	return req
}

// viewerRoutes are a request to every route of the fixture's viewer that answers 200:
// the page, its assets, the charts, the API and an artifact (whole, with its evidence).
func viewerRoutes(t *testing.T, fx *viewerFixture) (get []string, digest, analyzeBody string) {
	t.Helper()
	sum := sha256.Sum256(fx.pstats)
	digest = hex.EncodeToString(sum[:])
	ev := fx.evidence[0]
	get = []string{"/", "/assets/app.js", "/assets/app.css", "/charts/flamegraph/" + ev,
		"/api/evidence", "/api/evidence?page_size=1", "/api/evidence/" + ev,
		"/api/artifacts/" + digest, "/api/artifacts/" + digest + "?evidence_id=" + ev}
	sources, f := fx.rt.EvidenceSources(ev)
	if f != nil {
		t.Fatal(f)
	}
	b, _ := json.Marshal(map[string]any{"sources": sources, "page_size": 3})
	return get, digest, string(b)
}

// TestViewerHostCheck replays DNS rebinding: a request naming another host (a page of
// evil.example resolved to 127.0.0.1, on the viewer's port) is 421 with the typed
// failure on every route, artifacts and the page included; the bound host in each
// accepted spelling is served.
func TestViewerHostCheck(t *testing.T) {
	fx := newViewerFixture(t)
	u, _ := url.Parse(fx.base)
	port := u.Port()
	get, digest, analyze := viewerRoutes(t, fx)
	accepted := []string{"127.0.0.1:" + port, "[::1]:" + port, "localhost:" + port}

	type route struct{ method, path, body string }
	var routes []route
	for _, p := range get {
		routes = append(routes, route{"GET", p, ""}, route{"HEAD", p, ""})
	}
	routes = append(routes,
		route{"POST", "/api/analyze/rank_cpu_hotspots", analyze},
		route{"GET", "/api/artifacts/" + strings.Repeat("0", 64), ""},
		route{"GET", "/index.html", ""},
		route{"GET", "/api/nothing", ""},
		route{"DELETE", "/api/evidence", ""},
		route{"OPTIONS", "/api/artifacts/" + digest, ""},
	)
	for _, host := range []string{"evil.example:" + port, "evil.example", "127.0.0.1:1", "localhost.:" + port,
		"127.0.0.1.nip.io:" + port, "[::1]:1"} {
		for _, r := range routes {
			t.Run(host+" "+r.method+" "+r.path, func(t *testing.T) {
				req := viewerHTTPRequest(t, fx.base, r.method, r.path, map[string]string{"Host": host}, r.body)
				if r.method == "HEAD" {
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusMisdirectedRequest {
						t.Errorf("status %d, want 421", resp.StatusCode)
					}
					checkHardened(t, resp.Header, true)
					return
				}
				expectFailure(t, req, http.StatusMisdirectedRequest, gen.FailureCodeInvalidInput, "host")
			})
		}
	}
	// The failure names the hosts the viewer answers.
	_, b := viewerRequest(t, fx.base, "GET", "/api/artifacts/"+digest, map[string]string{"Host": "evil.example:" + port}, "")
	var env gen.Failure
	if err := json.Unmarshal(b, &env); err != nil || !slices.Equal(env.AcceptedValues, accepted) {
		t.Errorf("accepted_values %v, want %v (%v)", env.AcceptedValues, accepted, err)
	}

	// HTTP/1.0 without a Host header names no host: refused as well.
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /api/artifacts/"+digest+" HTTP/1.0\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("HTTP/1.0 without Host: status %d, want 421", resp.StatusCode)
	}

	for _, host := range append(accepted, "LOCALHOST:"+port) {
		for _, r := range append(slices.Clone(routes[:2*len(get)]), route{"POST", "/api/analyze/rank_cpu_hotspots", analyze}) {
			resp, _ := viewerRequest(t, fx.base, r.method, r.path, map[string]string{"Host": host}, r.body)
			if resp.StatusCode != 200 {
				t.Errorf("Host %s: %s %s: status %d, want 200", host, r.method, r.path, resp.StatusCode)
			}
		}
	}
}

// TestViewerCrossOrigin checks that a state-changing request from another origin is 403
// with the typed failure, whether the browser says so by Sec-Fetch-Site or by Origin; the
// page's own POST and a client that sends neither header are served, and reads are not
// refused by origin (the browser keeps their responses from another origin).
func TestViewerCrossOrigin(t *testing.T) {
	fx := newViewerFixture(t)
	u, _ := url.Parse(fx.base)
	_, _, analyze := viewerRoutes(t, fx)
	self := "http://" + u.Host
	const path = "/api/analyze/rank_cpu_hotspots"
	refused := []struct {
		name    string
		headers map[string]string
		field   string
	}{
		{"cross-site Origin", map[string]string{"Origin": "http://evil.example"}, "origin"},
		{"cross-site Origin on the viewer's port", map[string]string{"Origin": "http://evil.example:" + u.Port()}, "origin"},
		{"opaque Origin", map[string]string{"Origin": "null"}, "origin"},
		{"another spelling of loopback", map[string]string{"Origin": "http://localhost:" + u.Port()}, "origin"},
		{"another scheme", map[string]string{"Origin": "https://" + u.Host}, "origin"},
		{"another port", map[string]string{"Origin": "http://127.0.0.1:1"}, "origin"},
		{"cross-site fetch metadata", map[string]string{"Sec-Fetch-Site": "cross-site"}, "sec-fetch-site"},
		{"same-site fetch metadata", map[string]string{"Sec-Fetch-Site": "same-site"}, "sec-fetch-site"},
		{"same-origin metadata, cross-site Origin", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://evil.example"}, "origin"},
		{"cross-site metadata, own Origin", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": self}, "sec-fetch-site"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			expectFailure(t, viewerHTTPRequest(t, fx.base, "POST", path, c.headers, analyze), http.StatusForbidden, gen.FailureCodeInvalidInput, c.field)
		})
	}
	t.Run("write to an unknown method", func(t *testing.T) {
		expectFailure(t, viewerHTTPRequest(t, fx.base, "DELETE", "/api/evidence", map[string]string{"Origin": "http://evil.example"}, ""),
			http.StatusForbidden, gen.FailureCodeInvalidInput, "origin")
	})
	for _, c := range []struct {
		name    string
		headers map[string]string
	}{
		{"same-origin", map[string]string{"Origin": self, "Sec-Fetch-Site": "same-origin"}},
		{"same-origin Origin only", map[string]string{"Origin": self}},
		{"same-origin metadata only", map[string]string{"Sec-Fetch-Site": "same-origin"}},
		{"not a browser", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, b := viewerRequest(t, fx.base, "POST", path, c.headers, analyze)
			if resp.StatusCode != 200 || !strings.Contains(string(b), `"rank_cpu_hotspots"`) {
				t.Errorf("status %d: %.300s", resp.StatusCode, b)
			}
		})
	}
	t.Run("a read from another origin", func(t *testing.T) {
		resp, _ := viewerRequest(t, fx.base, "GET", "/api/evidence", map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, "")
		if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("status %d, Access-Control-Allow-Origin %q; want 200 and none", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
		}
	})
}

// TestViewerHead checks HEAD on every GET route: the status and headers of the GET
// (Content-Length included: the whole or ranged artifact's), and no body; and that 405s
// name HEAD beside GET.
func TestViewerHead(t *testing.T) {
	fx := newViewerFixture(t)
	get, digest, _ := viewerRoutes(t, fx)
	type probe struct {
		path    string
		headers map[string]string
	}
	var probes []probe
	for _, p := range get {
		probes = append(probes, probe{p, nil})
	}
	etag := `"` + digest + `"`
	probes = append(probes,
		probe{"/api/artifacts/" + digest, map[string]string{"Range": "bytes=10-19"}},
		probe{"/api/artifacts/" + digest, map[string]string{"Range": "bytes=-7", "If-Range": etag}},
		probe{"/api/artifacts/" + digest, map[string]string{"Range": "bytes=10-19", "If-Range": `"stale"`}},
		probe{"/api/artifacts/" + digest, map[string]string{"If-None-Match": etag}},
		probe{"/api/artifacts/" + digest, map[string]string{"Range": "bytes=5-1"}},
		probe{"/api/artifacts/" + strings.Repeat("0", 64), nil},
		probe{"/api/evidence/" + strings.Repeat("0", 64), nil},
		probe{"/api/evidence?page_size=0", nil},
		probe{"/charts/flamegraph/" + strings.Repeat("0", 64), nil},
		probe{"/nothing", nil},
		probe{"/api/nothing", nil},
	)
	for _, p := range probes {
		t.Run(p.path+" "+p.headers["Range"]+p.headers["If-Range"]+p.headers["If-None-Match"], func(t *testing.T) {
			g, gb := viewerRequest(t, fx.base, "GET", p.path, p.headers, "")
			h, hb := viewerRequest(t, fx.base, "HEAD", p.path, p.headers, "")
			if len(hb) != 0 {
				t.Errorf("HEAD has a body of %d bytes", len(hb))
			}
			if h.StatusCode != g.StatusCode {
				t.Errorf("HEAD status %d, GET %d", h.StatusCode, g.StatusCode)
			}
			g.Header.Del("Date")
			h.Header.Del("Date")
			if !equalHeaders(g.Header, h.Header) {
				t.Errorf("HEAD headers differ from GET's:\nGET  %v\nHEAD %v", g.Header, h.Header)
			}
			// Equal headers give HEAD the GET's Content-Length; it is the GET body's.
			if cl := g.Header.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(gb)) {
				t.Errorf("GET Content-Length %s, body %d bytes", cl, len(gb))
			}
		})
	}
	// The artifact's lengths, whole and ranged.
	for _, c := range []struct {
		headers map[string]string
		status  int
		length  int
	}{
		{nil, 200, len(fx.pstats)},
		{map[string]string{"Range": "bytes=10-19"}, 206, 10},
		{map[string]string{"Range": "bytes=10-19", "If-Range": `"stale"`}, 200, len(fx.pstats)},
	} {
		h, _ := viewerRequest(t, fx.base, "HEAD", "/api/artifacts/"+digest, c.headers, "")
		if h.StatusCode != c.status || h.Header.Get("Content-Length") != strconv.Itoa(c.length) {
			t.Errorf("HEAD %v: status %d, Content-Length %q; want %d, %d", c.headers, h.StatusCode, h.Header.Get("Content-Length"), c.status, c.length)
		}
	}
	for _, c := range []struct{ method, path, allow string }{
		{"DELETE", "/api/evidence", "GET, HEAD"},
		{"PUT", "/api/artifacts/" + digest, "GET, HEAD"},
		{"HEAD", "/api/analyze/rank_cpu_hotspots", "POST"},
		{"GET", "/api/analyze/rank_cpu_hotspots", "POST"},
		{"POST", "/", "GET, HEAD"},
	} {
		resp, _ := viewerRequest(t, fx.base, c.method, c.path, nil, "")
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != c.allow {
			t.Errorf("%s %s: status %d, Allow %q; want 405, %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), c.allow)
		}
	}
	// A preflight gets no CORS grant.
	resp, _ := viewerRequest(t, fx.base, "OPTIONS", "/api/analyze/rank_cpu_hotspots",
		map[string]string{"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"}, "")
	for k := range resp.Header {
		if strings.HasPrefix(k, "Access-Control-") {
			t.Errorf("preflight answered %s: %s", k, resp.Header.Get(k))
		}
	}
}

// equalHeaders compares two header sets key by key.
func equalHeaders(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// TestViewerIfRange checks If-Range against the artifact's ETag (strong comparison): the
// ETag itself keeps the range (206, or 416 when it cannot be satisfied); a stale or weak
// tag or a date gets the whole artifact (200), even with an unsatisfiable range.
func TestViewerIfRange(t *testing.T) {
	fx := newViewerFixture(t)
	_, digest, _ := viewerRoutes(t, fx)
	etag := `"` + digest + `"`
	path := "/api/artifacts/" + digest
	for _, c := range []struct {
		name, rng, ifRange string
		status             int
		body               []byte
	}{
		{"current ETag", "bytes=10-19", etag, 206, fx.pstats[10:20]},
		{"no If-Range", "bytes=10-19", "", 206, fx.pstats[10:20]},
		{"stale ETag", "bytes=10-19", `"` + strings.Repeat("0", 64) + `"`, 200, fx.pstats},
		{"weak ETag", "bytes=10-19", "W/" + etag, 200, fx.pstats},
		{"unquoted ETag", "bytes=10-19", digest, 200, fx.pstats},
		{"date", "bytes=10-19", "Wed, 21 Oct 2015 07:28:00 GMT", 200, fx.pstats},
		{"stale ETag, unsatisfiable range", "bytes=20-10", `"stale"`, 200, fx.pstats},
		{"If-Range without Range", "", `"stale"`, 200, fx.pstats},
	} {
		t.Run(c.name, func(t *testing.T) {
			headers := map[string]string{}
			if c.rng != "" {
				headers["Range"] = c.rng
			}
			if c.ifRange != "" {
				headers["If-Range"] = c.ifRange
			}
			resp, b := viewerRequest(t, fx.base, "GET", path, headers, "")
			if resp.StatusCode != c.status || string(b) != string(c.body) {
				t.Errorf("status %d, %d bytes; want %d, %d bytes", resp.StatusCode, len(b), c.status, len(c.body))
			}
			if (resp.Header.Get("Content-Range") != "") != (c.status == 206) {
				t.Errorf("Content-Range %q on a %d", resp.Header.Get("Content-Range"), resp.StatusCode)
			}
		})
	}
	expectFailure(t, viewerHTTPRequest(t, fx.base, "GET", path, map[string]string{"Range": "bytes=20-10", "If-Range": etag}, ""),
		http.StatusRequestedRangeNotSatisfiable, gen.FailureCodeInvalidInput, "range")
}

// TestViewerUnknownRoute checks that a path the viewer does not serve, in the API or
// outside it, is 404 with UNKNOWN_OPERATION at path, whatever the method.
func TestViewerUnknownRoute(t *testing.T) {
	fx := newViewerFixture(t)
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/nothing"},
		{"GET", "/api/evidence/" + strings.Repeat("0", 64) + "/more"},
		{"POST", "/api/analyze"},
		{"GET", "/api"},
		{"GET", "/index.html"},
		{"GET", "/charts/"},
		{"DELETE", "/nothing"},
	} {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			expectFailure(t, viewerHTTPRequest(t, fx.base, c.method, c.path, nil, ""), http.StatusNotFound, gen.FailureCodeUnknownOperation, "path")
		})
	}
}
