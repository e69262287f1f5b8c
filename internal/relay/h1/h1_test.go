package h1

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingServer counts the TCP connections it accepted.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func post(t *testing.T, tr http.RoundTripper, ctx context.Context, url, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return tr.RoundTrip(req)
}

func TestKeepAliveReuseAndBodies(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "echo:%s", b)
	})
	tr := New(nil)
	for i := range 20 {
		resp, err := post(t, tr, context.Background(), srv.URL+"/x", fmt.Sprint(i))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != fmt.Sprintf("echo:%d", i) {
			t.Fatalf("call %d got %q", i, got)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("20 sequential calls used %d connections, want 1", n)
	}
}

// A streamed (chunked) answer is read as it comes, and a call whose
// context ends mid-stream closes its connection: the server sees it go.
func TestStreamAndCancel(t *testing.T) {
	gone := make(chan struct{})
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(gone)
	})
	tr := New(nil)
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := post(t, tr, ctx, srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := resp.Body.Read(buf)
	if !bytes.Contains(buf[:n], []byte("data: one")) {
		t.Fatalf("first event %q", buf[:n])
	}
	cancel()
	select {
	case <-gone:
	case <-time.After(3 * time.Second):
		t.Fatal("server did not see the cancelled call's connection close")
	}
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Fatal("reading a cancelled stream succeeded")
	}
}

// A kept-alive connection the server closed meanwhile is replaced
// transparently when the request body can be sent again.
func TestStaleConnectionIsRetried(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	tr := New(nil)
	for range 2 {
		resp, err := post(t, tr, context.Background(), srv.URL, "x")
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.CloseClientConnections() // the server drops the idle connection
		time.Sleep(20 * time.Millisecond)
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("connections %d, want 2 (one retried)", n)
	}
}

func TestTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secure") }))
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	tr := New(nil)
	tr.TLS = &tls.Config{RootCAs: pool}
	resp, err := post(t, tr, context.Background(), srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	if string(got) != "secure" {
		t.Fatalf("got %q", got)
	}
}

// An early Close (the caller stopped reading) does not put a half-read
// connection back into the pool.
func TestEarlyCloseDiscardsConnection(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("x", 100000))
	})
	tr := New(nil)
	for range 3 {
		resp, err := post(t, tr, context.Background(), srv.URL, "")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Read(make([]byte, 10))
		resp.Body.Close()
	}
	if n := conns.Load(); n != 3 {
		t.Fatalf("connections %d, want 3: a half-read one must not be reused", n)
	}
}

// The relay reads an abandoned stream on a context detached from its
// client's: the client's cancel must not end it, a stream read to its end
// gives its connection back even when the detached context is cancelled
// afterwards, and a cancel mid-stream (the grace ran out) closes it.
func TestDetachedContextStream(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
			time.Sleep(20 * time.Millisecond)
		}
		if r.URL.Path == "/hang" {
			<-r.Context().Done()
		}
	})
	tr := New(nil)
	detached := func() (context.Context, context.CancelFunc) {
		client, leave := context.WithCancel(context.Background())
		ctx, cancel := context.WithCancel(context.WithoutCancel(client))
		leave() // the client is gone at once
		return ctx, cancel
	}
	for range 2 {
		ctx, cancel := detached()
		resp, err := post(t, tr, ctx, srv.URL+"/end", "")
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil || !bytes.Contains(got, []byte("data: 2")) {
			t.Fatalf("detached stream read %q, %v", got, err)
		}
		resp.Body.Close()
		cancel()
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("two detached streams read to the end used %d connections, want 1", n)
	}
	ctx, cancel := detached()
	resp, err := post(t, tr, ctx, srv.URL+"/hang", "")
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(200*time.Millisecond, cancel)
	if got, err := io.ReadAll(resp.Body); err == nil || !bytes.Contains(got, []byte("data: 2")) {
		t.Fatalf("cancelled detached stream: read %q, err %v; want all events then an error", got, err)
	}
	resp.Body.Close()
	if resp, err := post(t, tr, context.Background(), srv.URL+"/end", ""); err != nil {
		t.Fatal(err)
	} else {
		io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("connections %d, want 2: the cancelled one must not be reused", n)
	}
}
