package relay_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// endpointGateway is a gateway whose one OpenAI-compatible channel serves
// model, priced 2 and 8 CNY per 1M tokens unless fields reprice it.
func endpointGateway(t *testing.T, model, mapping string) (*apptest.Env, *apptest.Gateway, *fakeupstream.Server) {
	t.Helper()
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, Model: model, ModelMapping: mapping})
	return e, g, up
}

// oneLog returns the only consume log and checks the balance moved by its
// quota.
func oneLog(t *testing.T, g *apptest.Gateway, before int64) apptest.LogInfo {
	t.Helper()
	logs := g.AllConsumeLogs()
	if len(logs) != 1 {
		t.Fatalf("want one consume log, got %+v", logs)
	}
	if spent := before - g.Quota(g.UserID); spent != logs[0].Quota {
		t.Fatalf("spent %d, logged %d", spent, logs[0].Quota)
	}
	return logs[0]
}

func TestCompletionsJSONAndStream(t *testing.T) {
	apptest.Parallel(t)
	e, g, _ := endpointGateway(t, "gpt-test", "")
	before := g.Quota(g.UserID)
	r := e.Call(g.Key, "POST", "/v1/completions", map[string]any{"model": "gpt-test", "prompt": "Say hi"})
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"text_completion"`) {
		t.Fatalf("completions: %d %s", r.Status, r.Body)
	}
	if l := oneLog(t, g, before); l.Quota != 88 || l.PromptTokens != 12 || l.CompletionTokens != 8 {
		t.Fatalf("completions log %+v", l)
	}
	before = g.Quota(g.UserID)
	r = e.Call(g.Key, "POST", "/v1/completions", map[string]any{"model": "gpt-test", "prompt": "Say hi", "stream": true})
	body := string(r.Body)
	// The usage chunk the relay asked for is billed, not shown.
	if r.Status != http.StatusOK || !strings.HasSuffix(body, "data: [DONE]\n\n") || strings.Contains(body, `"usage"`) {
		t.Fatalf("completions stream: %d %s", r.Status, body)
	}
	if spent := before - g.Quota(g.UserID); spent != 88 {
		t.Fatalf("stream spent %d, want 88", spent)
	}
}

func TestEmbeddingsBillPromptTokens(t *testing.T) {
	apptest.Parallel(t)
	e, g, up := endpointGateway(t, "embed-test", "")
	up.SetBehavior(fakeupstream.Behavior{PromptTokens: 500})
	before := g.Quota(g.UserID)
	r := e.Call(g.Key, "POST", "/v1/embeddings", map[string]any{"model": "embed-test",
		"input": []string{strings.Repeat("a ", 150), strings.Repeat("b ", 150)}}) // 600 bytes: strict billing holds for 500 tokens
	if r.Status != http.StatusOK || strings.Count(string(r.Body), `"index"`) != 2 {
		t.Fatalf("embeddings: %d %s", r.Status, r.Body)
	}
	// 500 prompt tokens × 2 CNY/1M.
	if l := oneLog(t, g, before); l.Quota != 1000 || l.PromptTokens != 500 || l.CompletionTokens != 0 {
		t.Fatalf("embeddings log %+v", l)
	}
}

func TestResponsesJSONAndSSE(t *testing.T) {
	apptest.Parallel(t)
	e, g, up := endpointGateway(t, "gpt-test", "")
	before := g.Quota(g.UserID)
	r := e.Call(g.Key, "POST", "/v1/responses", map[string]any{"model": "gpt-test", "input": "hi", "max_output_tokens": 64})
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"object":"response"`) {
		t.Fatalf("responses: %d %s", r.Status, r.Body)
	}
	if l := oneLog(t, g, before); l.Quota != 88 {
		t.Fatalf("responses log %+v", l)
	}
	before = g.Quota(g.UserID)
	up.SetBehavior(fakeupstream.Behavior{PromptTokens: 100, CompletionTokens: 50})
	r = e.Call(g.Key, "POST", "/v1/responses", map[string]any{"model": "gpt-test", "input": "hi", "stream": true})
	body := string(r.Body)
	if r.Status != http.StatusOK || !strings.Contains(body, "event: response.output_text.delta\n") ||
		!strings.Contains(body, "event: response.completed\n") || strings.Contains(body, "[DONE]") {
		t.Fatalf("responses stream: %d %s", r.Status, body)
	}
	if got, want := maskCreated(body), maskCreated(string(upstreamStream(t, up))); got != want {
		t.Fatalf("events changed on the way:\n got %s\nwant %s", got, want)
	}
	// Usage from response.completed: 100 × 2 + 50 × 8.
	logs := g.AllConsumeLogs()
	if spent := before - g.Quota(g.UserID); spent != 600 || !logs[0].IsStream {
		t.Fatalf("stream spent %d, want 600; log %+v", spent, logs[0])
	}
}

// upstreamStream replays the last request to the fake directly, for the
// bytes it answers.
func upstreamStream(t *testing.T, up *fakeupstream.Server) []byte {
	t.Helper()
	last := up.LastRequest()
	req, _ := http.NewRequest("POST", up.URL+last.Path, bytes.NewReader(last.Body))
	req.Header = last.Header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	// Ids count up per request: the replay's are one higher.
	return bytes.ReplaceAll(b.Bytes(), []byte(apptest.Path("fake%d", up.Count())), []byte(apptest.Path("fake%d", up.Count()-1)))
}

