package relay

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/relay/anthropic"
	"github.com/modelgate/modelgate/internal/relay/dialect"
	"github.com/modelgate/modelgate/internal/relay/openai"
	"github.com/modelgate/modelgate/internal/relay/responses"
	"github.com/modelgate/modelgate/internal/relay/sse"
)

// dispatch sends the call to channel u in the right way: an ingress API the
// channel speaks natively is passed through, anything else converted.
func (c *attempt) dispatch(u *upstream) error {
	if c.ep.responses {
		return c.attemptResponses(u)
	}
	if u.api != c.ep.ingress || u.framed != nil && !u.framed.NativeModel(u.upstreamModel(c.meta.model)) {
		return c.convertChat(u)
	}
	if c.ep.ingress == dialect.Anthropic {
		return c.passthroughAnthropic(u)
	}
	return c.passthroughOpenAI(u)
}

// convertStream relays a converted stream chunk by chunk; beginStream has
// sent the headers. On a proper end the OpenAI ingress gets the usage
// chunk (when asked for) and [DONE]; a broken stream gets an error event
// and no [DONE]. After the client leaves, the upstream is read on
// (streamDrain) until its final usage arrives or the grace ends.
func (c *attempt) convertStream(u *upstream, resp *http.Response) error {
	defer resp.Body.Close()
	d := c.drainOnLeave()
	defer d.end()
	src := newChunkSource(u.dialect, resp.Body, c.meta.model, c.requestID)
	rc := http.NewResponseController(c.w)

	var text strings.Builder // for local counting when no usage comes
	var msgs *anthropic.MessagesStream
	var rs *responses.Stream
	if c.ep.responses {
		rs = responses.NewStream(c.respIn, c.meta.model, c.requestID, time.Now().Unix())
		c.writeEvents(rs.Start())
	} else if c.ep.ingress == dialect.Anthropic {
		msgs = anthropic.NewMessagesStream(c.meta.model, "msg_"+c.requestID)
	}
	var failure error
	finished := false
	idle := c.watchIdle()
	defer idle.stop()
	id, created := "chatcmpl-"+c.requestID, time.Now().Unix() // every chunk of a stream has the same
	for !finished {
		idle.reading()
		chunks, done, err := src.Next()
		if err == nil && done && idle.timedOut() {
			err = io.ErrUnexpectedEOF // the end of a cancelled read, not the stream's own
		}
		if err != nil {
			failure = err
			break
		}
		idle.event()
		finished = done
		for i := range chunks {
			chunks[i].Model = c.meta.model
			if chunks[i].ID != "" {
				id, created = chunks[i].ID, chunks[i].Created
			}
			if text.Len() < maxFallbackText {
				text.WriteString(chunkText(&chunks[i]))
			}
			if d.left() {
				continue
			}
			if err := c.writeChunk(msgs, rs, &chunks[i]); err != nil {
				d.leave()
			}
		}
		if d.left() {
			if src.Final() {
				break // the usage the grace waited for
			}
			continue
		}
		rc.Flush()
	}
	usage := src.Usage()
	c.streamUsage(usage, text.String(), finished || src.Final())
	if d.left() {
		return nil
	}
	if failure != nil {
		msg := c.streamFailure(failure, idle)
		if rs != nil {
			c.writeEvents(rs.Fail(msg))
		} else {
			c.writeStreamFailure(msg)
		}
		rc.Flush()
		return nil
	}
	if rs != nil {
		rs.SetUsage(chatUsageOf(c.usage))
		c.writeEvents(rs.Finish())
	} else if msgs != nil {
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
func (c *call) writeChunk(msgs *anthropic.MessagesStream, rs *responses.Stream, chunk *openai.ChatChunk) error {
	if rs != nil {
		return c.writeEvents(rs.Convert(chunk))
	}
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

// writeStreamFailure reports a broken upstream stream (streamBroken's msg)
// in the ingress dialect's stream error shape.
func (c *call) writeStreamFailure(msg string) {
	if c.ep.ingress == dialect.Anthropic {
		b, _ := json.Marshal(anthropic.ErrorResponse{Type: "error", Error: anthropic.ErrorDetail{Type: "api_error", Message: msg}})
		sse.Write(c.w, "error", b)
		return
	}
	writeStreamError(c.w, msg)
}

// streamUsage takes the upstream's usage when its final report came, and
// counts locally when none came. A stream that ended before its final
// report (cut off, abandoned past the grace, ended by a shutdown) keeps the
// input the upstream reported early (Anthropic's message_start) and bills
// the output as the larger of the upstream's partial count and the local
// count of everything it sent.
func (c *attempt) streamUsage(u openai.Usage, text string, final bool) {
	reported := u.PromptTokens != 0 || u.CompletionTokens != 0
	if final && reported {
		c.usage = billedUsage(u)
		return
	}
	c.countLocally(text)
	if reported {
		completion := max(c.usage.CompletionTokens, u.CompletionTokens)
		c.usage = billedUsage(u)
		c.usage.CompletionTokens = completion
	}
}

// passthroughAnthropic forwards an Anthropic Messages call to an Anthropic
// channel in its own dialect, reading usage from message_start and
// message_delta on the way.
func (c *attempt) passthroughAnthropic(u *upstream) error {
	var fields [2]bodyField
	var limit [20]byte
	body, n := c.body, 0 // set by index: an append could move limit to the heap
	model := u.upstreamModel(c.meta.model)
	if model != c.bodyModel {
		m, err := json.Marshal(model)
		if err != nil {
			return err
		}
		fields[n] = bodyField{"model", m}
		n++
	}
	if c.charge.CompletionLimit > 0 {
		fields[n] = bodyField{"max_tokens", strconv.AppendInt(limit[:0], c.charge.CompletionLimit, 10)}
		n++
	}
	if set := fields[:n]; len(set) > 0 {
		var err error
		if body, err = withFields(body, set); err != nil {
			return badRequest(MsgInvalidJSON)
		}
	}
	if u.framed != nil {
		var err error
		if body, err = u.framed.PassthroughBody(body, c.r.Header, c.meta.stream); err != nil {
			return badRequest(MsgInvalidJSON)
		}
	}
	resp, err := c.post(u, u.native.NativeURL(u.BaseURL, c.ep.path, model, c.meta.stream), body, "application/json")
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return c.relayVerbatim(resp) // an error answer: nothing to bill
	}
	c.channel = u
	if u.framed != nil && strings.HasPrefix(resp.Header.Get("Content-Type"), u.streamType) {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{u.framed.SSE(resp.Body), resp.Body}
		resp.Header.Set("Content-Type", sseMediaType)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		defer resp.Body.Close()
		raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
		if f := c.bodyIdleFailure(resp.StatusCode, err); f != nil {
			return f
		}
		var r anthropic.Response
		if err != nil || json.Unmarshal(raw, &r) != nil {
			return unreadableAnswer("invalid answer")
		}
		c.streamUsage(anthropic.UsageOf(&r), chatText(anthropic.ToChatResponse(&r, c.meta.model, 0)), true)
		c.copyHeaders(resp.Header)
		c.w.WriteHeader(http.StatusOK)
		_, err = c.w.Write(raw)
		return err
	}
	return c.streamAnthropic(resp)
}

// streamAnthropic relays Anthropic events verbatim, observing usage. After
// the client leaves, the upstream is read on (streamDrain) until
// message_delta brings the final usage or the grace ends.
func (c *attempt) streamAnthropic(resp *http.Response) error {
	defer resp.Body.Close()
	d := c.drainOnLeave()
	defer d.end()
	c.copyHeaders(resp.Header)
	c.w.Header().Set("Cache-Control", "no-cache")
	c.w.WriteHeader(http.StatusOK)
	http.NewResponseController(c.w).Flush()
	obs := anthropic.NewChatStream(c.meta.model, 0)
	var seen bytes.Buffer
	idle := c.watchIdle()
	defer idle.stop()
	body := newFlushingBody(resp.Body, c.w)
	rd := sse.NewReader(body, maxEvent)
	defer rd.Release()
	for {
		body.flushIfDrained(rd.Buffered())
		idle.reading()
		ev, err := rd.Next()
		if err != nil {
			if (err != io.EOF || idle.timedOut()) && !d.left() {
				c.writeStreamFailure(c.streamFailure(err, idle))
				body.wrote()
			}
			break
		}
		if ev.Name != anthropic.EventPing { // a keep-alive is no progress
			idle.event()
		}
		obs.Observe(ev)
		if seen.Len() < maxFallbackText {
			seen.WriteString(collectText(ev.Data, completionKeys))
		}
		if d.left() {
			if obs.Final() {
				break // the usage the grace waited for
			}
			continue
		}
		if err := sse.Write(c.w, ev.Name, ev.Data); err != nil {
			d.leave()
			continue
		}
		body.wrote()
	}
	body.flush()
	c.streamUsage(obs.Usage(), seen.String(), obs.Final())
	return nil
}
