package relay

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelgate/modelgate/internal/pricing"
	"github.com/modelgate/modelgate/internal/relay/openai"
	"github.com/modelgate/modelgate/internal/relay/sse"
)

// maxResponse bounds a non-streaming upstream answer held in memory, and
// maxEvent one stream event.
const (
	maxResponse = 64 << 20
	maxEvent    = openai.MaxStreamEvent // the dialects read theirs with the same bound
	// maxFallbackText bounds the stream text kept for counting tokens
	// locally when the upstream reports no usage.
	maxFallbackText = 1 << 20
)

// passthroughOpenAI forwards a call to an OpenAI-compatible channel in its
// own dialect. The body goes as the client sent it unless the channel maps
// the model or a stream needs usage reporting turned on; the answer goes
// back as it came, with usage read on the way.
func (c *attempt) passthroughOpenAI(u *upstream) error {
	body, contentType := c.body, c.r.Header.Get("Content-Type")
	if contentType == "" {
		contentType = "application/json"
	}
	model := u.upstreamModel(c.meta.model)
	var fields [3]bodyField
	var limit [20]byte
	n := 0 // fields are set by index: an append could move limit to the heap
	if model != c.bodyModel {
		m, err := json.Marshal(model)
		if err != nil {
			return err
		}
		fields[n] = bodyField{"model", m}
		n++
	}
	if c.meta.stream && c.ep.usage == usageChat && !c.meta.includeUsage {
		fields[n] = bodyField{"stream_options", includeUsage}
		n++
	}
	// A hold that covers the model's whole output needs no limit here: the
	// OpenAI API needs none, and the body stays as the client sent it.
	if c.charge.CompletionLimit > 0 && !c.charge.Covered {
		fields[n] = bodyField{c.completionField(body, u.takesCompletionTokens(model)),
			strconv.AppendInt(limit[:0], c.charge.CompletionLimit, 10)}
		n++
	}
	if set := fields[:n]; len(set) > 0 {
		// The common cases, asking a stream for its usage and limiting the
		// completion, need no decode (withFields).
		var err error
		if c.ep.multipart {
			body, contentType, err = rewriteMultipartModel(contentType, body, model)
		} else {
			body, err = withFields(body, set)
		}
		if err != nil {
			return badRequest(MsgInvalidJSON)
		}
	}
	resp, err := c.post(u, u.native.NativeURL(u.BaseURL, c.ep.path, model, c.meta.stream), body, contentType)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		if c.learnsResponses(u, resp) {
			resp.Body.Close()
			return errNoResponsesAPI // converted instead (responsesapi.go)
		}
		return c.relayVerbatim(resp) // an error answer: nothing to bill
	}
	c.channel = u
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		c.beginStream(resp.Header)
		return c.streamOpenAI(resp)
	}
	return c.copyJSON(resp)
}

// injectField puts field (a "name":value pair) first in the JSON object
// body, which parseMeta already found to be an object.
func injectField(body []byte, field string) []byte {
	i := bytes.IndexByte(body, '{')
	rest := bytes.TrimLeft(body[i+1:], " \t\r\n")
	out := make([]byte, 0, len(body)+len(field)+1)
	out = append(out, body[:i+1]...)
	out = append(out, field...)
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, body[i+1:]...)
}

// copyJSON relays a complete answer and reads its usage. Binary answers
// (speech audio) are relayed as they are.
func (c *attempt) copyJSON(resp *http.Response) error {
	defer resp.Body.Close()
	read := time.Now()
	raw, err := readAnswer(c.rl.getBody(), resp)
	defer c.rl.putBody(raw) // raw is written to the client before it goes back
	c.addUpstream(time.Since(read))
	if f := c.bodyIdleFailure(resp.StatusCode, err); f != nil {
		return f
	}
	if err != nil {
		return &upstreamFailure{status: resp.StatusCode, detail: err.Error(), retry: true}
	}
	isJSON := strings.Contains(resp.Header.Get("Content-Type"), "json")
	usage, ok, checked := decodeUsage(c.ep.usage, raw)
	if (isJSON || !c.ep.opaque) && !checked && !json.Valid(raw) {
		// A 200 with garbage (an HTML error page of a proxy in between):
		// nothing usable reached the client yet.
		return unreadableAnswer("invalid JSON from upstream")
	}
	if ok {
		c.usage = usage
	} else if !isJSON && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/") {
		c.countLocally(string(raw)) // a plain-text (or SRT, VTT) transcript
	} else {
		c.countLocally(collectText(raw, completionKeys))
	}
	c.copyHeaders(resp.Header)
	c.w.WriteHeader(resp.StatusCode)
	_, err = c.w.Write(raw)
	return err
}

