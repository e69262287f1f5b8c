package relay

import (
	"io"
	"net/http"
)

// flushingBody is a relayed stream's upstream body, and the rule of when
// the stream's output is flushed to the client: before any read of the
// upstream, the one step of the loop that can wait, and not after every
// event. Events that arrived together leave in one write, as a reverse
// proxy copies them (one system call instead of one an event, each of
// which also runs the client's receive in the kernel), and no event stays
// in the buffer while the relay waits for the next.
//
// The loop flushes itself (flushIfDrained) when its reader holds nothing
// more, so the flush runs at the loop's depth; Read flushes too, for an
// event split across reads (the reader holds its start and must wait for
// the rest), deeper in the stack but never skipped.
type flushingBody struct {
	src     io.Reader
	rc      *http.ResponseController
	pending bool
}

// newFlushingBody reads src on behalf of a stream written to w, whose
// headers have been flushed.
func newFlushingBody(src io.Reader, w http.ResponseWriter) *flushingBody {
	return &flushingBody{src: src, rc: http.NewResponseController(w)}
}

// wrote notes output written since the last flush.
func (f *flushingBody) wrote() { f.pending = true }

// flushIfDrained flushes when the reader over this body holds no byte
// more: its next event needs a read of the upstream.
func (f *flushingBody) flushIfDrained(buffered int) {
	if buffered == 0 {
		f.flush()
	}
}

func (f *flushingBody) flush() {
	if f.pending {
		f.pending = false
		f.rc.Flush()
	}
}

func (f *flushingBody) Read(p []byte) (int, error) {
	f.flush()
	return f.src.Read(p)
}
