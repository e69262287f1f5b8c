package responses

import (
	"encoding/json"
	"strings"

	"github.com/modelgate/modelgate/internal/relay/openai"
	"github.com/modelgate/modelgate/internal/relay/sse"
)

// Stream converts OpenAI chat chunks to the Responses event stream, in the
// order OpenAI emits it: response.created, response.in_progress; per
// output item response.output_item.added, then for a message
// response.content_part.added, response.output_text.delta…,
// response.output_text.done, response.content_part.done, and for a function
// call response.function_call_arguments.delta…,
// response.function_call_arguments.done; then response.output_item.done;
// finally response.completed (response.incomplete when the upstream stopped
// at the output limit or a content filter) with the usage. One item is
// open at a time: text, then each tool call in turn, as chat streams them.
// Every event carries a sequence_number counting from 0. Only choice 0 is
// read. A Stream is not safe for concurrent use.
type Stream struct {
	in      *Request
	resp    Response
	id      string
	seq     int64
	started bool
	ended   bool

	open     string // type of the open item: "", "message" or "function_call"
	text     strings.Builder
	tool     int // chat index of the open function call
	callID   string
	callName string
	args     strings.Builder

	finish string
	usage  openai.Usage
}

// NewStream returns a converter answering in (its echoed fields) as model;
// id is the relay's request id, created the response's time.
func NewStream(in *Request, model, id string, created int64) *Stream {
	return &Stream{in: in, id: id, resp: newResponse(in, model, id, created)}
}

// event is one event's fields besides type and sequence_number.
type event map[string]any

// emit appends the event typ to out.
func (s *Stream) emit(out []sse.Event, typ string, fields event) []sse.Event {
	fields["type"] = typ
	fields["sequence_number"] = s.seq
	s.seq++
	b, _ := json.Marshal(fields)
	return append(out, sse.Event{Name: typ, Data: b})
}

// snapshot is the response as it stands, for response.* events.
func (s *Stream) snapshot() Response {
	r := s.resp
	r.Output = append([]Item{}, s.resp.Output...)
	return r
}

// start emits response.created and response.in_progress, once.
func (s *Stream) start(out []sse.Event) []sse.Event {
	if s.started {
		return out
	}
	s.started = true
	out = s.emit(out, "response.created", event{"response": s.snapshot()})
	return s.emit(out, "response.in_progress", event{"response": s.snapshot()})
}

// Start emits the stream's first events; Convert emits them too when they
// are still due, so calling it is optional.
func (s *Stream) Start() []sse.Event { return s.start(nil) }

// Convert turns one chunk into events. A chunk's usage (the final
// usage-only chunk) is kept for Finish.
func (s *Stream) Convert(chunk *openai.ChatChunk) []sse.Event {
	if s.ended {
		return nil
	}
	out := s.start(nil)
	if chunk.Usage != nil {
		s.usage = *chunk.Usage
	}
	for _, c := range chunk.Choices {
		if c.Index != 0 {
			continue
		}
		if t := c.Delta.Content; t != nil && *t != "" {
			if s.open != "message" {
				out = s.close(out, "completed")
				out = s.openMessage(out)
			}
			s.text.WriteString(*t)
			out = s.emit(out, "response.output_text.delta", event{"item_id": s.itemID(), "output_index": len(s.resp.Output),
				"content_index": 0, "delta": *t, "logprobs": []any{}})
		}
		for i, tc := range c.Delta.ToolCalls {
			index := i
			if tc.Index != nil {
				index = *tc.Index
			}
			if s.open != "function_call" || index != s.tool {
				out = s.close(out, "completed")
				out = s.openCall(out, index, tc)
			}
			if tc.Function.Arguments != "" {
				s.args.WriteString(tc.Function.Arguments)
				out = s.emit(out, "response.function_call_arguments.delta", event{"item_id": s.itemID(),
					"output_index": len(s.resp.Output), "delta": tc.Function.Arguments})
			}
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			s.finish = *c.FinishReason
		}
	}
	return out
}

