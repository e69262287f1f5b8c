package h1

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"testing"
)

// slowReader is a body net/http does not know to be in memory.
type slowReader struct{ r io.Reader }

func (s *slowReader) Read(p []byte) (int, error) { return s.r.Read(p) }

// countingWriter counts the writes that reach the connection (it has no
// ReadFrom, as a net.Conn to a plain TCP peer has none bufio would use).
type countingWriter struct {
	buf    bytes.Buffer
	writes int
}

func (c *countingWriter) Write(p []byte) (int, error) { c.writes++; return c.buf.Write(p) }
func (c *countingWriter) String() string              { return c.buf.String() }

// writeRequest writes what req.Write writes, byte for byte, and fails as
// it does: the relay's requests on its own path, every other shape handed
// to net/http. Each case builds the request twice (a write consumes it).
func TestWriteRequestAsNetHTTP(t *testing.T) {
	post := func(url, body string) *http.Request {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	relay := func() *http.Request { // the relay's shape (upstream.go)
		return relayRequest(t, bytes.NewReader([]byte(`{"model":"m"}`)))
	}
	with := func(build func() *http.Request, change func(*http.Request)) func() *http.Request {
		return func() *http.Request { req := build(); change(req); return req }
	}
	for _, tt := range []struct {
		name  string
		req   func() *http.Request
		plain bool // written by writeRequest itself
	}{
		{"relay's request", relay, true},
		{"host header", with(relay, func(r *http.Request) { r.Host = "other.test" }), true},
		{"user agent", with(relay, func(r *http.Request) { r.Header.Set("User-Agent", "modelgate/1") }), true},
		{"user agent blank", with(relay, func(r *http.Request) { r.Header["User-Agent"] = []string{""} }), true},
		{"user agent no values", with(relay, func(r *http.Request) { r.Header["User-Agent"] = nil }), true},
		{"values many, none, empty", with(relay, func(r *http.Request) {
			r.Header["Anthropic-Beta"] = []string{"a", "b"}
			r.Header["X-None"] = []string{}
			r.Header["X-Empty"] = []string{""}
		}), true},
		{"excluded headers", with(relay, func(r *http.Request) {
			r.Header["Content-Length"] = []string{"99"}
			r.Header["Host"] = []string{"evil.test"}
			r.Header["Transfer-Encoding"] = []string{"chunked"}
			r.Header["Trailer"] = []string{"X"}
		}), true},
		{"lower-case key", with(relay, func(r *http.Request) { r.Header["x-lower"] = []string{"v"} }), true},
		{"query and escapes", func() *http.Request { return post("http://h.test/v1/a%2Fb/c?x=1&y=%20", "{}") }, true},
		{"https default port", func() *http.Request { return post("https://api.example.com/v1/messages", "{}") }, true},
		{"ipv6 host", func() *http.Request { return post("http://[::1]:8080/v1", "{}") }, true},
		{"get", func() *http.Request {
			r, _ := http.NewRequest(http.MethodGet, "http://h.test/v1/models", nil)
			return r
		}, true},
		{"head", func() *http.Request { r, _ := http.NewRequest(http.MethodHead, "http://h.test/", nil); return r }, true},
		{"delete", func() *http.Request { r, _ := http.NewRequest(http.MethodDelete, "http://h.test/x", nil); return r }, true},
		{"put no body", func() *http.Request {
			r, _ := http.NewRequest(http.MethodPut, "http://h.test/x", http.NoBody)
			return r
		}, true},
		{"empty method", func() *http.Request {
			r, _ := http.NewRequest(http.MethodGet, "http://h.test/", nil)
			r.Method = ""
			return r
		}, true},
		{"post empty body", func() *http.Request { return post("http://h.test/", "") }, true},
		{"body of unknown kind", func() *http.Request {
			r, _ := http.NewRequest(http.MethodPost, "http://h.test/", &slowReader{strings.NewReader("hello")})
			r.ContentLength = 5
			return r
		}, true},
		{"body shorter than said", with(relay, func(r *http.Request) { r.ContentLength = 100 }), true},
		{"body longer than said", with(relay, func(r *http.Request) { r.ContentLength = 3 }), true},

		{"value with a line break", with(relay, func(r *http.Request) { r.Header.Set("X-Inject", "a\r\nX-Evil: 1") }), false},
		{"value with spaces around", with(relay, func(r *http.Request) { r.Header.Set("X-Pad", " v\t") }), false},
		{"user agent with a line break", with(relay, func(r *http.Request) { r.Header.Set("User-Agent", "a\nb") }), false},
		{"value with a control byte", with(relay, func(r *http.Request) { r.Header.Set("X-Ctl", "a\x00b") }), false},
		{"invalid key", with(relay, func(r *http.Request) { r.Header["Bad Key"] = []string{"v"} }), false},
		{"non-ascii host", func() *http.Request { return post("http://bücher.test/", "{}") }, false},
		{"zone in host", func() *http.Request { return post("http://[fe80::1%25en0]:8080/", "{}") }, false},
		{"invalid host", with(relay, func(r *http.Request) { r.Host = "a b" }), false},
		{"control byte in the path", with(relay, func(r *http.Request) { r.URL.RawQuery = "a=\x01" }), false},
		{"unknown length", func() *http.Request {
			r, _ := http.NewRequest(http.MethodPost, "http://h.test/", &slowReader{strings.NewReader("chunked")})
			return r
		}, false},
		{"length without a body", func() *http.Request {
			r, _ := http.NewRequest(http.MethodPost, "http://h.test/", nil)
			r.ContentLength = 5
			return r
		}, false},
		{"close", with(relay, func(r *http.Request) { r.Close = true }), false},
		{"transfer encoding", with(relay, func(r *http.Request) { r.TransferEncoding = []string{"chunked"} }), false},
		{"trailer", with(relay, func(r *http.Request) { r.Trailer = http.Header{"X-T": nil} }), false},
		{"many headers", with(relay, func(r *http.Request) {
			for i := range maxSortedHeaders {
				r.Header.Set("X-H"+strconv.Itoa(i), "v")
			}
		}), false},
		{"traced", with(relay, func(r *http.Request) {
			*r = *r.WithContext(httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{}))
		}), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var keys [maxSortedHeaders]string
			if _, _, _, plain := plainRequest(tt.req(), &keys); plain != tt.plain {
				t.Fatalf("plainRequest = %v, want %v", plain, tt.plain)
			}
			var want, got countingWriter
			wantErr := tt.req().Write(&want)
			bw := bufio.NewWriterSize(&got, 1<<10)
			gotErr := writeRequest(bw, tt.req())
			if gotErr == nil {
				gotErr = bw.Flush()
			} else {
				bw.Flush()
			}
			if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
				t.Fatalf("error = %v, net/http's %v", gotErr, wantErr)
			}
			if wantErr != nil {
				return // what a failed write left in the buffer is dropped with the connection (exchange)
			}
			if got.String() != want.String() {
				t.Fatalf("wrote\n%q\nnet/http writes\n%q", got.String(), want.String())
			}
			if tt.name == "body of unknown kind" && got.writes != 2 {
				t.Fatalf("%d writes: the headers go out before a body that may block", got.writes)
			}
			if tt.name == "relay's request" && got.writes != 1 {
				t.Fatalf("%d writes: an in-memory body goes out with the headers", got.writes)
			}
		})
	}
}

