package main

import (
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Connection bounds of the evidence viewer (decision 0029, "Hardening").
const (
	// viewerMaxConns caps the connections held at once; the next one waits in the
	// listen backlog until one closes (or idles out). A browser opens at most 6 HTTP/1.1
	// connections to a host, so 16 serves two tabs at full parallelism; as a connection
	// carries one request at a time (no HTTP/2 without TLS) it also caps the analyses,
	// hence analysis workers of max_memory_bytes each, the viewer runs at once.
	viewerMaxConns = 16
	// viewerReadHeaderTimeout bounds reading a request's headers.
	viewerReadHeaderTimeout = 10 * time.Second
	// viewerReadTimeout bounds reading a whole request: headers and a body of at most
	// maxViewerRequestBytes.
	viewerReadTimeout = 30 * time.Second
	// viewerWriteTimeout bounds writing a response, counted from its first byte (see
	// viewerResponse): results are bounded by max_result_bytes, charts by their layouts.
	// The server's WriteTimeout has the same value; it covers the responses net/http
	// writes itself outside the handler.
	viewerWriteTimeout = 60 * time.Second
	// viewerIdleTimeout closes a keep-alive connection idle this long, freeing its slot.
	viewerIdleTimeout = 60 * time.Second
	// viewerMaxHeaderBytes bounds request headers (the longest legitimate value is a
	// cursor of at most 4,096 characters).
	viewerMaxHeaderBytes = 64 << 10
	// An artifact download is written in chunks of artifactChunkBytes, each within
	// artifactChunkTimeout (at least 140 KB/s while a chunk is in flight), so a download
	// of any size proceeds as long as the client reads.
	artifactChunkBytes   = 8 << 20
	artifactChunkTimeout = 60 * time.Second
)

// newViewerServer is the viewer's HTTP server over handler h, with the bounds above.
func newViewerServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: viewerReadHeaderTimeout,
		ReadTimeout:       viewerReadTimeout,
		WriteTimeout:      viewerWriteTimeout,
		IdleTimeout:       viewerIdleTimeout,
		MaxHeaderBytes:    viewerMaxHeaderBytes,
	}
}

// viewerResponse counts the write deadline from the first byte of the response rather
// than from the request: an analysis (or the pages of a chart) may run for its
// limits.timeout_seconds (300 s by default, 3,600 s at most) before anything is written,
// and a write deadline armed at the request would cut it. The handler starts with no
// write deadline; the first WriteHeader, Write or ReadFrom arms viewerWriteTimeout.
type viewerResponse struct {
	http.ResponseWriter
	rc    *http.ResponseController
	armed bool
}

func newViewerResponse(w http.ResponseWriter) *viewerResponse {
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	return &viewerResponse{ResponseWriter: w, rc: rc}
}

func (v *viewerResponse) arm() {
	if !v.armed {
		v.armed = true
		_ = v.rc.SetWriteDeadline(time.Now().Add(viewerWriteTimeout))
	}
}

func (v *viewerResponse) WriteHeader(status int) {
	v.arm()
	v.ResponseWriter.WriteHeader(status)
}

func (v *viewerResponse) Write(b []byte) (int, error) {
	v.arm()
	return v.ResponseWriter.Write(b)
}

// ReadFrom keeps net/http's sendfile path for artifact downloads.
func (v *viewerResponse) ReadFrom(r io.Reader) (int64, error) {
	v.arm()
	return io.Copy(v.ResponseWriter, r)
}

// Unwrap lets http.ResponseController reach the connection.
func (v *viewerResponse) Unwrap() http.ResponseWriter { return v.ResponseWriter }

// limitListener accepts at most cap(sem) connections at once, as
// golang.org/x/net/netutil.LimitListener does (that module is only an indirect
// dependency here): Accept waits until a connection closes, so a client past the cap
// waits in the kernel's listen backlog rather than being refused.
type limitListener struct {
	net.Listener
	sem    chan struct{}
	done   chan struct{}
	closed sync.Once
	// waiting, when set (by a test), is called each time Accept finds every slot taken.
	waiting func()
}

func newLimitListener(ln net.Listener, n int) *limitListener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, n), done: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	default:
		if l.waiting != nil {
			l.waiting()
		}
		select {
		case l.sem <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

// Close stops a waiting Accept and closes the listener.
func (l *limitListener) Close() error {
	l.closed.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn frees its slot once, when it is closed.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// ReadFrom lets net/http reach the TCP connection's sendfile.
func (c *limitConn) ReadFrom(r io.Reader) (int64, error) { return io.Copy(c.Conn, r) }

// CloseWrite lets net/http half-close the connection after a failure, so the client reads
// the response before the connection is reset.
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
