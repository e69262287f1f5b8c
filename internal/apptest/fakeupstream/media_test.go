package fakeupstream_test

import (
	"bytes"
	"encoding/base64"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

type embeddingList struct {
	Object string
	Model  string
	Data   []struct {
		Object    string
		Index     int
		Embedding any
	}
	Usage *struct {
		PromptTokens int64 `json:"prompt_tokens"`
		TotalTokens  int64 `json:"total_tokens"`
	}
}

func TestEmbeddingsOneVectorPerInput(t *testing.T) {
	s := fakeupstream.New(t)
	s.SetBehavior(fakeupstream.Behavior{PromptTokens: 6})
	for input, n := range map[string]int{
		`"one text"`:          1,
		`["a","b","c"]`:       3,
		`[1,2,3]`:             1, // token ids of one input
		`[[1,2],[3],[4,5,6]]`: 3,
	} {
		var got embeddingList
		decode(t, send(t, s, call{path: "/v1/embeddings", dialect: fakeupstream.OpenAI,
			body: `{"model":"text-embedding-3-small","dimensions":4,"input":` + input + `}`}), 200, &got)
		if got.Object != "list" || got.Model != "text-embedding-3-small" || len(got.Data) != n {
			t.Fatalf("input %s: %+v, want %d vectors", input, got, n)
		}
		for i, d := range got.Data {
			if v, ok := d.Embedding.([]any); d.Object != "embedding" || d.Index != i || !ok || len(v) != 4 {
				t.Errorf("input %s: vector %d = %+v", input, i, d)
			}
		}
		if got.Usage == nil || got.Usage.PromptTokens != 6 || got.Usage.TotalTokens != 6 {
			t.Errorf("usage = %+v", got.Usage)
		}
	}

	var b64 embeddingList
	decode(t, send(t, s, call{path: "/v1/embeddings", dialect: fakeupstream.OpenAI,
		body: `{"model":"text-embedding-3-small","input":"x","encoding_format":"base64"}`}), 200, &b64)
	raw, err := base64.StdEncoding.DecodeString(b64.Data[0].Embedding.(string))
	if err != nil || len(raw) != 4*8 {
		t.Errorf("base64 embedding: %d bytes, %v; want 8 float32s", len(raw), err)
	}

	resp := send(t, s, call{path: "/v1/embeddings", dialect: fakeupstream.OpenAI, body: `{"model":"m","input":[]}`})
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("empty input: status %d, want 400", resp.StatusCode)
	}
}

func TestImages(t *testing.T) {
	s := fakeupstream.New(t)
	var got struct {
		Created int64
		Data    []struct {
			URL     string
			B64JSON string `json:"b64_json"`
		}
	}
	decode(t, send(t, s, call{path: "/v1/images/generations", dialect: fakeupstream.OpenAI, body: `{"model":"dall-e-3","prompt":"a cat","n":2}`}), 200, &got)
	if got.Created == 0 || len(got.Data) != 2 || !strings.HasPrefix(got.Data[0].URL, s.URL+"/images/") || got.Data[0].URL == got.Data[1].URL {
		t.Fatalf("images = %+v", got)
	}
	img := send(t, s, call{method: http.MethodGet, path: strings.TrimPrefix(got.Data[0].URL, s.URL)})
	if body, _ := io.ReadAll(img.Body); img.Header.Get("Content-Type") != "image/png" || !bytes.HasPrefix(body, []byte("\x89PNG")) {
		t.Errorf("image URL served %q %q", img.Header.Get("Content-Type"), body)
	}

	decode(t, send(t, s, call{path: "/v1/images/generations", dialect: fakeupstream.OpenAI, body: `{"model":"dall-e-3","prompt":"a cat","response_format":"b64_json"}`}), 200, &got)
	if png, err := base64.StdEncoding.DecodeString(got.Data[0].B64JSON); len(got.Data) != 1 || err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("b64_json image = %+v", got)
	}
}

