// Package h1 is a lean HTTP/1.1 client transport for the relay's upstream
// calls. net/http's Transport runs two goroutines per connection (a read
// loop and a write loop) besides the caller's; for a gateway holding
// thousands of long streams those stacks and buffers are most of its
// memory. Here the calling goroutine writes the request and reads the
// response itself, so an open stream costs one connection and one 4 KiB
// read buffer. Connections are kept alive and reused; a call whose context
// ends closes its connection at once.
//
// Requests through an HTTP proxy (HTTP_PROXY and friends) are handed to a
// standard Transport, which knows how to tunnel.
package h1

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"
)

// handshakeTimeout bounds a TLS handshake, as net/http's
// TLSHandshakeTimeout does for the fallback transport.
const handshakeTimeout = 10 * time.Second

// recentIdle is how long a connection may have been idle and still be
// reused without asking the kernel whether the upstream closed it.
const recentIdle = 100 * time.Millisecond

// Transport is an http.RoundTripper. The zero value is not usable; use New.
type Transport struct {
	// MaxIdlePerHost bounds the idle connections kept per host.
	MaxIdlePerHost int
	// IdleTimeout closes connections idle for longer.
	IdleTimeout time.Duration
	// HeaderTimeout bounds the wait for a response's headers.
	HeaderTimeout time.Duration
	// Fallback serves requests that go through a proxy.
	Fallback http.RoundTripper
	// TLS configures https upstreams (ServerName is set per host).
	TLS *tls.Config

	dialer net.Dialer
	mu     sync.Mutex
	idle   map[string][]*conn
	bufs   sync.Pool // *bufio.Writer for writing requests
}

// New returns a transport with the relay's defaults.
func New(fallback http.RoundTripper) *Transport {
	return &Transport{
		MaxIdlePerHost: 64,
		IdleTimeout:    90 * time.Second,
		HeaderTimeout:  5 * time.Minute,
		Fallback:       fallback,
		dialer:         net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second},
		idle:           map[string][]*conn{},
	}
}

type conn struct {
	net.Conn
	raw      net.Conn // the TCP connection under TLS, for the stale check
	br       *bufio.Reader
	key      string
	idleFrom time.Time
	// kill closes the connection when a call's context ends: made once
	// per connection, not per request.
	kill func()
}

// RoundTrip sends req and returns the response; its body reads from the
// connection directly.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.Fallback != nil {
		if proxy, err := http.ProxyFromEnvironment(req); err != nil || proxy != nil {
			return t.Fallback.RoundTrip(req)
		}
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return nil, errors.New("h1: unsupported scheme " + req.URL.Scheme)
	}
	fresh := req.Close // a request that closes its connection gets its own
	for {
		c, reused, err := t.get(req, fresh)
		if err != nil {
			return nil, err
		}
		resp, unsent, err := t.exchange(c, req)
		if err == nil {
			return resp, nil
		}
		c.Close()
		// A kept-alive connection the server closed while we wrote (the
		// stale check cannot see a close racing the write) fails before any
		// answer: send once more on a newly dialled connection, when the
		// body can be replayed. Never after a timeout or once the answer
		// began: the upstream may be running the request.
		if !unsent || !reused || fresh || req.Context().Err() != nil || (req.Body != nil && req.GetBody == nil) {
			return nil, err
		}
		if req.GetBody != nil {
			if req.Body, err = req.GetBody(); err != nil {
				return nil, err
			}
		}
		fresh = true
	}
}

// exchange writes the request and reads the response headers on c.
// unsent reports a failure that proves the upstream application never got
// the request: the write failed, or the connection ended (EOF, reset)
// before the first byte of an answer. A timeout is never unsent.
func (t *Transport) exchange(c *conn, req *http.Request) (resp *http.Response, unsent bool, err error) {
	stop := context.AfterFunc(req.Context(), c.kill)
	bw, _ := t.bufs.Get().(*bufio.Writer)
	if bw == nil {
		bw = bufio.NewWriterSize(c, 1<<10)
	} else {
		bw.Reset(c)
	}
	err = writeRequest(bw, req)
	if err == nil {
		err = bw.Flush()
	}
	bw.Reset(nil)
	t.bufs.Put(bw)
	if err != nil {
		stop()
		var ne net.Error
		return nil, !(errors.As(err, &ne) && ne.Timeout()), t.contextErr(req, err)
	}
	c.SetReadDeadline(time.Now().Add(t.HeaderTimeout))
	if _, err = c.br.Peek(1); err != nil {
		c.SetReadDeadline(time.Time{})
		stop()
		return nil, closedBeforeAnswer(err), t.contextErr(req, err)
	}
	resp, err = http.ReadResponse(c.br, req)
	c.SetReadDeadline(time.Time{})
	if err != nil {
		stop()
		return nil, false, t.contextErr(req, err)
	}
	resp.Body = &body{ReadCloser: resp.Body, t: t, c: c, stop: stop, reusable: !resp.Close && !req.Close}
	return resp, false, nil
}

// closedBeforeAnswer reports a read error that is the peer ending the
// connection (EOF, reset), not a timeout or a local close.
func closedBeforeAnswer(err error) bool {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
		return true
	}
	return false
}

