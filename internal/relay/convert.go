package relay

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/relay/anthropic"
	"github.com/modelgate/modelgate/internal/relay/gemini"
	"github.com/modelgate/modelgate/internal/relay/openai"
	"github.com/modelgate/modelgate/internal/relay/sse"
)

// convertChat serves a chat call whose ingress and channel speak different
// dialects, through the OpenAI types as the hub: ingress → OpenAI request →
// channel request; channel answer → OpenAI response or chunks → ingress.
func (c *call) convertChat(u *upstream) error {
	req, err := c.chatRequest()
	if err != nil {
		return err
	}
	model := u.upstreamModel(c.meta.model)
	if c.charge.CompletionLimit > 0 {
		req.CapCompletion(int(c.charge.CompletionLimit), dialectOf(u.Type) == dialectOpenAI && isReasoningModel(model))
	}
	url, body, err := chatUpstreamBody(u, req, model)
	if err != nil {
		return badRequest(err.Error())
	}
	resp, err := c.post(u, url, body, "application/json")
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		f := c.failure(u, resp, false)
		return errf(resp.StatusCode, "upstream_error", "upstream_error", "上游返回 %d: %s", resp.StatusCode, f.detail)
	}
	c.channel = u
	if req.Stream {
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			resp.Body.Close() // not a stream: nothing was sent to the client yet
			return unreadableAnswer("stream answered as " + resp.Header.Get("Content-Type"))
		}
		return c.convertStream(u, resp)
	}
	return c.convertJSON(u, resp)
}

// chatUpstreamBody is the URL and body of an OpenAI chat request in channel
// u's dialect, for the upstream model.
func chatUpstreamBody(u *upstream, req *openai.ChatRequest, model string) (string, []byte, error) {
	var url string
	var payload any
	var err error
	switch dialectOf(u.Type) {
	case dialectAnthropic:
		payload, err = anthropic.FromChatRequest(req, model)
		url = anthropic.Endpoint(u.BaseURL)
	case dialectGemini:
		payload, err = gemini.FromChatRequest(req)
		url = gemini.Endpoint(u.BaseURL, model, req.Stream)
	default:
		out := *req
		out.Model = model
		if out.Stream {
			out.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
		}
		payload, url = &out, joinURL(u.BaseURL, "/v1/chat/completions")
	}
	if err != nil {
		return "", nil, err
	}
	body, err := json.Marshal(payload)
	return url, body, err
}

// chatRequest decodes the ingress body as an OpenAI chat request.
func (c *call) chatRequest() (*openai.ChatRequest, error) {
	if c.ep.ingress == dialectAnthropic {
		var in anthropic.Request
		if err := json.Unmarshal(c.body, &in); err != nil {
			return nil, badRequest(MsgInvalidJSON)
		}
		req, err := anthropic.ToChatRequest(&in, c.meta.model)
		if err != nil {
			return nil, badRequest(err.Error())
		}
		return req, nil
	}
	var req openai.ChatRequest
	if err := json.Unmarshal(c.body, &req); err != nil {
		return nil, badRequest(MsgInvalidJSON)
	}
	return &req, nil
}

// convertJSON turns a complete channel answer into the ingress dialect.
func (c *call) convertJSON(u *upstream, resp *http.Response) error {
	defer resp.Body.Close()
	read := time.Now()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	c.addUpstream(time.Since(read))
	if err != nil {
		return &upstreamFailure{status: resp.StatusCode, detail: err.Error(), retry: true}
	}
	out, usage, err := decodeChatAnswer(dialectOf(u.Type), raw, c.meta.model, c.requestID)
	var blocked *gemini.BlockedError
	switch {
	case errors.As(err, &blocked):
		return badRequest(blocked.Error())
	case err != nil:
		return unreadableAnswer("invalid answer: " + err.Error())
	}
	if usage.TotalTokens == 0 && usage.PromptTokens == 0 && usage.CompletionTokens == 0 {
		c.countLocally(chatText(out))
	} else {
		c.usage = billedUsage(usage)
	}
	out.Model = c.meta.model
	var answer any = out
	if c.ep.ingress == dialectAnthropic {
		msg := anthropic.FromChatResponse(out, c.meta.model)
		msg.ID = "msg_" + c.requestID // the same id a stream of this call would carry
		answer = msg
	}
	c.w.Header().Set("Content-Type", "application/json")
	c.w.WriteHeader(http.StatusOK)
	c.wrote = true
	return json.NewEncoder(c.w).Encode(answer)
}