func TestSpeech(t *testing.T) {
	s := fakeupstream.New(t)
	input := "The quick brown fox jumped over the lazy dog."
	resp := send(t, s, call{path: "/v1/audio/speech", dialect: fakeupstream.OpenAI, body: `{"model":"tts-1","voice":"alloy","input":"` + input + `"}`})
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "audio/mpeg" || !bytes.Equal(body, fakeupstream.Audio(input)) || !bytes.HasPrefix(body, []byte("ID3")) {
		t.Errorf("speech: %d %q, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
	}
	if len(fakeupstream.Audio(input)) <= len(fakeupstream.Audio("hi")) {
		t.Errorf("longer input gave no longer audio")
	}
}

func TestTranscription(t *testing.T) {
	s := fakeupstream.New(t)
	s.SetBehavior(fakeupstream.Behavior{Reply: "hello world"})
	form := func(format string) (string, http.Header) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		fw, _ := mw.CreateFormFile("file", "speech.mp3")
		fw.Write(fakeupstream.Audio("hi"))
		mw.WriteField("model", "whisper-1")
		if format != "" {
			mw.WriteField("response_format", format)
		}
		mw.Close()
		return buf.String(), http.Header{"Content-Type": {mw.FormDataContentType()}}
	}
	body, header := form("")
	var got struct{ Text string }
	decode(t, send(t, s, call{path: "/v1/audio/transcriptions", dialect: fakeupstream.OpenAI, body: body, header: header}), 200, &got)
	if got.Text != "hello world" {
		t.Errorf("text = %q", got.Text)
	}
	if r := s.LastRequest(); r.Model != "whisper-1" || !strings.Contains(r.Header.Get("Content-Type"), "multipart/form-data") {
		t.Errorf("recorded model %q content type %q", r.Model, r.Header.Get("Content-Type"))
	}

	body, header = form("text")
	resp := send(t, s, call{path: "/v1/audio/transcriptions", dialect: fakeupstream.OpenAI, body: body, header: header})
	if text, _ := io.ReadAll(resp.Body); string(text) != "hello world\n" {
		t.Errorf("text format = %q", text)
	}
	noFile := send(t, s, call{path: "/v1/audio/transcriptions", dialect: fakeupstream.OpenAI, body: `{"model":"whisper-1"}`})
	if noFile.StatusCode != http.StatusBadRequest {
		t.Errorf("no file: status %d, want 400", noFile.StatusCode)
	}
}

// TestModels covers the lists channel probes read, each authenticated its
// provider's way.
func TestModels(t *testing.T) {
	s := fakeupstream.New(t, fakeupstream.WithModels("m-1", "m-2"))
	var openAI struct {
		Object string
		Data   []struct{ ID, Object string }
	}
	decode(t, send(t, s, call{method: http.MethodGet, path: "/v1/models", dialect: fakeupstream.OpenAI}), 200, &openAI)
	if openAI.Object != "list" || len(openAI.Data) != 2 || openAI.Data[1].ID != "m-2" || openAI.Data[0].Object != "model" {
		t.Errorf("OpenAI list = %+v", openAI)
	}
	var anthropic struct {
		Data    []struct{ Type, ID string }
		HasMore *bool  `json:"has_more"`
		FirstID string `json:"first_id"`
	}
	decode(t, send(t, s, call{method: http.MethodGet, path: "/v1/models", dialect: fakeupstream.Anthropic}), 200, &anthropic)
	if len(anthropic.Data) != 2 || anthropic.Data[0].Type != "model" || anthropic.FirstID != "m-1" || anthropic.HasMore == nil {
		t.Errorf("Anthropic list = %+v", anthropic)
	}
	if r := s.LastRequest(); r.Dialect != fakeupstream.Anthropic {
		t.Errorf("recorded dialect %q", r.Dialect)
	}
	var gemini struct {
		Models []struct {
			Name                       string
			SupportedGenerationMethods []string
		}
	}
	decode(t, send(t, s, call{method: http.MethodGet, path: "/v1beta/models", dialect: fakeupstream.Gemini}), 200, &gemini)
	if len(gemini.Models) != 2 || gemini.Models[0].Name != "models/m-1" || gemini.Models[0].SupportedGenerationMethods[0] != "generateContent" {
		t.Errorf("Gemini list = %+v", gemini)
	}
}
