package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// idleEnd is what a fake upstream does to a connection idle for 100 ms.
type idleEnd int

const (
	idleClose     idleEnd = iota // close (FIN), as Node, uvicorn or nginx do
	idleHalfClose                // shut down its write side and stop reading
	idleReset                    // reset (RST): SO_LINGER 0, then close
)

// fakeUpstream is a plain HTTP/1.1 server on a net.Listener that ends idle
// connections its way and counts the requests it received per call id
// (header X-Call-Id): a call run twice shows as a count of 2.
type fakeUpstream struct {
	url   string
	end   idleEnd
	stall atomic.Bool // hold every request without answering
	// oncePerConn closes a connection when a second request starts on it,
	// unread: a keep-alive close racing the client's write, which no check
	// before the write can see.
	oncePerConn bool
	// closeAfterAnswer closes each connection right after its first
	// answer, unannounced (no Connection: close).
	closeAfterAnswer bool
	done             chan struct{}

	mu    sync.Mutex
	calls map[string]int
	conns atomic.Int64
}

func newFakeUpstream(t *testing.T, end idleEnd, stall bool) *fakeUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeUpstream{url: "http://" + ln.Addr().String(), end: end, done: make(chan struct{}), calls: map[string]int{}}
	f.stall.Store(stall)
	var wg sync.WaitGroup
	t.Cleanup(func() { close(f.done); ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			f.conns.Add(1)
			wg.Add(1)
			go func() { defer wg.Done(); f.serve(nc) }()
		}
	}()
	return f
}

func (f *fakeUpstream) serve(nc net.Conn) {
	defer nc.Close()
	go func() { <-f.done; nc.Close() }()
	br := bufio.NewReader(nc)
	for served := 0; ; served++ {
		nc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := br.Peek(1); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				f.endIdle(nc)
			}
			return
		}
		nc.SetReadDeadline(time.Time{})
		if f.oncePerConn && served > 0 {
			return
		}
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		f.mu.Lock()
		f.calls[req.Header.Get("X-Call-Id")]++
		f.mu.Unlock()
		if f.stall.Load() {
			<-f.done
			return
		}
		io.WriteString(nc, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		if f.closeAfterAnswer {
			f.endIdle(nc)
			return
		}
	}
}

func (f *fakeUpstream) endIdle(nc net.Conn) {
	switch f.end {
	case idleHalfClose:
		nc.(*net.TCPConn).CloseWrite()
		<-f.done // never reads again
	case idleReset:
		nc.(*net.TCPConn).SetLinger(0)
	}
}

func (f *fakeUpstream) received(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[id]
}

// transports are the round trippers held to the same tests: this package's
// and net/http's, with the same header timeout.
var transports = []struct {
	name string
	make func(headerTimeout time.Duration) http.RoundTripper
}{
	{"h1", func(d time.Duration) http.RoundTripper {
		tr := New(nil)
		tr.HeaderTimeout = d
		return tr
	}},
	{"net/http", func(d time.Duration) http.RoundTripper {
		return &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second, ResponseHeaderTimeout: d}
	}},
}

func call(tr http.RoundTripper, url, id string) error {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(`{"call":"`+id+`"}`))
	if err != nil {
		return err
	}
	req.Header.Set("X-Call-Id", id)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && string(b) != "ok" {
		err = fmt.Errorf("body %q", b)
	}
	return err
}

// Bursts of parallel calls, each followed by a pause longer than the
// upstream's idle timeout: every pooled connection is dead when the next
// burst starts. Every call succeeds and reaches the upstream once.
func TestBurstsAfterUpstreamClosedIdleConnections(t *testing.T) {
	for _, tt := range transports {
		for _, end := range []struct {
			name string
			end  idleEnd
		}{{"close", idleClose}, {"half-close", idleHalfClose}, {"reset", idleReset}} {
			t.Run(tt.name+"/"+end.name, func(t *testing.T) {
				f := newFakeUpstream(t, end.end, false)
				tr := tt.make(5 * time.Second)
				for burst := range 3 {
					var wg sync.WaitGroup
					errs := make([]error, 20)
					for i := range errs {
						wg.Go(func() { errs[i] = call(tr, f.url, fmt.Sprintf("%d-%d", burst, i)) })
					}
					wg.Wait()
					for i, err := range errs {
						if err != nil {
							t.Errorf("burst %d call %d: %v", burst, i, err)
						}
						if n := f.received(fmt.Sprintf("%d-%d", burst, i)); n != 1 {
							t.Errorf("burst %d call %d reached the upstream %d times, want 1", burst, i, n)
						}
					}
					time.Sleep(250 * time.Millisecond)
				}
			})
		}
	}
}