// decodeChatAnswer reads a channel's complete answer as an OpenAI response.
func decodeChatAnswer(d dialect, raw []byte, model, id string) (*openai.ChatResponse, openai.Usage, error) {
	now := time.Now().Unix()
	switch d {
	case dialectAnthropic:
		var r anthropic.Response
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, openai.Usage{}, err
		}
		return anthropic.ToChatResponse(&r, model, now), anthropic.UsageOf(&r), nil
	case dialectGemini:
		var r gemini.GenerateResponse
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, openai.Usage{}, err
		}
		out, err := gemini.ToChatResponse(&r, model, "chatcmpl-"+id, now)
		if err != nil {
			return nil, openai.Usage{}, err
		}
		return out, gemini.UsageOf(&r), nil
	}
	var r openai.ChatResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, openai.Usage{}, err
	}
	if len(r.Choices) == 0 && r.Usage == nil {
		return nil, openai.Usage{}, fmt.Errorf("no choices")
	}
	var usage openai.Usage
	if r.Usage != nil {
		usage = *r.Usage
	}
	return &r, usage, nil
}

// chatText is the generated text of a response, for local counting.
func chatText(r *openai.ChatResponse) string {
	var b strings.Builder
	for _, ch := range r.Choices {
		parts, _ := openai.Parts(ch.Message.Content)
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		for _, tc := range ch.Message.ToolCalls {
			b.WriteString(tc.Function.Name + tc.Function.Arguments)
		}
	}
	return b.String()
}

// chunkText is the generated text of a chunk, for local counting.
func chunkText(ch *openai.ChatChunk) string {
	var b strings.Builder
	for _, choice := range ch.Choices {
		if choice.Delta.Content != nil {
			b.WriteString(*choice.Delta.Content)
		}
		for _, tc := range choice.Delta.ToolCalls {
			b.WriteString(tc.Function.Name + tc.Function.Arguments)
		}
	}
	return b.String()
}

// chunkSource yields a channel's stream as OpenAI chunks.
type chunkSource interface {
	// next returns the chunks of the next event; done at the stream's
	// proper end; an error when the stream broke or reported an error.
	next() (chunks []openai.ChatChunk, done bool, err error)
	usage() openai.Usage
	// final reports whether the upstream's final usage report came.
	final() bool
}

func newChunkSource(d dialect, body io.Reader, model, id string) chunkSource {
	rd := sse.NewReader(body, maxEvent)
	now := time.Now().Unix()
	switch d {
	case dialectAnthropic:
		return &anthropicSource{rd: rd, s: anthropic.NewChatStream(model, now)}
	case dialectGemini:
		return &geminiSource{rd: rd, s: gemini.NewChatStream(model, "chatcmpl-"+id, now)}
	}
	return &openaiSource{rd: rd}
}

type openaiSource struct {
	rd   *sse.Reader
	u    openai.Usage
	last bool // the usage chunk came
}

func (s *openaiSource) next() ([]openai.ChatChunk, bool, error) {
	ev, err := s.rd.Next()
	if err == io.EOF {
		return nil, false, io.ErrUnexpectedEOF // an OpenAI stream ends with [DONE]
	}
	if err != nil {
		return nil, false, err
	}
	if string(ev.Data) == "[DONE]" {
		return nil, true, nil
	}
	var chunk openai.ChatChunk
	if err := json.Unmarshal(ev.Data, &chunk); err != nil {
		return nil, false, fmt.Errorf("invalid chunk: %w", err)
	}
	if chunk.Usage != nil {
		s.u, s.last = *chunk.Usage, true
		if len(chunk.Choices) == 0 {
			return nil, false, nil // the relay writes its own usage chunk
		}
		chunk.Usage = nil
	}
	return []openai.ChatChunk{chunk}, false, nil
}

func (s *openaiSource) usage() openai.Usage { return s.u }
func (s *openaiSource) final() bool         { return s.last }

type anthropicSource struct {
	rd *sse.Reader
	s  *anthropic.ChatStream
}

func (s *anthropicSource) next() ([]openai.ChatChunk, bool, error) {
	ev, err := s.rd.Next()
	if err == io.EOF {
		if s.s.Done() {
			return nil, true, nil
		}
		return nil, false, io.ErrUnexpectedEOF
	}
	if err != nil {
		return nil, false, err
	}
	chunks, err := s.s.Convert(ev)
	return chunks, false, err
}

func (s *anthropicSource) usage() openai.Usage { return s.s.Usage() }
func (s *anthropicSource) final() bool         { return s.s.Final() }

type geminiSource struct {
	rd *sse.Reader
	s  *gemini.ChatStream
}

func (s *geminiSource) next() ([]openai.ChatChunk, bool, error) {
	ev, err := s.rd.Next()
	if err == io.EOF {
		return nil, true, nil // Gemini closes the stream after its last event
	}
	if err != nil {
		return nil, false, err
	}
	chunks, err := s.s.Convert(ev.Data)
	return chunks, false, err
}

func (s *geminiSource) usage() openai.Usage { return s.s.Usage() }

// final is false until the stream ends: Gemini's totals are running ones,
// exact only on the last event.
func (s *geminiSource) final() bool { return false }
