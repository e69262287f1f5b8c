package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func postChat(t *testing.T, ctx context.Context, url, body, auth string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// dataLines returns the data: payloads of an SSE body.
func dataLines(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

func TestMockChat(t *testing.T) {
	srv := httptest.NewServer(newMockServer().handler())
	defer srv.Close()
	resp := postChat(t, t.Context(), srv.URL, string(chatBody), "Bearer "+upstreamKey)
	defer resp.Body.Close()
	var got struct {
		Object  string
		Model   string
		Choices []struct{ Message struct{ Content string } }
		Usage   struct{ PromptTokens, CompletionTokens, TotalTokens int } `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %d, %v", resp.StatusCode, err)
	}
	if got.Object != "chat.completion" || got.Model != "bench-model" || len(got.Choices) != 1 || got.Choices[0].Message.Content == "" {
		t.Errorf("reply %+v", got)
	}
}

func TestMockStream(t *testing.T) {
	srv := httptest.NewServer(newMockServer().handler())
	defer srv.Close()
	for _, tt := range []struct {
		body      string
		wantUsage bool
	}{
		{string(streamBody), true},
		{`{"model":"m","messages":[],"stream":true}`, false},
	} {
		resp := postChat(t, t.Context(), srv.URL, tt.body, "")
		lines := dataLines(t, resp.Body)
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" || len(lines) < 3 {
			t.Fatalf("%s: content type %q, events %q", tt.body, ct, lines)
		}
		if last := lines[len(lines)-1]; last != "[DONE]" {
			t.Errorf("%s: last event %q, want [DONE]", tt.body, last)
		}
		for _, l := range lines[:len(lines)-1] {
			if !json.Valid([]byte(l)) {
				t.Errorf("%s: event is not JSON: %s", tt.body, l)
			}
		}
		usage := lines[len(lines)-2]
		if got := strings.Contains(usage, `"usage":{"prompt_tokens":9`); got != tt.wantUsage {
			t.Errorf("%s: usage chunk %v, want %v: %s", tt.body, got, tt.wantUsage, usage)
		}
	}
}

func TestMockHoldsUntilClientLeaves(t *testing.T) {
	m := newMockServer()
	srv := httptest.NewServer(m.handler())
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	resp := postChat(t, ctx, srv.URL, string(holdBody), "")
	var first [256]byte
	if n, err := resp.Body.Read(first[:]); n == 0 || err != nil {
		t.Fatalf("first chunk: %d bytes, %v", n, err)
	}
	if got := m.held.Load(); got != 1 {
		t.Errorf("held %d, want 1", got)
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(2 * time.Second)
	for m.held.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := m.held.Load(); got != 0 {
		t.Errorf("held %d after the client left, want 0", got)
	}
}

func TestMockReleaseFinishesHeldStream(t *testing.T) {
	srv := httptest.NewServer(newMockServer().handler())
	defer srv.Close()
	resp := postChat(t, t.Context(), srv.URL, string(holdBody), "")
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if err := releaseMock(t.Context(), srv.URL); err != nil {
		t.Fatal(err)
	}
	if lines := dataLines(t, br); len(lines) == 0 || lines[len(lines)-1] != "[DONE]" {
		t.Errorf("after release: %q, want the rest of the stream and [DONE]", lines)
	}
}

func TestMockRejectsForeignKey(t *testing.T) {
	srv := httptest.NewServer(newMockServer().handler())
	defer srv.Close()
	resp := postChat(t, t.Context(), srv.URL, string(chatBody), "Bearer sk-client-key-leaked")
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("HTTP %d, want 401", resp.StatusCode)
	}
}