// An upstream that got the request and stalls past the header timeout may
// be generating: the call fails and is never sent again, also on a reused
// connection.
func TestHeaderTimeoutIsNeverRetried(t *testing.T) {
	for _, tt := range transports {
		t.Run(tt.name, func(t *testing.T) {
			tr := tt.make(300 * time.Millisecond)
			// The upstream answers a first call, then stalls: the stalled
			// call runs on the reused connection.
			f := newFakeUpstream(t, idleClose, false)
			if err := call(tr, f.url, "first"); err != nil {
				t.Fatal(err)
			}
			f.stall.Store(true)
			start := time.Now()
			if err := call(tr, f.url, "slow"); err == nil {
				t.Fatal("a stalled upstream answered")
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("the stalled call took %v, want about the 300ms header timeout", d)
			}
			time.Sleep(50 * time.Millisecond)
			if n := f.received("slow"); n != 1 {
				t.Fatalf("the stalled call reached the upstream %d times, want 1", n)
			}
		})
	}
}

// A close racing the write fails the call on a reused connection before
// any answer; h1 sends it once more on a newly dialled connection, never
// on another pooled one (they may all be closing). net/http does not
// resend a POST there, so this one holds h1 alone.
func TestCloseRacingTheWriteIsRetriedOnAFreshConnection(t *testing.T) {
	f := newFakeUpstream(t, idleClose, false)
	f.oncePerConn = true
	tr := New(nil)
	// A burst fills the pool; the calls after it find only connections
	// about to close.
	var wg sync.WaitGroup
	errs := make([]error, 10)
	for i := range errs {
		wg.Go(func() { errs[i] = call(tr, f.url, fmt.Sprint("burst-", i)) })
	}
	wg.Wait()
	for i := range 10 {
		errs = append(errs, call(tr, f.url, fmt.Sprint("next-", i)))
	}
	for i, err := range errs {
		id := fmt.Sprint("burst-", i)
		if i >= 10 {
			id = fmt.Sprint("next-", i-10)
		}
		if err != nil {
			t.Errorf("call %s: %v", id, err)
		}
		if n := f.received(id); n != 1 {
			t.Errorf("call %s reached the upstream %d times, want 1", id, n)
		}
	}
}

// An upstream that ends every connection right after its answer, without
// announcing it: the next call takes the connection back at once, within
// recentIdle, so without the stale check, and finds it closed (FIN),
// half-closed or reset before any answer. Every call succeeds on a fresh
// connection and reaches the upstream once.
func TestConnectionClosedRightAfterItsAnswerIsRetried(t *testing.T) {
	for _, end := range []struct {
		name string
		end  idleEnd
	}{{"close", idleClose}, {"half-close", idleHalfClose}, {"reset", idleReset}} {
		t.Run(end.name, func(t *testing.T) {
			f := newFakeUpstream(t, end.end, false)
			f.closeAfterAnswer = true
			tr := New(nil)
			for i := range 20 {
				id := fmt.Sprint("call-", i)
				if err := call(tr, f.url, id); err != nil {
					t.Fatalf("call %s: %v", id, err)
				}
				if n := f.received(id); n != 1 {
					t.Fatalf("call %s reached the upstream %d times, want 1", id, n)
				}
			}
			if n := f.conns.Load(); n < 20 {
				t.Fatalf("%d connections for 20 calls: a closed one carried a call", n)
			}
		})
	}
}

// A request that closes its connection (the channel test) gets a newly
// dialled one: it answers whether the upstream is reachable now.
func TestClosingRequestDialsFresh(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	tr := New(nil)
	for _, closing := range []bool{false, true} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("x"))
		req.Close = closing
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("connections %d, want 2: the closing request must not take the pooled one", n)
	}
}
