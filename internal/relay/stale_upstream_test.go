package relay_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
)

// closingUpstream is an OpenAI-compatible upstream on a plain listener that
// closes every connection idle for 100 ms, as Node, uvicorn and vLLM do
// after 5 s. It counts the chat calls it received per first message.
type closingUpstream struct {
	url  string
	mu   sync.Mutex
	seen map[string]int
}

func newClosingUpstream(t *testing.T) *closingUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &closingUpstream{url: "http://" + ln.Addr().String(), seen: map[string]int{}}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { u.serve(nc) })
		}
	})
	return u
}

func (u *closingUpstream) serve(nc net.Conn) {
	defer nc.Close()
	br := bufio.NewReader(nc)
	for {
		nc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		req, err := http.ReadRequest(br)
		if err != nil {
			return // idle too long (or the gateway left): close
		}
		nc.SetReadDeadline(time.Time{})
		var body struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		raw, _ := io.ReadAll(req.Body)
		if json.Unmarshal(raw, &body) == nil && len(body.Messages) > 0 {
			u.mu.Lock()
			u.seen[body.Messages[0].Content]++
			u.mu.Unlock()
		}
		const answer = `{"id":"c","object":"chat.completion","created":1,"model":"gpt-test",` +
			`"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],` +
			`"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`
		fmt.Fprintf(nc, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(answer), answer)
	}
}

func (u *closingUpstream) received(content string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.seen[content]
}

// After a burst the upstream closes the idle connections; the next burst
// and the channel test must not fail on them, and no call runs twice.
func TestUpstreamClosingIdleConnectionsFailsNoCall(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := newClosingUpstream(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.url})
	for burst := range 3 {
		var wg sync.WaitGroup
		status := make([]int, 20)
		for i := range status {
			wg.Go(func() {
				r := e.Call(g.Key, "POST", "/v1/chat/completions", map[string]any{"model": "gpt-test",
					"messages": []map[string]string{{"role": "user", "content": fmt.Sprintf("call %d-%d", burst, i)}}})
				status[i] = r.Status
				if r.Status != http.StatusOK {
					t.Errorf("burst %d call %d: %d %s", burst, i, r.Status, r.Body)
				}
			})
		}
		wg.Wait()
		for i := range status {
			if n := up.received(fmt.Sprintf("call %d-%d", burst, i)); n != 1 {
				t.Errorf("burst %d call %d reached the upstream %d times, want 1", burst, i, n)
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	// The channel test after the pause succeeds (OK fails the test otherwise).
	g.Root.OK("GET", apptest.Path("/api/channel/test/%d", g.ChannelID), nil)
}
