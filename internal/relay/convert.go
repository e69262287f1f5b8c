package relay

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/relay/anthropic"
	"github.com/modelgate/modelgate/internal/relay/dialect"
	"github.com/modelgate/modelgate/internal/relay/openai"
	"github.com/modelgate/modelgate/internal/relay/responses"
)

// convertChat serves a chat call whose ingress and channel speak different
// dialects, through the OpenAI types as the hub: ingress → OpenAI request →
// channel request; channel answer → OpenAI response or chunks → ingress.
func (c *attempt) convertChat(u *upstream) error {
	req, err := c.chatRequest()
	if err != nil {
		return err
	}
	model := u.upstreamModel(c.meta.model)
	if c.charge.CompletionLimit > 0 {
		req.CapCompletion(int(c.charge.CompletionLimit), u.takesCompletionTokens(model))
	}
	url, body, err := u.dialect.ChatRequest(u.BaseURL, req, model)
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
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), u.streamType) {
			resp.Body.Close() // not a stream: nothing was sent to the client yet
			return unreadableAnswer("stream answered as " + resp.Header.Get("Content-Type"))
		}
		c.beginStream(nil)
		return c.convertStream(u, resp)
	}
	return c.convertJSON(u, resp)
}

// chatRequest decodes the ingress body as an OpenAI chat request.
func (c *call) chatRequest() (*openai.ChatRequest, error) {
	if c.ep.responses {
		in, err := c.responsesRequest()
		if err != nil {
			return nil, err
		}
		req, err := responses.ToChatRequest(in, c.meta.model)
		if err != nil {
			return nil, badRequest(err.Error())
		}
		return req, nil
	}
	if c.ep.ingress == dialect.Anthropic {
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
func (c *attempt) convertJSON(u *upstream, resp *http.Response) error {
	defer resp.Body.Close()
	read := time.Now()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	c.addUpstream(time.Since(read))
	if f := c.bodyIdleFailure(resp.StatusCode, err); f != nil {
		return f
	}
	if err != nil {
		return &upstreamFailure{status: resp.StatusCode, detail: err.Error(), retry: true}
	}
	out, usage, err := decodeChatAnswer(u.dialect, raw, c.meta.model, c.requestID)
	var refused dialect.ClientError
	switch {
	case errors.As(err, &refused) && refused.ClientError():
		return badRequest(refused.Error())
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
	if c.ep.responses {
		answer = responses.FromChatResponse(c.respIn, out, chatUsageOf(c.usage), c.meta.model, c.requestID, time.Now().Unix())
	} else if c.ep.ingress == dialect.Anthropic {
		msg := anthropic.FromChatResponse(out, c.meta.model)
		msg.ID = "msg_" + c.requestID // the same id a stream of this call would carry
		answer = msg
	}
	c.w.Header().Set("Content-Type", "application/json")
	c.w.WriteHeader(http.StatusOK)
	return json.NewEncoder(c.w).Encode(answer)
}

// decodeChatAnswer reads a channel's complete answer, in dialect d, as an
// OpenAI response.
func decodeChatAnswer(d dialect.Dialect, raw []byte, model, id string) (*openai.ChatResponse, openai.Usage, error) {
	return d.DecodeChat(raw, model, id, time.Now().Unix())
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

// newChunkSource reads a channel's stream, in dialect d, as OpenAI chunks.
func newChunkSource(d dialect.Dialect, body io.Reader, model, id string) openai.ChunkSource {
	return d.ChatStream(body, model, id, time.Now().Unix())
}
