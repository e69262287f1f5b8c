package relay

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/pricing"
	"github.com/modelgate/modelgate/internal/relay/anthropic"
	"github.com/modelgate/modelgate/internal/relay/openai"
	"github.com/modelgate/modelgate/internal/relay/sse"
)

// attempt sends the call to channel u in the right way for the pair of
// dialects: same dialect is passed through, anything else converted.
func (c *call) attempt(u *upstream) error {
	switch d := dialectOf(u.Type); {
	case c.ep.ingress == dialectOpenAI && d == dialectOpenAI:
		return c.passthroughOpenAI(u)
	case c.ep.ingress == dialectAnthropic && d == dialectAnthropic:
		return c.passthroughAnthropic(u)
	}
	return c.convertChat(u)
}

// convertStream relays a converted stream chunk by chunk. On a proper end
// the OpenAI ingress gets the usage chunk (when asked for) and [DONE]; a
// broken stream gets an error event and no [DONE].
func (c *call) convertStream(u *upstream, resp *http.Response) error {
	defer resp.Body.Close()
	src := newChunkSource(dialectOf(u.Type), resp.Body, c.meta.model, c.requestID)
	h := c.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	c.w.WriteHeader(http.StatusOK)
	c.wrote = true
	rc := http.NewResponseController(c.w)
	rc.Flush()

	var text strings.Builder // for local counting when no usage comes
	var msgs *anthropic.MessagesStream
	if c.ep.ingress == dialectAnthropic {
		msgs = anthropic.NewMessagesStream(c.meta.model, "msg_"+c.requestID)
	}
	var failure error
	id, created := "chatcmpl-"+c.requestID, time.Now().Unix() // every chunk of a stream has the same
	for {
		chunks, done, err := src.next()
		if err != nil {
			failure = err
			break
		}
		for i := range chunks {
			chunks[i].Model = c.meta.model
			if chunks[i].ID != "" {
				id, created = chunks[i].ID, chunks[i].Created
			}
			if text.Len() < maxFallbackText {
				text.WriteString(chunkText(&chunks[i]))
			}
			if err := c.writeChunk(msgs, &chunks[i]); err != nil {
				c.streamUsage(src.usage(), text.String())
				return nil // the client left; billed for what was produced
			}
		}
		rc.Flush()
		if done {
			break
		}
	}
	usage := src.usage()
	c.streamUsage(usage, text.String())
	if failure != nil {
		if c.r.Context().Err() == nil {
			c.writeStreamFailure(failure)
			rc.Flush()
		}
		return nil
	}
	if msgs != nil {
		msgs.Convert(&openai.ChatChunk{Usage: &usage})
		for _, ev := range msgs.Finish() {
			sse.Write(c.w, ev.Name, ev.Data)
		}
	} else {
		if c.meta.includeUsage {
			b, _ := json.Marshal(openai.ChatChunk{ID: id, Object: "chat.completion.chunk", Created: created,
				Model: c.meta.model, Choices: []openai.ChunkChoice{}, Usage: &usage})
			sse.Write(c.w, "", b)
		}
		io.WriteString(c.w, "data: [DONE]\n\n")
	}
	rc.Flush()
	return nil
}

// writeChunk writes one OpenAI chunk to the client in the ingress dialect.
func (c *call) writeChunk(msgs *anthropic.MessagesStream, chunk *openai.ChatChunk) error {
	if msgs == nil {
		b, err := json.Marshal(chunk)
		if err != nil {
			return err
		}
		return sse.Write(c.w, "", b)
	}
	for _, ev := range msgs.Convert(chunk) {
		if err := sse.Write(c.w, ev.Name, ev.Data); err != nil {
			return err
		}
	}
	return nil
}

// writeStreamFailure reports a broken upstream stream in the ingress
// dialect's stream error shape.
func (c *call) writeStreamFailure(err error) {
	msg := "upstream stream broken: " + scrub(err.Error(), c.channel.Key)
	if c.ep.ingress == dialectAnthropic {
		b, _ := json.Marshal(anthropic.ErrorResponse{Type: "error", Error: anthropic.ErrorDetail{Type: "api_error", Message: msg}})
		sse.Write(c.w, "error", b)
		return
	}
	writeStreamError(c.w, msg)
}

// streamUsage takes the upstream's usage, or counts locally.
func (c *call) streamUsage(u openai.Usage, text string) {
	if u.PromptTokens == 0 && u.CompletionTokens == 0 {
		c.countLocally(text)
		return
	}
	c.usage = pricing.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, CachedTokens: u.Cached()}
}

// passthroughAnthropic forwards an Anthropic Messages call to an Anthropic
// channel in its own dialect, reading usage from message_start and
// message_delta on the way.
func (c *call) passthroughAnthropic(u *upstream) error {
	body, set := c.body, map[string]any{}
	if model := u.upstreamModel(c.meta.model); model != c.meta.model {
		set["model"] = model
	}
	if c.completionLimit > 0 {
		set["max_tokens"] = c.completionLimit
	}
	if len(set) > 0 {
		var err error
		if body, err = withFields(body, set); err != nil {
			return badRequest(MsgInvalidJSON)
		}
	}
	resp, err := c.post(u, anthropic.Endpoint(u.BaseURL), body, "application/json")
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return c.relayVerbatim(resp) // an error answer: nothing to bill
	}
	c.channel = u
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		defer resp.Body.Close()
		raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
		var r anthropic.Response
		if err != nil || json.Unmarshal(raw, &r) != nil {
			return unreadableAnswer("invalid answer")
		}
		c.streamUsage(anthropic.UsageOf(&r), chatText(anthropic.ToChatResponse(&r, c.meta.model, 0)))
		copyHeaders(c.w.Header(), resp.Header)
		c.w.WriteHeader(http.StatusOK)
		c.wrote = true
		_, err = c.w.Write(raw)
		return err
	}
	return c.streamAnthropic(resp)
}

// streamAnthropic relays Anthropic events verbatim, observing usage.
func (c *call) streamAnthropic(resp *http.Response) error {
	defer resp.Body.Close()
	copyHeaders(c.w.Header(), resp.Header)
	c.w.Header().Set("Cache-Control", "no-cache")
	c.w.WriteHeader(http.StatusOK)
	c.wrote = true
	rc := http.NewResponseController(c.w)
	rc.Flush()
	obs := anthropic.NewChatStream(c.meta.model, 0)
	var seen bytes.Buffer
	rd := sse.NewReader(resp.Body, maxEvent)
	for {
		ev, err := rd.Next()
		if err != nil {
			if err != io.EOF && c.r.Context().Err() == nil {
				c.writeStreamFailure(err)
				rc.Flush()
			}
			break
		}
		obs.Observe(ev)
		if seen.Len() < maxFallbackText {
			seen.WriteString(collectText(ev.Data, completionKeys))
		}
		if err := sse.Write(c.w, ev.Name, ev.Data); err != nil {
			break // the client left
		}
		rc.Flush()
	}
	c.streamUsage(obs.Usage(), seen.String())
	return nil
}
