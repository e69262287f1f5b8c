package relay_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/relay"
)

// upload is a /v1 chat call whose body the test writes: a JSON prefix, then
// filler up to a number of bytes, then nothing until the test ends it (a
// stalled upload).
type upload struct {
	sent   atomic.Int64
	done   chan *apptest.V1 // the answer, or nil when the call failed without one
	err    atomic.Value     // why it failed
	cancel context.CancelFunc
}

// startUpload sends stallAt bytes of a body declared as contentLength bytes
// (-1: chunked) and stalls.
func startUpload(t *testing.T, e *apptest.Env, key string, contentLength, stallAt int64) *upload {
	t.Helper()
	return startUploadTo(t, e, "/v1/chat/completions", key, contentLength, stallAt)
}

func startUploadTo(t *testing.T, e *apptest.Env, path, key string, contentLength, stallAt int64) *upload {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	u := &upload{done: make(chan *apptest.V1, 1), cancel: cancel}
	t.Cleanup(cancel)
	pr, pw := io.Pipe()
	go func() {
		prefix := []byte(`{"model":"gpt-test","messages":[{"role":"user","content":"`)
		n, err := pw.Write(prefix)
		u.sent.Add(int64(n))
		filler := bytes.Repeat([]byte("x"), 64<<10)
		for err == nil && u.sent.Load() < stallAt {
			n, err = pw.Write(filler[:min(int64(len(filler)), stallAt-u.sent.Load())])
			u.sent.Add(int64(n))
		}
		<-ctx.Done()
		pw.CloseWithError(errors.New("upload ended by the test"))
	}()
	req, err := http.NewRequestWithContext(ctx, "POST", e.Server.URL+path, pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = contentLength
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	go func() {
		resp, err := client.Do(req)
		if err != nil {
			u.err.Store(err)
			u.done <- nil
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		u.done <- &apptest.V1{Status: resp.StatusCode, Header: resp.Header, Body: body}
	}()
	return u
}

// answer waits up to d for the call's answer; nil when none came.
func (u *upload) answer(d time.Duration) *apptest.V1 {
	select {
	case r := <-u.done:
		return r
	default:
	}
	select {
	case r := <-u.done:
		return r
	case <-time.After(d):
		return nil
	}
}

// wantRefusal fails t unless the call was answered status and msg within d
// while its body stalled. The server closes such a connection 500 ms after
// answering (net/http), and a busy client may see that reset (or a broken
// pipe) before the answer: either within d also shows the server did not wait for the
// body; it reports true.
func (u *upload) wantRefusal(t *testing.T, d time.Duration, status int, msg string) (reset bool) {
	t.Helper()
	r := u.answer(d)
	if r == nil && u.err.Load() != nil && closedOnUs(fmt.Sprint(u.err.Load())) {
		t.Logf("answer lost to the connection reset: %v", u.err.Load())
		return true
	}
	if r == nil {
		t.Fatalf("no answer while the body stalls (%v)", u.err.Load())
	}
	authWantError(t, r, status, msg)
	return false
}

func closedOnUs(err string) bool {
	return strings.Contains(err, "connection reset") || strings.Contains(err, "broken pipe")
}

// A user who cannot pay is refused on the headers: the answer arrives while
// the client is still sending (here: stalled after 1 MiB of a 31 MiB body).
func TestUnpaidUploadRefusedUnread(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	g.SetQuota(0)
	for _, cl := range []int64{-1, 31 << 20} {
		u := startUpload(t, e, g.Key, cl, 1<<20)
		u.wantRefusal(t, 5*time.Second, http.StatusTooManyRequests, relay.MsgUserQuota)
		u.cancel()
	}
	if up.Count() != 0 {
		t.Fatalf("upstream got %d calls", up.Count())
	}
	// A top-up counts at once: the early refusal never uses a stale balance.
	g.Root.OK("POST", "/api/topup", map[string]any{"user_id": g.UserID, "quota": 10_000_000})
	authOK(t, e, g.Key)

	// A limited key with nothing left gets reserve()'s 429, also unread.
	g.SetOption("BillingOverrunAllowed", "true") // so a call can spend a key's last quota
	limited := g.User.CreateToken(map[string]any{"name": "limited", "remain_quota": 1}).Key
	authOK(t, e, limited) // spends its 1 and more: nothing left
	e.SettleAll()
	startUpload(t, e, limited, -1, 1<<20).wantRefusal(t, 5*time.Second, http.StatusTooManyRequests, relay.MsgKeyExhausted)
}

// A stalled upload is answered 408 once BODY_READ_TIMEOUT passes; the
// deadline covers the body only, never a slow answer or stream.
func TestStalledUploadCut(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t, "BODY_READ_TIMEOUT", "300ms")
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})

	u := startUpload(t, e, g.Key, -1, 1000)
	r := u.answer(5 * time.Second)
	if r == nil {
		t.Fatal("a stalled upload was not cut")
	}
	authWantError(t, r, http.StatusRequestTimeout, relay.MsgBodyTimeout)

	// /api bodies have the same deadline.
	if r := startUploadTo(t, e, "/api/user/login", "", -1, 100).answer(5 * time.Second); r == nil {
		t.Fatal("a stalled /api upload was not cut")
	}

	up.SetBehavior(fakeupstream.Behavior{Delay: 400 * time.Millisecond, ChunkDelay: 100 * time.Millisecond})
	stream := map[string]any{"model": "gpt-test", "stream": true, "messages": []map[string]string{{"role": "user", "content": "hi"}}}
	s := e.Call(g.Key, "POST", "/v1/chat/completions", stream)
	if s.Status != http.StatusOK || !bytes.Contains(s.Body, []byte("[DONE]")) {
		t.Fatalf("a slow stream after the body: %d %s", s.Status, s.Body)
	}
	authOK(t, e, g.Key)
}