// contextErr prefers the context's error when the context ended the call.
func (t *Transport) contextErr(req *http.Request, err error) error {
	if cerr := req.Context().Err(); cerr != nil {
		return cerr
	}
	return err
}

// get returns an idle connection to req's host that the upstream has not
// closed, or dials one; fresh always dials.
func (t *Transport) get(req *http.Request, fresh bool) (*conn, bool, error) {
	// The pool's key, built on the stack: a lookup by string(key) makes
	// no string, and a taken connection carries the key it was filed
	// under. Only a dial makes one.
	var buf [128]byte
	key := poolKey(buf[:0], req)
	for !fresh {
		t.mu.Lock()
		list := t.idle[string(key)]
		if len(list) == 0 {
			t.mu.Unlock()
			break
		}
		c := list[len(list)-1]
		t.idle[c.key] = list[:len(list)-1]
		t.mu.Unlock()
		// Upstreams close idle connections on their own schedule (Node,
		// uvicorn and vLLM after 5 s, nginx after 60-75 s): check before
		// reuse rather than guess their timeout. The check is a system
		// call; a connection idle for less than recentIdle is taken
		// without it (under load that is nearly every call): no upstream
		// times out that fast, and one the upstream closed anyway (after
		// its answer, unannounced) fails before any answer and is sent
		// again on a fresh connection below, as one whose close raced the
		// write always is.
		idle := time.Since(c.idleFrom)
		if idle < t.IdleTimeout && c.br.Buffered() == 0 && (idle < recentIdle || !closedByPeer(c.raw)) {
			return c, true, nil
		}
		c.Close()
	}
	// The dial and the TLS handshake run on a goroutine of their own,
	// which the caller waits for: they are the deepest calls a request
	// makes (the resolver, crypto/tls), and on the caller's goroutine they
	// would grow the stack of the client's request (an open stream's
	// goroutine) from 8 KiB to 16 or 32 for as long as the stream lasts
	// (docs/performance.md, "A stream's stack"). Both honour the request's
	// context, so waiting is as long as they are.
	dialed := make(chan dialResult, 1)
	dialKey := string(key)
	go func() {
		c, err := t.dial(req, dialKey)
		dialed <- dialResult{c, err}
	}()
	r := <-dialed
	return r.c, false, r.err
}

type dialResult struct {
	c   *conn
	err error
}

// dial opens a new connection to req's host (TLS for https).
func (t *Transport) dial(req *http.Request, key string) (*conn, error) {
	nc, err := t.dialer.DialContext(req.Context(), "tcp", canonicalAddr(req))
	if err != nil {
		return nil, err
	}
	raw := nc
	if req.URL.Scheme == "https" {
		cfg := &tls.Config{}
		if t.TLS != nil {
			cfg = t.TLS.Clone()
		}
		cfg.ServerName, cfg.NextProtos = req.URL.Hostname(), []string{"http/1.1"}
		tc := tls.Client(nc, cfg)
		hctx, cancel := context.WithTimeout(req.Context(), handshakeTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			nc.Close()
			return nil, err
		}
		nc = tc
	}
	c := &conn{Conn: nc, raw: raw, br: bufio.NewReaderSize(nc, 4<<10), key: key}
	c.kill = func() { c.Close() }
	return c, nil
}

// put keeps c for reuse, or closes it when the host has enough idle ones.
func (t *Transport) put(c *conn) {
	c.idleFrom = time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.idle[c.key]) >= t.MaxIdlePerHost {
		c.Close()
		return
	}
	t.idle[c.key] = append(t.idle[c.key], c)
}

// CloseIdleConnections closes every idle connection.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for key, list := range t.idle {
		for _, c := range list {
			c.Close()
		}
		delete(t.idle, key)
	}
}

// poolKey appends the key of req's connections to buf: scheme, "://" and
// canonicalAddr.
func poolKey(buf []byte, req *http.Request) []byte {
	buf = append(buf, req.URL.Scheme...)
	buf = append(buf, "://"...)
	host, port := req.URL.Hostname(), defaultPort(req)
	if strings.IndexByte(host, ':') >= 0 { // an IPv6 address, as net.JoinHostPort writes it
		buf = append(append(append(buf, '['), host...), ']')
	} else {
		buf = append(buf, host...)
	}
	return append(append(buf, ':'), port...)
}

// defaultPort is req's port, or its scheme's.
func defaultPort(req *http.Request) string {
	if port := req.URL.Port(); port != "" {
		return port
	}
	if req.URL.Scheme == "https" {
		return "443"
	}
	return "80"
}

func canonicalAddr(req *http.Request) string {
	return net.JoinHostPort(req.URL.Hostname(), defaultPort(req))
}

// body returns its connection to the pool once read to the end, and
// closes it when the caller stops early or the call's context ended.
type body struct {
	io.ReadCloser
	t        *Transport
	c        *conn
	stop     func() bool
	reusable bool
	done     bool
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		if b.stop() && b.reusable && b.c.br.Buffered() == 0 {
			b.t.put(b.c)
		} else {
			b.c.Close()
		}
	}
	return n, err
}

func (b *body) Close() error {
	if !b.done {
		b.done = true
		b.stop()
		b.c.Close()
	}
	return nil
}
