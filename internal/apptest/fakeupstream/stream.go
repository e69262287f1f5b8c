package fakeupstream

import (
	"encoding/json"
	"net/http"
)

// eventStream writes one streamed answer, event by event, flushing each, so
// a client sees events arrive as a real upstream sends them.
type eventStream struct {
	x  *exchange
	rc *http.ResponseController
	// eol ends a data line: "\n", or "\r\n" for Gemini, which sends CRLF.
	eol string
	// array writes a JSON array instead of events: what Gemini's
	// streamGenerateContent answers without alt=sse.
	array  bool
	events int
	deltas int
}

// startStream sends the 200 and the headers of a stream.
func (x *exchange) startStream() *eventStream {
	st := &eventStream{x: x, rc: http.NewResponseController(x.w), eol: "\n"}
	if x.dialect == Gemini {
		st.eol = "\r\n"
		st.array = x.r.URL.Query().Get("alt") != "sse"
	}
	h := x.w.Header()
	h.Set("Content-Type", x.contentType())
	h.Set("Cache-Control", "no-cache")
	x.w.WriteHeader(http.StatusOK)
	_ = st.rc.Flush()
	return st
}

// send writes one event named name (none when empty) with v as its data,
// after the Behavior's ChunkDelay unless it is the first.
func (st *eventStream) send(name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return st.sendRaw(name, data)
}

func (st *eventStream) sendRaw(name string, data []byte) error {
	if st.events > 0 {
		if err := st.x.sleep(st.x.b.ChunkDelay); err != nil {
			return err
		}
	}
	var buf []byte
	switch {
	case st.array && st.events == 0:
		buf = append(append([]byte("["), data...), st.eol...)
	case st.array:
		buf = append(append([]byte(","), data...), st.eol...)
	default:
		if name != "" {
			buf = append(append([]byte("event: "), name...), st.eol...)
		}
		buf = append(append(append(buf, "data: "...), data...), st.eol+st.eol...)
	}
	st.events++
	if _, err := st.x.w.Write(buf); err != nil {
		return errGone
	}
	if err := st.rc.Flush(); err != nil {
		return errGone
	}
	return nil
}

// content writes an event that carries a content delta, and returns errCut
// once Behavior.FailAfter of them were sent.
func (st *eventStream) content(name string, v any) error {
	if gate := st.x.b.DeltaGate; gate != nil && st.deltas > 0 {
		select {
		case <-gate:
		case <-st.x.r.Context().Done():
			return errGone
		case <-st.x.s.stop:
			return errGone
		}
	}
	if err := st.send(name, v); err != nil {
		return err
	}
	st.deltas++
	if fa := st.x.b.FailAfter; fa > 0 && st.deltas >= fa {
		return errCut
	}
	return nil
}

// end closes a Gemini JSON array; events need no end of their own.
func (st *eventStream) end() error {
	if !st.array {
		return nil
	}
	if _, err := st.x.w.Write([]byte("]")); err != nil {
		return errGone
	}
	return nil
}

// split cuts s into n pieces of nearly equal length, on rune boundaries;
// fewer when s has fewer than n runes, but always at least one.
func split(s string, n int) []string {
	runes := []rune(s)
	n = max(min(n, len(runes)), 1)
	pieces := make([]string, 0, n)
	for i := range n {
		pieces = append(pieces, string(runes[i*len(runes)/n:(i+1)*len(runes)/n]))
	}
	return pieces
}

// pieces is what a stream sends as content deltas: the reply, or the tool
// call's arguments.
func (x *exchange) pieces() []string {
	if x.b.ToolCall != nil {
		return split(x.b.ToolCall.arguments(), x.b.Chunks)
	}
	return split(x.b.Reply, x.b.Chunks)
}
