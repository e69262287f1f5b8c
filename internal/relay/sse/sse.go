// Package sse reads and writes server-sent events as LLM APIs use them:
// "event:" and "data:" fields, events separated by a blank line. Lines are
// read with a bound of the caller's choosing instead of bufio.Scanner's
// 64 KiB token limit, which long tool-call arguments exceed.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
)

// ErrEventTooLarge is returned when one event exceeds the reader's bound.
var ErrEventTooLarge = errors.New("sse: event too large")

// Event is one server-sent event. Data joins multiple data lines with "\n".
type Event struct {
	Name string
	Data []byte
}

// Reader reads events from a stream.
type Reader struct {
	r    *bufio.Reader
	max  int
	data []byte
	name []byte
	// last is the previous event's name: a stream repeats a few names
	// ("content_block_delta"), so an event whose name is the last one's
	// takes it without allocating.
	last string
	buf  *[]byte // data's pooled slice
}

// readBufSize is the reader's buffer: lines longer than it accumulate.
const readBufSize = 1 << 10

// maxPooled bounds the buffers kept for reuse (a long event's data buffer
// is let go instead).
const maxPooled = 16 << 10

var (
	readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufSize) }}
	bufs    = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}
)

// NewReader reads events of at most maxEvent bytes from r. Release gives
// its buffers back once the stream is done.
func NewReader(r io.Reader, maxEvent int) *Reader {
	br := readers.Get().(*bufio.Reader)
	br.Reset(r)
	p := bufs.Get().(*[]byte)
	return &Reader{r: br, max: maxEvent, data: (*p)[:0], buf: p}
}

// Release gives the reader's buffers back for other streams; the reader
// and every Data it returned must not be used after. Not calling it only
// costs the allocation of new buffers.
func (r *Reader) Release() {
	if r.r == nil {
		return
	}
	r.r.Reset(nil)
	readers.Put(r.r)
	r.r = nil
	putBuf(r.buf, r.data)
	r.data, r.buf = nil, nil
}

// putBuf keeps b, grown from *p, for reuse unless it grew too large.
func putBuf(p *[]byte, b []byte) {
	if cap(b) <= maxPooled {
		*p = b[:0]
		bufs.Put(p)
	}
}

// Next returns the next event with at least one data line (comments and
// events without data are skipped). At the end of the stream it returns
// io.EOF; a stream that ends inside an event returns that event first. The
// returned Data is valid until the next call.
func (r *Reader) Next() (Event, error) {
	r.data, r.name = r.data[:0], r.name[:0]
	hasData := false
	for {
		line, err := r.readLine()
		if err != nil {
			if err == io.EOF && hasData {
				return Event{Name: r.nameString(), Data: r.data}, nil
			}
			return Event{}, err
		}
		if len(line) == 0 { // end of event
			if hasData {
				return Event{Name: r.nameString(), Data: r.data}, nil
			}
			r.name = r.name[:0]
			continue
		}
		field, value := splitField(line)
		switch string(field) {
		case "data":
			if hasData {
				r.data = append(r.data, '\n')
			}
			r.data = append(r.data, value...)
			hasData = true
		case "event":
			r.name = append(r.name[:0], value...)
		}
		if len(r.data)+len(r.name) > r.max {
			return Event{}, ErrEventTooLarge
		}
	}
}

// Buffered is how many bytes the reader holds that Next has not returned:
// when it is 0, the next Next reads its source.
func (r *Reader) Buffered() int { return r.r.Buffered() }

// nameString returns the event's name, reusing the last one's string when
// it is the same.
func (r *Reader) nameString() string {
	if string(r.name) != r.last { // no allocation: a comparison
		r.last = string(r.name)
	}
	return r.last
}

// readLine returns one line without its line ending, accumulating across
// buffer fills up to the reader's bound.
func (r *Reader) readLine() ([]byte, error) {
	line, err := r.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		long := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull {
			if len(long) > r.max {
				return nil, ErrEventTooLarge
			}
			line, err = r.r.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	if err != nil && !(err == io.EOF && len(line) > 0) {
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), nil
}

// splitField splits "name: value" (one optional space after the colon); a
// line starting with ':' is a comment and yields an empty field.
func splitField(line []byte) (field, value []byte) {
	i := bytes.IndexByte(line, ':')
	if i < 0 {
		return line, nil
	}
	value = line[i+1:]
	if len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	return line[:i], value
}

// Write writes one event; name may be empty. Data with newlines becomes
// several data lines. The event goes out in one Write call, so a flush
// after it never splits an event.
func Write(w io.Writer, name string, data []byte) error {
	p := bufs.Get().(*[]byte)
	buf := (*p)[:0]
	if name != "" {
		buf = append(buf, "event: "...)
		buf = append(buf, name...)
		buf = append(buf, '\n')
	}
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		buf = append(buf, "data: "...)
		buf = append(buf, data[:i]...)
		buf = append(buf, '\n')
		data = data[i+1:]
	}
	buf = append(buf, "data: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	_, err := w.Write(buf)
	putBuf(p, buf) // io.Writer: w must not retain buf
	return err
}