// Bodies held at once are bounded by RelayBodyBudgetMB: uploads beyond it
// are answered 429 while they stall, and a small call still goes through.
func TestBodyBudget(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	g.SetOption("RelayBodyBudgetMB", "4")

	var uploads []*upload
	for range 3 {
		uploads = append(uploads, startUpload(t, e, g.Key, 3<<20, 1<<20))
	}
	busy := 0
	for _, u := range uploads {
		select {
		case r := <-u.done:
			u.done <- r // for wantRefusal
			u.wantRefusal(t, 0, http.StatusTooManyRequests, relay.MsgServerBusy)
			busy++
		case <-time.After(3 * time.Second):
		}
	}
	if busy != 2 {
		t.Fatalf("%d of 3 parallel 3 MiB uploads over a 4 MiB budget answered 429, want 2", busy)
	}
	authOK(t, e, g.Key)
	for _, u := range uploads {
		u.cancel()
	}
}

// 16 stalled 31 MiB uploads (the attack of issue 7) hold no more than the
// body budget: the heap grows by less than budget + 64 MiB. It measures
// growth from the test's start, not the whole heap: under -count=N the
// earlier runs' parallel tests leave garbage the collector keeps in use.
func TestStalledUploadsBoundHeap(t *testing.T) {
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	const budget = 64 << 20
	g.SetOption("RelayBodyBudgetMB", "64")
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)

	var uploads []*upload
	for range 16 {
		uploads = append(uploads, startUpload(t, e, g.Key, -1, 31<<20))
	}
	// Wait until every upload is answered or stalled with all it sends.
	deadline := time.Now().Add(60 * time.Second)
	answered := make([]bool, len(uploads))
	for i, u := range uploads {
		for !answered[i] && u.sent.Load() < 31<<20 && time.Now().Before(deadline) {
			select {
			case r := <-u.done:
				answered[i] = true
				if r != nil && r.Status != http.StatusTooManyRequests {
					t.Errorf("upload %d: %d %s", i, r.Status, r.Body)
				}
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	time.Sleep(200 * time.Millisecond) // the last bytes sent reach the server
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	grown := int64(m.HeapInuse) - int64(base.HeapInuse)
	t.Logf("heap in use with 16 stalled uploads: %d MiB, %d MiB more than before them", m.HeapInuse>>20, grown>>20)
	if grown > budget+64<<20 {
		t.Fatalf("heap grew by %d MiB, want under %d MiB", grown>>20, (budget+64<<20)>>20)
	}
	for _, u := range uploads {
		u.cancel()
	}
}
