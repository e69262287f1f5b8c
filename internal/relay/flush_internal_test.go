package relay

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/modelgate/modelgate/internal/relay/sse"
)

// flushCounter is a ResponseWriter that counts flushes and what they sent.
type flushCounter struct {
	out     bytes.Buffer
	flushes int
	flushed int // bytes of out sent by a flush
}

func (w *flushCounter) Header() http.Header         { return http.Header{} }
func (w *flushCounter) WriteHeader(int)             {}
func (w *flushCounter) Write(p []byte) (int, error) { return w.out.Write(p) }
func (w *flushCounter) Flush()                      { w.flushes++; w.flushed = w.out.Len() }

// scriptedUpstream answers each Read with the next piece, and notes at
// each read whether everything written to the client had been flushed:
// a read is where the relay may wait.
type scriptedUpstream struct {
	pieces   []string
	w        *flushCounter
	unsentAt []int // bytes written but not flushed, at each read
}

func (u *scriptedUpstream) Read(p []byte) (int, error) {
	u.unsentAt = append(u.unsentAt, u.w.out.Len()-u.w.flushed)
	if len(u.pieces) == 0 {
		return 0, io.EOF
	}
	n := copy(p, u.pieces[0])
	u.pieces = u.pieces[1:]
	return n, nil
}

// relayAll is the loop of the passthrough streams (streamOpenAI,
// streamAnthropic) with their flushing rule.
func relayAll(body *flushingBody, w http.ResponseWriter) {
	rd := sse.NewReader(body, maxEvent)
	defer rd.Release()
	for {
		body.flushIfDrained(rd.Buffered())
		ev, err := rd.Next()
		if err != nil {
			break
		}
		sse.Write(w, ev.Name, ev.Data)
		body.wrote()
	}
	body.flush()
}

func TestStreamFlushesBeforeEachUpstreamRead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		pieces  []string
		flushes int
	}{
		// Three events in one read leave in one flush, as a proxy's copy.
		{"arrived together", []string{"data: 1\n\ndata: 2\n\ndata: 3\n\n"}, 1},
		{"one a read", []string{"data: 1\n\n", "data: 2\n\n", "data: 3\n\n"}, 3},
		// The second event is split across reads: the first is flushed
		// before the read that waits for the rest.
		{"split event", []string{"data: 1\n\ndata: ", "2\n\n", "data: 3\n\n"}, 3},
		// A keep-alive comment alone is read past; what was written before
		// it is flushed before the read after it.
		{"comment between", []string{"data: 1\n\n", ": ping\n\n", "data: 2\n\n"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := &flushCounter{}
			up := &scriptedUpstream{pieces: tc.pieces, w: w}
			relayAll(newFlushingBody(up, w), w)
			for i, unsent := range up.unsentAt {
				if unsent != 0 {
					t.Fatalf("read %d with %d bytes written and not flushed", i+1, unsent)
				}
			}
			if w.flushes != tc.flushes || w.flushed != w.out.Len() {
				t.Fatalf("%d flushes (%d of %d bytes sent), want %d flushes of all", w.flushes, w.flushed, w.out.Len(), tc.flushes)
			}
		})
	}
}
