package fakecloud

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/modelgate/modelgate/internal/relay/sse"
)

// invoke serves InvokeModel and InvokeModelWithResponseStream for Claude.
func (b *Bedrock) invoke(stream bool) bedrockHandler {
	return func(w http.ResponseWriter, r *http.Request, body []byte) {
		model := r.PathValue("model")
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			bedrockError(w, http.StatusBadRequest, "ValidationException", "Malformed input request, please reformat your input and try again.")
			return
		}
		for _, k := range []string{"model", "stream"} {
			if _, ok := m[k]; ok {
				bedrockError(w, http.StatusBadRequest, "ValidationException", "Malformed input request: #: extraneous key ["+k+"] is not permitted, please reformat your input and try again.")
				return
			}
		}
		if string(m["anthropic_version"]) != `"bedrock-2023-05-31"` {
			bedrockError(w, http.StatusBadRequest, "ValidationException", "Malformed input request: #: required key [anthropic_version] not found or invalid, please reformat your input and try again.")
			return
		}
		if !strings.Contains(model, "anthropic.") {
			bedrockError(w, http.StatusBadRequest, "ValidationException", "The provided model identifier is invalid.")
			return
		}
		h := http.Header{"X-Api-Key": {b.backendKey}, "Anthropic-Version": {"2023-06-01"}}
		if betas, ok := m["anthropic_beta"]; ok {
			var list []string
			_ = json.Unmarshal(betas, &list)
			h.Set("Anthropic-Beta", strings.Join(list, ","))
		}
		delete(m, "anthropic_version")
		delete(m, "anthropic_beta")
		m["model"], _ = json.Marshal(model)
		m["stream"], _ = json.Marshal(stream)
		fwd, _ := json.Marshal(m)
		resp, err := backendCall(r, b.backend, "/v1/messages", h, fwd)
		if err != nil {
			bedrockError(w, http.StatusInternalServerError, "InternalServerException", err.Error())
			return
		}
		if resp.StatusCode != http.StatusOK {
			passBackendError(w, resp)
			return
		}
		if !stream {
			copyResponse(w, resp)
			return
		}
		defer resp.Body.Close()
		b.streamInvoke(w, sse.NewReader(resp.Body, 1<<20))
	}
}

// streamInvoke re-frames the backend's Anthropic SSE events as Bedrock
// does: one "chunk" frame per event, {"bytes": base64 of the event's JSON},
// with Bedrock's invocation metrics added to message_stop.
func (b *Bedrock) streamInvoke(w http.ResponseWriter, events *sse.Reader) {
	_, exception := b.settings()
	out := newFrameWriter(w)
	var input, output int64
	for n := 0; ; n++ {
		ev, err := events.Next()
		if err != nil {
			panic(http.ErrAbortHandler) // the backend was cut, or it ended without message_stop
		}
		data := append([]byte(nil), ev.Data...)
		var usage struct {
			Message struct {
				Usage struct {
					InputTokens int64 `json:"input_tokens"`
				} `json:"usage"`
			} `json:"message"`
			Usage struct {
				OutputTokens int64 `json:"output_tokens"`
			} `json:"usage"`
		}
		_ = json.Unmarshal(data, &usage)
		switch ev.Name {
		case "message_start":
			input = usage.Message.Usage.InputTokens
		case "message_delta":
			output = usage.Usage.OutputTokens
		case "message_stop":
			data, _ = withMember(data, "amazon-bedrock-invocationMetrics", map[string]int64{
				"inputTokenCount": input, "outputTokenCount": output, "invocationLatency": 1, "firstByteLatency": 1,
			})
		case "ping":
			continue // Bedrock does not forward pings
		}
		payload := `{"bytes":"` + base64.StdEncoding.EncodeToString(data) + `","p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0"}`
		if out.event("chunk", []byte(payload)) != nil {
			return
		}
		if exception != "" && n == 0 {
			_ = out.exception(exception, "Too many requests, please wait before trying again.")
			return
		}
		if ev.Name == "message_stop" {
			return
		}
	}
}