// itemID is the id of the open item, which will be output[len(Output)].
func (s *Stream) itemID() string {
	if s.open == "function_call" {
		return callItemID(s.id, len(s.resp.Output))
	}
	return messageID(s.id, len(s.resp.Output))
}

func (s *Stream) openMessage(out []sse.Event) []sse.Event {
	s.open = "message"
	s.text.Reset()
	n := len(s.resp.Output)
	empty := []OutputText{}
	item := Item{Type: "message", ID: messageID(s.id, n), Status: "in_progress", Role: "assistant", Content: &empty}
	out = s.emit(out, "response.output_item.added", event{"output_index": n, "item": item})
	return s.emit(out, "response.content_part.added", event{"item_id": item.ID, "output_index": n, "content_index": 0,
		"part": OutputText{Type: "output_text", Text: "", Annotations: []string{}}})
}

func (s *Stream) openCall(out []sse.Event, index int, tc openai.ToolCall) []sse.Event {
	n := len(s.resp.Output)
	s.open, s.tool = "function_call", index
	s.callID, s.callName = callID(tc.ID, s.id, n), tc.Function.Name
	s.args.Reset()
	empty := ""
	item := callItem(callItemID(s.id, n), s.callID, s.callName, empty, "in_progress")
	return s.emit(out, "response.output_item.added", event{"output_index": n, "item": item})
}

// close ends the open item with status, adding it to the output.
func (s *Stream) close(out []sse.Event, status string) []sse.Event {
	n := len(s.resp.Output)
	switch s.open {
	case "message":
		id, text := messageID(s.id, n), s.text.String()
		out = s.emit(out, "response.output_text.done", event{"item_id": id, "output_index": n, "content_index": 0,
			"text": text, "logprobs": []any{}})
		out = s.emit(out, "response.content_part.done", event{"item_id": id, "output_index": n, "content_index": 0,
			"part": OutputText{Type: "output_text", Text: text, Annotations: []string{}}})
		item := messageItem(id, text, status)
		s.resp.Output = append(s.resp.Output, item)
		out = s.emit(out, "response.output_item.done", event{"output_index": n, "item": item})
	case "function_call":
		id, args := callItemID(s.id, n), orEmptyObject(s.args.String())
		out = s.emit(out, "response.function_call_arguments.done", event{"item_id": id, "output_index": n,
			"name": s.callName, "arguments": args})
		item := callItem(id, s.callID, s.callName, args, "completed")
		s.resp.Output = append(s.resp.Output, item)
		out = s.emit(out, "response.output_item.done", event{"output_index": n, "item": item})
	}
	s.open = ""
	return out
}

// SetUsage sets the usage Finish reports (the relay's final count, which
// may come from the chunk source rather than a chunk).
func (s *Stream) SetUsage(u openai.Usage) { s.usage = u }

// Finish closes the open item and emits response.completed (or
// response.incomplete) with the usage.
func (s *Stream) Finish() []sse.Event {
	if s.ended {
		return nil
	}
	out := s.start(nil)
	status, detail := finishStatus(s.finish)
	itemStatus := "completed"
	if status == "incomplete" && s.open == "message" {
		itemStatus = "incomplete"
	}
	out = s.close(out, itemStatus)
	s.ended = true
	s.resp.Status, s.resp.IncompleteDetails, s.resp.Usage = status, detail, UsageOf(s.usage)
	return s.emit(out, "response."+status, event{"response": s.snapshot()})
}

// Fail ends a broken stream with response.failed carrying msg. The open
// item is not closed: it never completed.
func (s *Stream) Fail(msg string) []sse.Event {
	if s.ended {
		return nil
	}
	out := s.start(nil)
	s.ended = true
	s.resp.Status = "failed"
	s.resp.Error = &Error{Code: "server_error", Message: msg}
	return s.emit(out, "response.failed", event{"response": s.snapshot()})
}
