package fakeupstream

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"math"
	"net/http"
	"strings"
	"time"
)

// defaultDimensions is the length of embedding vectors when the request
// names no "dimensions"; real models' 1536 would only bloat test output.
const defaultDimensions = 8

// embeddings answers POST /v1/embeddings with one vector per input: a
// string or an array of token ids is one input, an array of strings or of
// token arrays is one per element.
func embeddings(x *exchange) error {
	n, ok := countInputs(x.body.Input)
	if !ok {
		writeFailure(x.w, OpenAI, failure{status: http.StatusBadRequest, kind: "invalid_request_error",
			message: "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference."})
		return nil
	}
	dims := x.body.Dimensions
	if dims <= 0 {
		dims = defaultDimensions
	}
	data := make([]any, n)
	for i := range n {
		var vec any = vector(i, dims)
		if x.body.EncodingFormat == "base64" {
			vec = base64Vector(vector(i, dims))
		}
		data[i] = obj{"object": "embedding", "index": i, "embedding": vec}
	}
	resp := obj{"object": "list", "data": data, "model": x.model}
	if !x.b.OmitUsage {
		resp["usage"] = obj{"prompt_tokens": x.b.PromptTokens, "total_tokens": x.b.PromptTokens}
	}
	return x.json(resp)
}

// countInputs returns how many embeddings an "input" asks for.
func countInputs(raw json.RawMessage) (int, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return 1, true
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil || len(list) == 0 {
		return 0, false
	}
	var first float64
	if json.Unmarshal(list[0], &first) == nil {
		return 1, true // one input given as token ids
	}
	return len(list), true
}

// vector is a deterministic unit-ish vector for input i.
func vector(i, dims int) []float32 {
	v := make([]float32, dims)
	for j := range v {
		v[j] = float32(math.Sin(float64((i+1)*(j+1)))) / 2
	}
	return v
}

// base64Vector encodes v as OpenAI does for encoding_format "base64":
// little-endian float32s.
func base64Vector(v []float32) string {
	buf := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(buf)
}

// pngImage returns a valid 1×1 PNG.
func pngImage() []byte {
	var b bytes.Buffer
	_ = png.Encode(&b, image.NewGray(image.Rect(0, 0, 1, 1)))
	return b.Bytes()
}

// images answers POST /v1/images/generations with n images, as URLs on this
// server or, with response_format "b64_json", inline.
func images(x *exchange) error {
	n := max(x.body.N, 1)
	var format string
	_ = json.Unmarshal(x.body.ResponseFormat, &format)
	data := make([]any, n)
	for i := range n {
		if format == "b64_json" {
			data[i] = obj{"b64_json": base64.StdEncoding.EncodeToString(pngImage())}
		} else {
			data[i] = obj{"url": fmt.Sprintf("http://%s/images/img-fake%d-%d.png", x.r.Host, x.seq, i)}
		}
	}
	return x.json(obj{"created": time.Now().Unix(), "data": data})
}

// imageFile serves the images that image URLs point to.
func imageFile(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "image/png")
	_, _ = w.Write(pngImage())
}

// Audio returns the bytes POST /v1/audio/speech answers for input: an ID3
// tag and MPEG frame headers, longer for longer input.
func Audio(input string) []byte {
	var b bytes.Buffer
	b.WriteString("ID3\x04\x00\x00\x00\x00\x00\x00")
	for i := range 1 + len(input)/16 {
		b.Write([]byte{0xff, 0xf3, 0x44, 0xc4})
		b.Write(bytes.Repeat([]byte{byte(i)}, 140))
	}
	return b.Bytes()
}

// speech answers POST /v1/audio/speech with audio bytes.
func speech(x *exchange) error {
	var input string
	_ = json.Unmarshal(x.body.Input, &input)
	var format string
	_ = json.Unmarshal(x.body.ResponseFormat, &format)
	ct := map[string]string{
		"opus": "audio/opus", "aac": "audio/aac", "flac": "audio/flac", "wav": "audio/wav", "pcm": "audio/pcm",
	}[format]
	if ct == "" {
		ct = "audio/mpeg"
	}
	x.w.Header().Set("Content-Type", ct)
	x.w.WriteHeader(http.StatusOK)
	_, err := x.w.Write(Audio(input))
	return err
}

// transcription answers POST /v1/audio/transcriptions (multipart: file and
// model) with the reply as the transcript.
func transcription(x *exchange) error {
	format := "json"
	if v := x.form.Value["response_format"]; len(v) > 0 {
		format = v[0]
	}
	switch format {
	case "text", "srt", "vtt":
		x.w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		x.w.WriteHeader(http.StatusOK)
		_, err := io.WriteString(x.w, x.b.Reply+"\n")
		return err
	case "verbose_json":
		return x.json(obj{"task": "transcribe", "language": "english", "duration": 1.0, "text": x.b.Reply, "segments": []any{}})
	}
	return x.json(obj{"text": x.b.Reply})
}

// modelsOr returns the configured models, or def.
func (x *exchange) modelsOr(def ...string) []string {
	if len(x.s.models) > 0 {
		return x.s.models
	}
	return def
}

// openAIModels answers GET /v1/models.
func openAIModels(x *exchange) error {
	var data []any
	for _, m := range x.modelsOr("gpt-4o-mini", "gpt-4o", "text-embedding-3-small") {
		owner := "openai"
		if strings.HasPrefix(m, "gpt-") {
			owner = "system"
		}
		data = append(data, obj{"id": m, "object": "model", "created": 1715367049, "owned_by": owner})
	}
	return x.json(obj{"object": "list", "data": data})
}

// anthropicModels answers GET /v1/models for an Anthropic key.
func anthropicModels(x *exchange) error {
	models := x.modelsOr("claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001")
	var data []any
	for _, m := range models {
		data = append(data, obj{"type": "model", "id": m, "display_name": m, "created_at": "2025-09-29T00:00:00Z"})
	}
	return x.json(obj{"data": data, "has_more": false, "first_id": models[0], "last_id": models[len(models)-1]})
}

// geminiModels answers GET /v1beta/models.
func geminiModels(x *exchange) error {
	var list []any
	for _, m := range x.modelsOr("gemini-2.5-flash", "gemini-2.5-pro") {
		list = append(list, obj{
			"name": "models/" + m, "version": "001", "displayName": m,
			"inputTokenLimit": 1048576, "outputTokenLimit": 65536,
			"supportedGenerationMethods": []string{"generateContent", "countTokens"},
		})
	}
	return x.json(obj{"models": list})
}
