package fakeupstream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/relay/sse"
)

// call is one request to a fake upstream.
type call struct {
	method, path string
	dialect      string // whose auth headers to send; "" sends none
	key          string // default fakeupstream.DefaultKey
	body         string
	header       http.Header
	ctx          context.Context
}

// send makes the call and returns the response; the body is closed when t
// ends.
func send(t *testing.T, s *fakeupstream.Server, c call) *http.Response {
	t.Helper()
	resp, err := do(s, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// do makes the call; unlike send it may run outside the test's goroutine.
func do(s *fakeupstream.Server, c call) (*http.Response, error) {
	if c.method == "" {
		c.method = http.MethodPost
	}
	if c.key == "" {
		c.key = fakeupstream.DefaultKey
	}
	if c.ctx == nil {
		c.ctx = context.Background()
	}
	req, err := http.NewRequestWithContext(c.ctx, c.method, s.URL+c.path, strings.NewReader(c.body))
	if err != nil {
		return nil, err
	}
	if c.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	switch c.dialect {
	case fakeupstream.OpenAI:
		req.Header.Set("Authorization", "Bearer "+c.key)
	case fakeupstream.Anthropic:
		req.Header.Set("x-api-key", c.key)
		req.Header.Set("anthropic-version", "2023-06-01")
	case fakeupstream.Gemini:
		req.Header.Set("x-goog-api-key", c.key)
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	return http.DefaultClient.Do(req)
}

// decode reads a JSON answer with the wanted status into v.
func decode(t *testing.T, resp *http.Response, status int, v any) {
	t.Helper()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d; body %s", resp.StatusCode, status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
}

// events reads a stream to its end. err is nil after a clean end and the
// read error after a broken one.
func events(t *testing.T, resp *http.Response) (evs []sse.Event, err error) {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d; body %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type %q, want text/event-stream", ct)
	}
	r := sse.NewReader(resp.Body, 1<<20)
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, sse.Event{Name: ev.Name, Data: bytes.Clone(ev.Data)})
	}
}

// cleanEvents reads a stream that must end cleanly.
func cleanEvents(t *testing.T, resp *http.Response) []sse.Event {
	t.Helper()
	evs, err := events(t, resp)
	if err != nil {
		t.Fatalf("stream broke after %d events: %v", len(evs), err)
	}
	return evs
}

// unmarshal decodes one event's data.
func unmarshal(t *testing.T, ev sse.Event, v any) {
	t.Helper()
	if err := json.Unmarshal(ev.Data, v); err != nil {
		t.Fatalf("decode event %q %s: %v", ev.Name, ev.Data, err)
	}
}

// names lists the events' names.
func names(evs []sse.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Name
	}
	return out
}