// createdAt is the wall-clock second the fake upstream stamps its answers
// with: a replay may fall in the next second, so comparisons mask it.
var createdAt = regexp.MustCompile(`"(created_at|created)":\d+`)

func maskCreated(b string) string { return createdAt.ReplaceAllString(b, `"$1":0`) }

func TestImagesPerRequestPrice(t *testing.T) {
	apptest.Parallel(t)
	e, g, up := endpointGateway(t, "image-test", "")
	setPrice(t, g, "image-test", map[string]any{"billing_type": "per_request", "per_request_price": 0.04})
	before := g.Quota(g.UserID)
	r := e.Call(g.Key, "POST", "/v1/images/generations", map[string]any{"model": "image-test", "prompt": "a cat", "n": 2})
	if r.Status != http.StatusOK || strings.Count(string(r.Body), `"url"`) != 2 {
		t.Fatalf("images: %d %s", r.Status, r.Body)
	}
	if l := oneLog(t, g, before); l.Quota != 40_000 {
		t.Fatalf("images log %+v, want 0.04 CNY = 40000", l)
	}
	// An error answer is relayed as it came and costs nothing.
	before = g.Quota(g.UserID)
	up.Script(fakeupstream.Behavior{Status: http.StatusBadRequest, ErrorMessage: "prompt rejected"})
	r = e.Call(g.Key, "POST", "/v1/images/generations", map[string]any{"model": "image-test", "prompt": "a cat"})
	if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "prompt rejected") {
		t.Fatalf("images 400: %d %s", r.Status, r.Body)
	}
	if got := g.Quota(g.UserID); got != before || len(g.AllConsumeLogs()) != 1 {
		t.Fatalf("a refused image call was billed: %d → %d", before, got)
	}
}

func TestSpeechPassesAudioThrough(t *testing.T) {
	apptest.Parallel(t)
	e, g, _ := endpointGateway(t, "tts-test", "")
	input := "The quick brown fox jumps over the lazy dog, twice over."
	before := g.Quota(g.UserID)
	r := e.Call(g.Key, "POST", "/v1/audio/speech", map[string]any{"model": "tts-test", "input": input, "voice": "alloy"})
	if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "audio/mpeg" || !bytes.Equal(r.Body, fakeupstream.Audio(input)) {
		t.Fatalf("speech: %d %s, %d bytes", r.Status, r.Header.Get("Content-Type"), len(r.Body))
	}
	// Priced per token: the input text counted locally, nothing for audio.
	l := oneLog(t, g, before)
	if l.PromptTokens == 0 || l.CompletionTokens != 0 || l.Quota != 2*l.PromptTokens || !strings.Contains(l.Content, "本地估算") {
		t.Fatalf("speech log %+v", l)
	}
	// Priced per request: the request's price.
	setPrice(t, g, "tts-test", map[string]any{"billing_type": "per_request", "per_request_price": 0.01})
	before = g.Quota(g.UserID)
	e.Call(g.Key, "POST", "/v1/audio/speech", map[string]any{"model": "tts-test", "input": input, "voice": "alloy"})
	if spent := before - g.Quota(g.UserID); spent != 10_000 {
		t.Fatalf("per-request speech spent %d, want 10000", spent)
	}
}

// transcriptionForm is a multipart transcription upload.
func transcriptionForm(t *testing.T, model, format string) ([]byte, string) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	mw.WriteField("model", model)
	if format != "" {
		mw.WriteField("response_format", format)
	}
	fw, _ := mw.CreateFormFile("file", "hello.mp3")
	fw.Write(fakeupstream.Audio("hello"))
	mw.WriteField("language", "en")
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), mw.FormDataContentType()
}

func TestTranscriptionMultipartWithModelMapping(t *testing.T) {
	apptest.Parallel(t)
	e, g, up := endpointGateway(t, "whisper-test", `{"whisper-test":"whisper-1"}`)
	up.SetBehavior(fakeupstream.Behavior{Reply: "hello there, this is a transcript"})
	for _, format := range []string{"", "text"} {
		before := g.Quota(g.UserID)
		logsBefore := len(g.AllConsumeLogs())
		body, ct := transcriptionForm(t, "whisper-test", format)
		r := e.Post(g.Key, "/v1/audio/transcriptions", ct, body)
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), "hello there, this is a transcript") {
			t.Fatalf("format %q: %d %s", format, r.Status, r.Body)
		}
		last := up.LastRequest()
		if last.Model != "whisper-1" {
			t.Fatalf("upstream form model %q, want whisper-1", last.Model)
		}
		// The file and the other fields arrive as sent.
		if !bytes.Contains(last.Body, fakeupstream.Audio("hello")) || !bytes.Contains(last.Body, []byte("\r\n\r\nen\r\n")) {
			t.Fatalf("upload changed on the way: %q", last.Body)
		}
		// Priced per token: the transcript counted locally as output.
		logs := g.AllConsumeLogs()
		if len(logs) != logsBefore+1 || logs[0].ModelName != "whisper-test" || logs[0].CompletionTokens == 0 {
			t.Fatalf("format %q: want a log for whisper-test with the transcript's tokens, got %+v", format, logs)
		}
		if spent := before - g.Quota(g.UserID); spent != logs[0].Quota {
			t.Fatalf("spent %d, logged %d", spent, logs[0].Quota)
		}
	}
}
