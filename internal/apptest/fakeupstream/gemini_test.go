package fakeupstream_test

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/relay/gemini"
)

const generateBody = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`

func TestGenerateContentJSON(t *testing.T) {
	s := fakeupstream.New(t)
	s.SetBehavior(fakeupstream.Behavior{Reply: "Ciao", PromptTokens: 40, CompletionTokens: 6, CachedTokens: 32})
	var got gemini.GenerateResponse
	decode(t, send(t, s, call{path: "/v1beta/models/gemini-2.5-flash:generateContent", dialect: fakeupstream.Gemini, body: generateBody}), 200, &got)

	if len(got.Candidates) != 1 || got.ModelVersion != "gemini-2.5-flash" || got.ResponseID == "" {
		t.Fatalf("response = %+v", got)
	}
	c := got.Candidates[0]
	if c.FinishReason != "STOP" || c.Content.Role != "model" || len(c.Content.Parts) != 1 || c.Content.Parts[0].Text != "Ciao" {
		t.Errorf("candidate = %+v", c)
	}
	want := gemini.UsageMetadata{PromptTokenCount: 40, CandidatesTokenCount: 6, TotalTokenCount: 46, CachedContentTokenCount: 32}
	if got.UsageMetadata == nil || *got.UsageMetadata != want {
		t.Errorf("usage = %+v, want %+v", got.UsageMetadata, want)
	}
	if r := s.LastRequest(); r.Dialect != fakeupstream.Gemini || r.Model != "gemini-2.5-flash" || r.Stream || r.Key != fakeupstream.DefaultKey {
		t.Errorf("recorded %+v", r)
	}
}

// TestStreamGenerateContentSSE pins Gemini's stream: CRLF-separated data
// events, running usage totals, the finish reason and exact usage only on the
// last event.
func TestStreamGenerateContentSSE(t *testing.T) {
	s := fakeupstream.New(t)
	s.SetBehavior(fakeupstream.Behavior{Reply: "one two three four", Chunks: 4, PromptTokens: 9, CompletionTokens: 10})
	resp := send(t, s, call{path: "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", dialect: fakeupstream.Gemini, body: generateBody})
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(raw, []byte("data: {")) || !bytes.HasSuffix(raw, []byte("}\r\n\r\n")) || bytes.Count(raw, []byte("\r\n\r\n")) != 5 {
		t.Fatalf("raw stream:\n%q", raw)
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	evs := cleanEvents(t, resp)
	if len(evs) != 5 {
		t.Fatalf("%d events, want 4 text + 1 finish", len(evs))
	}
	var text string
	var firstCandidates, lastCandidates int64 = -1, 0
	for i, ev := range evs {
		var r gemini.GenerateResponse
		unmarshal(t, ev, &r)
		if ev.Name != "" || r.ModelVersion != "gemini-2.5-pro" || len(r.Candidates) != 1 || r.UsageMetadata == nil {
			t.Fatalf("event %d = %s", i, ev.Data)
		}
		c, u := r.Candidates[0], r.UsageMetadata
		text += c.Content.Parts[0].Text
		if u.PromptTokenCount != 9 || u.CandidatesTokenCount < lastCandidates || u.TotalTokenCount != 9+u.CandidatesTokenCount {
			t.Errorf("event %d usage = %+v", i, u)
		}
		lastCandidates = u.CandidatesTokenCount
		if firstCandidates < 0 {
			firstCandidates = lastCandidates
		}
		if last := i == len(evs)-1; last != (c.FinishReason == "STOP") {
			t.Errorf("event %d finishReason %q", i, c.FinishReason)
		}
	}
	// Running totals: summing them, as if they were increments, overbills.
	if text != "one two three four" || lastCandidates != 10 || firstCandidates >= lastCandidates {
		t.Errorf("text %q, candidates %d first, %d last; want a running total ending at 10", text, firstCandidates, lastCandidates)
	}
	if r := s.LastRequest(); !r.Stream || r.RawQuery != "alt=sse" {
		t.Errorf("recorded %+v", r)
	}
}

// TestStreamGenerateContentArray: without alt=sse Gemini streams a JSON
// array, which a relay that forgets the parameter must not mistake for
// events.
func TestStreamGenerateContentArray(t *testing.T) {
	s := fakeupstream.New(t)
	resp := send(t, s, call{path: "/v1beta/models/gemini-2.5-flash:streamGenerateContent", dialect: fakeupstream.Gemini, body: generateBody})
	var got []gemini.GenerateResponse
	decode(t, resp, 200, &got)
	if len(got) != 4 || got[3].Candidates[0].FinishReason != "STOP" || *got[3].UsageMetadata != (gemini.UsageMetadata{PromptTokenCount: 12, CandidatesTokenCount: 8, TotalTokenCount: 20}) {
		t.Errorf("array = %+v", got)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q", ct)
	}
}

func TestGenerateContentFunctionCallAndKeyParam(t *testing.T) {
	s := fakeupstream.New(t, fakeupstream.WithKey("g-key"))
	args := `{"location":"Rome"}`
	s.SetBehavior(fakeupstream.Behavior{ToolCall: &fakeupstream.ToolCall{Name: "weather", Arguments: args}, OmitUsage: true})

	// Gemini also takes the key as ?key=.
	var got gemini.GenerateResponse
	decode(t, send(t, s, call{path: "/v1beta/models/gemini-2.5-flash:generateContent?key=g-key", body: generateBody}), 200, &got)
	fc := got.Candidates[0].Content.Parts[0].FunctionCall
	if fc == nil || fc.Name != "weather" || string(fc.Args) != args || got.UsageMetadata != nil {
		t.Errorf("response = %+v", got)
	}

	evs := cleanEvents(t, send(t, s, call{path: "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", dialect: fakeupstream.Gemini, key: "g-key", body: generateBody}))
	var calls int
	for _, ev := range evs {
		var r gemini.GenerateResponse
		unmarshal(t, ev, &r)
		if r.UsageMetadata != nil {
			t.Errorf("usage despite OmitUsage: %s", ev.Data)
		}
		for _, p := range r.Candidates[0].Content.Parts {
			if p.FunctionCall != nil {
				calls++
				if !json.Valid(p.FunctionCall.Args) || string(p.FunctionCall.Args) != args {
					t.Errorf("streamed call args %s", p.FunctionCall.Args)
				}
			}
		}
	}
	if calls != 1 || len(evs) != 2 {
		t.Errorf("%d calls in %d events, want the call whole in one event, then the finish", calls, len(evs))
	}
}
