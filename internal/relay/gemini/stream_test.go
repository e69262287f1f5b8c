package gemini

import (
	"errors"
	"io"
	"os"
	"testing"

	"github.com/modelgate/modelgate/internal/relay/openai"
	"github.com/modelgate/modelgate/internal/relay/sse"
)

// streamResult is what a golden stream file records: every chunk the
// transcript produced, then the stream's state at its end.
type streamResult struct {
	Chunks     []openai.ChatChunk `json:"chunks"`
	Done       bool               `json:"done"`
	Usage      openai.Usage       `json:"usage"`
	UsageChunk openai.ChatChunk   `json:"usage_chunk"`
	Error      string             `json:"error,omitempty"`
}

// convertTranscript feeds a recorded SSE body through a ChatStream, as the
// relay does, stopping at the first error.
func convertTranscript(t *testing.T, path string) (streamResult, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := NewChatStream("gemini-flash", "chatcmpl-9Zk1", 1760000000)
	r := sse.NewReader(f, 1<<20)
	res := streamResult{Chunks: []openai.ChatChunk{}}
	var convErr error
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read %s: %v", path, err)
		}
		chunks, err := s.Convert(ev.Data)
		res.Chunks = append(res.Chunks, chunks...)
		if err != nil {
			convErr = err
			res.Error = err.Error()
			break
		}
	}
	res.Done, res.Usage, res.UsageChunk = s.Done(), s.Usage(), s.UsageChunk()
	return res, convErr
}

func TestChatStreamGolden(t *testing.T) {
	for in, out := range cases(t, "stream", ".sse") {
		t.Run(in, func(t *testing.T) {
			res, _ := convertTranscript(t, in)
			golden(t, out, res)
		})
	}
}

// Beyond the golden file: the properties clients rely on, stated once.
func TestChatStreamToolCallTranscript(t *testing.T) {
	res, err := convertTranscript(t, "testdata/stream/tool_call_transcript.sse")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Done {
		t.Error("Done() = false after a finish reason")
	}
	var roles, finishes int
	for i, c := range res.Chunks {
		if c.Choices[0].Delta.Role != "" {
			roles++
			if i != 0 {
				t.Errorf("chunk %d carries the role; only the first may", i)
			}
		}
		if c.Choices[0].FinishReason != nil {
			finishes++
			if got := *c.Choices[0].FinishReason; got != "tool_calls" || i != len(res.Chunks)-1 {
				t.Errorf("chunk %d finishes with %q; want tool_calls on the last chunk", i, got)
			}
		}
	}
	if roles != 1 || finishes != 1 {
		t.Errorf("%d role chunks and %d finish chunks, want 1 and 1", roles, finishes)
	}
	// Usage is cumulative in Gemini streams: the last event's counts win.
	want := openai.Usage{PromptTokens: 52, CompletionTokens: 31 + 38, TotalTokens: 121,
		PromptTokensDetails: &openai.PromptTokensDetails{CachedTokens: 32}}
	if res.Usage.PromptTokens != want.PromptTokens || res.Usage.CompletionTokens != want.CompletionTokens ||
		res.Usage.TotalTokens != want.TotalTokens || res.Usage.Cached() != want.Cached() {
		t.Errorf("usage %+v, want %+v", res.Usage, want)
	}
	if len(res.UsageChunk.Choices) != 0 || res.UsageChunk.Usage == nil {
		t.Errorf("usage chunk = %+v, want no choices and a usage", res.UsageChunk)
	}
}

func TestChatStreamErrors(t *testing.T) {
	res, err := convertTranscript(t, "testdata/stream/error_event.sse")
	var streamErr *StreamError
	if !errors.As(err, &streamErr) || streamErr.Code != 503 || streamErr.Status != "UNAVAILABLE" {
		t.Fatalf("err = %v, want a *StreamError 503 UNAVAILABLE", err)
	}
	if res.Done {
		t.Error("Done() = true after an error event")
	}

	_, err = convertTranscript(t, "testdata/stream/blocked_prompt.sse")
	var blocked *BlockedError
	if !errors.As(err, &blocked) || blocked.Reason != "PROHIBITED_CONTENT" {
		t.Fatalf("err = %v, want a *BlockedError PROHIBITED_CONTENT", err)
	}

	s := NewChatStream("m", "id", 1)
	if _, err := s.Convert([]byte(`{"candidates": [`)); err == nil {
		t.Fatal("truncated event: no error")
	}
}

// A second finish reason, as some proxies repeat it on a trailing usage
// event, must not finish the choice twice.
func TestChatStreamFinishesOnce(t *testing.T) {
	s := NewChatStream("m", "id", 1)
	event := []byte(`{"candidates":[{"content":{"parts":[{"text":"hi"}],"role":"model"},"finishReason":"STOP","index":0}]}`)
	first, err := s.Convert(event)
	if err != nil || len(first) != 2 {
		t.Fatalf("first event: %d chunks, err %v; want text and finish", len(first), err)
	}
	again, err := s.Convert([]byte(`{"candidates":[{"content":{"role":"model"},"finishReason":"STOP","index":0}],
		"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1,"totalTokenCount":4}}`))
	if err != nil || len(again) != 0 {
		t.Fatalf("repeated finish: %d chunks, err %v; want none", len(again), err)
	}
	if u := s.Usage(); u.TotalTokens != 4 {
		t.Errorf("usage after the repeat = %+v, want total 4", u)
	}
}
