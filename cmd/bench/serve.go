package main

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"
)

// Hidden modes: the bench re-executes itself as the mock upstream and as the
// bare proxy, so each is a process of its own whose CPU and RSS can be read.
const (
	modeMock  = "mock"
	modeProxy = "proxy"
)

// readyPrefix starts the one line a child prints on stdout once it listens.
const readyPrefix = "listening "

// serveChild runs a child mode on a loopback address until its stdin closes
// (the parent exited or asked it to stop).
func serveChild(mode, addr, target string) error {
	var h http.Handler
	switch mode {
	case modeMock:
		h = newMockServer().handler()
	case modeProxy:
		p, err := newBareProxy(target)
		if err != nil {
			return err
		}
		h = bufferBody(p)
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}
	if err := checkLoopback(addr); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Printf("%s%s\n", readyPrefix, ln.Addr())
	go func() {
		// The parent holds the other end of stdin: EOF means stop, so a
		// child never outlives the bench, even one killed with SIGKILL.
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	return srv.Serve(ln)
}

// checkLoopback refuses to listen anywhere but on a loopback address.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("address %q: the bench listens on loopback only", addr)
	}
	return nil
}

// newBareProxy is the floor the targets are measured against
// (docs/performance.md): the standard library's reverse
// proxy with no auth, billing or logging, flushing every write so streams
// pass event by event, and with an upstream pool large enough for every
// concurrency the bench uses (the default keeps 2 idle connections per host,
// which would measure connection churn instead of proxying).
func newBareProxy(target string) (*httputil.ReverseProxy, error) {
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("proxy target %q: want http://host:port", target)
	}
	if err := checkLoopback(u.Host); err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 0
	tr.MaxIdleConnsPerHost = 1024
	tr.DisableCompression = true
	return &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(u) },
		Transport:     tr,
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
	}, nil
}

// maxBody bounds a request body the proxy buffers.
const maxBody = 1 << 20

// bufferBody reads the request body into memory before next sees it, as any
// LLM gateway does to read the model. Forwarding the inbound body as it
// streams races with the HTTP/1 server, which closes that body once the
// response headers go out: against a zero-latency upstream the transport's
// final read of the body then fails and cuts the response mid-stream
// (golang/go#40747), about one stream in 2,000 here.
func bufferBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			http.Error(w, "request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
		next.ServeHTTP(w, r)
	})
}