// relayRequest is a request of the relay's shape (upstream.go).
func relayRequest(tb testing.TB, body io.Reader) *http.Request {
	req, err := http.NewRequest(http.MethodPost, "http://upstream.test:8080/v1/chat/completions", body)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header["Authorization"] = []string{"Bearer sk-upstream"}
	req.Header["Content-Type"] = []string{"application/json"}
	req.Header["Accept"] = []string{"text/event-stream"}
	req.Header["X-Request-Id"] = []string{"0123456789abcdef"}
	return req
}

// reusedRequest is the relay's request with a body that rewind resets
// before each write, so that one request is written again and again.
func reusedRequest(tb testing.TB) (req *http.Request, rewind func()) {
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	req = relayRequest(tb, nil)
	rd := bytes.NewReader(body)
	nop := io.NopCloser(rd)
	return req, func() {
		rd.Reset(body)
		req.Body, req.ContentLength = nop, int64(len(body))
	}
}

// The relay's request is written with two allocations (its request URI
// and the body's limit), where req.Write takes seven.
func TestWriteRequestAllocs(t *testing.T) {
	req, rewind := reusedRequest(t)
	bw := bufio.NewWriterSize(io.Discard, 1<<10)
	allocs := testing.AllocsPerRun(200, func() {
		rewind()
		if err := writeRequest(bw, req); err != nil {
			t.Fatal(err)
		}
		bw.Flush()
	})
	if allocs > 2 {
		t.Fatalf("%.0f allocations a request, want at most 2", allocs)
	}
}

// BenchmarkWriteRequest compares writeRequest with req.Write on the
// relay's request.
func BenchmarkWriteRequest(b *testing.B) {
	for _, w := range []struct {
		name  string
		write func(*bufio.Writer, *http.Request) error
	}{
		{"h1", writeRequest},
		{"net-http", func(bw *bufio.Writer, r *http.Request) error { return r.Write(bw) }},
	} {
		b.Run(w.name, func(b *testing.B) {
			req, rewind := reusedRequest(b)
			bw := bufio.NewWriterSize(io.Discard, 1<<10)
			b.ReportAllocs()
			for b.Loop() {
				rewind()
				if err := w.write(bw, req); err != nil {
					b.Fatal(err)
				}
				bw.Flush()
			}
		})
	}
}