// readAnswer reads a complete answer of at most maxResponse bytes into buf
// (a pooled body buffer, grown to the declared length at once).
func readAnswer(buf []byte, resp *http.Response) ([]byte, error) {
	if n := resp.ContentLength; n >= 0 && n < maxResponse && int(n)+1 > cap(buf) {
		buf = make([]byte, 0, n+1) // the byte past the end reads EOF
	}
	r := io.LimitReader(resp.Body, maxResponse)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// beginStream answers 200 with a stream's headers (the upstream's, when
// given, then the event-stream ones) and sends them at once.
//
// The send runs on a goroutine of its own, which the call waits for:
// net/http writes the headers in chunkWriter.writeHeader, a 2.8 KB frame
// whose callees (sorting the headers, formatting Date) take 1 KB more, on
// top of the 4 KB of frames from the connection's serve loop down to here.
// On the call's goroutine that grows its stack from 8 KiB to 16 KiB, and a
// goroutine's stack does not shrink while the stream is open: 8 KiB more
// per open stream, a third of what a stream costs the gateway
// (docs/performance.md, "A stream's stack"). The hand-off is sequential,
// as net/http allows: the call does nothing with the writer meanwhile.
func (c *attempt) beginStream(upstream http.Header) {
	h := c.w.Header()
	if upstream != nil {
		c.copyHeaders(upstream)
	} else {
		h.Set("Content-Type", "text/event-stream")
	}
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	c.w.WriteHeader(http.StatusOK)
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		http.NewResponseController(c.w).Flush()
	}()
	<-sent
}

// streamOpenAI relays SSE event by event, flushing whenever it must wait
// for the upstream (flushingBody); beginStream has sent the headers. The usage chunk
// the relay asked for on the client's behalf is not shown to a client that
// did not ask for it. A broken upstream stream is reported in the stream
// and never closed with [DONE]. After the client leaves, the upstream is
// read on (streamDrain) until its usage arrives or the grace ends; without
// usage, everything the upstream sent is counted locally.
func (c *attempt) streamOpenAI(resp *http.Response) error {
	defer resp.Body.Close()
	d := c.drainOnLeave()
	defer d.end()
	body := newFlushingBody(resp.Body, c.w)

	seen := getSeen() // event data, for counting tokens when no usage comes
	defer putSeen(seen)
	found := false
	idle := c.watchIdle()
	defer idle.stop()
	var relayed int64 // events written: a Responses error event's sequence_number
	rd := sse.NewReader(body, maxEvent)
	defer rd.Release()
	for {
		body.flushIfDrained(rd.Buffered())
		idle.reading()
		ev, err := rd.Next()
		if err == io.EOF && !idle.timedOut() {
			break
		}
		if err != nil {
			if !d.left() { // after the client left, the grace's end cuts the stream
				msg := c.streamFailure(err, idle)
				if c.ep.responses {
					writeResponsesError(c.w, msg, relayed)
				} else {
					writeStreamError(c.w, msg)
				}
				body.wrote()
			}
			break
		}
		idle.event()
		if usage, ok := usageFromEvent(c.ep.usage, ev); ok {
			c.usage, found = usage, true
			if d.left() {
				break // the usage the grace waited for
			}
			if c.ep.usage == usageChat && !c.meta.includeUsage && isUsageOnlyChunk(ev.Data) {
				continue
			}
		} else if !found && seen.Len() < maxFallbackText {
			seen.Write(ev.Data)
			seen.WriteByte('\n')
		}
		if d.left() {
			continue
		}
		if err := sse.Write(c.w, ev.Name, ev.Data); err != nil {
			d.leave()
			continue
		}
		relayed++
		body.wrote()
	}
	body.flush()
	c.finishUnreported(found, seen)
	return nil
}

// seenBufs keeps the buffers of a stream's text (streamOpenAI) for the next
// stream: most streams write every content chunk there before their usage
// chunk arrives at the end.
var seenBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledSeen bounds the buffers seenBufs keeps.
const maxPooledSeen = 64 << 10

func getSeen() *bytes.Buffer { return seenBufs.Get().(*bytes.Buffer) }

func putSeen(b *bytes.Buffer) {
	if b.Cap() <= maxPooledSeen {
		b.Reset()
		seenBufs.Put(b)
	}
}

// streamBroken logs why the upstream stream broke and returns what a client
// still connected is told: a generic text with the request id, never the
// error itself, which names the upstream's address ("read tcp
// 10.0.0.5:41234->203.0.113.7:443: connection reset by peer").
func (c *attempt) streamBroken(err error) string {
	if c.rl.ending() {
		return "stream ended: the gateway is shutting down"
	}
	c.upstreamBroke = "stream broken: " + scrub(err.Error(), c.channel.Key)
	c.rl.Log.Warn("upstream stream broken", "request_id", c.requestID, "channel", c.channel.ID,
		"err", scrub(err.Error(), c.channel.Key))
	msg := "upstream stream broken (request id " + c.requestID + ")"
	c.logStreamBroken(err, msg)
	return msg
}

// finishUnreported counts tokens locally when the stream carried no usage.
func (c *attempt) finishUnreported(found bool, seen *bytes.Buffer) {
	if found {
		return
	}
	var text strings.Builder
	for _, line := range bytes.Split(seen.Bytes(), []byte("\n")) {
		text.WriteString(collectText(line, completionKeys))
	}
	c.countLocally(text.String())
}

// countLocally sets the usage from local token counts of the request and of
// the produced text, and marks it estimated.
func (c *attempt) countLocally(completion string) {
	c.estimated = true
	c.usage = pricing.Usage{
		PromptTokens:     c.rl.tokens.Count(c.meta.model, collectText(c.body, promptKeys)),
		CompletionTokens: c.rl.tokens.Count(c.meta.model, completion),
	}
}

// writeStreamError reports a failure inside an SSE stream in the OpenAI
// error shape.
func writeStreamError(w io.Writer, msg string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"message": msg, "type": "upstream_error"}})
	sse.Write(w, "", b)
}

// isUsageOnlyChunk reports a chunk with no choices: the final usage chunk.
// data is valid JSON (decodeUsage checked it); its members are walked
// once, as json.Unmarshal into the struct below reads them, which a name
// with an escape or a non-ASCII byte is left to.
func isUsageOnlyChunk(data []byte) bool {
	i := skipSpace(data, 0)
	if i == len(data) || data[i] != '{' {
		return decodeUsageOnlyChunk(data)
	}
	empty := true
	obj := data[i:]
	for name, v, next := firstMember(obj); name != nil; name, v, next = nextMember(obj, next) {
		if !plainName(name) {
			return decodeUsageOnlyChunk(data)
		}
		if !bytes.EqualFold(name, []byte("choices")) {
			continue
		}
		switch {
		case isNull(v):
			empty = true
		case v[0] == '[':
			empty = v[skipSpace(v, 1)] == ']'
		default:
			return false // not an array: json.Unmarshal fails
		}
	}
	return empty
}

func decodeUsageOnlyChunk(data []byte) bool {
	var chunk struct {
		Choices []json.RawMessage `json:"choices"`
	}
	return json.Unmarshal(data, &chunk) == nil && len(chunk.Choices) == 0
}
