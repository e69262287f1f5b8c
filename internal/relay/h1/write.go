package h1

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"reflect"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// defaultUserAgent is what net/http sends when a request sets none.
const defaultUserAgent = "Go-http-client/1.1"

// maxSortedHeaders bounds the header keys writeRequest sorts on the stack;
// a request with more is written by net/http.
const maxSortedHeaders = 32

// writeRequest writes req on bw as req.Write(bw) would, byte for byte.
// The relay's requests (a method, a URL, a few headers, a body of known
// length in memory) are written here directly: req.Write formats the
// request line and Host through fmt, sorts the headers through a pooled
// sorter and builds a transfer writer, about 3 % of the gateway's CPU
// under load (docs/performance.md, "Seventh round"). Any request outside
// that shape, or one whose fields net/http would clean or refuse (a
// header value with a line break or surrounding spaces, an invalid Host,
// control bytes in the URL, a body of unknown length), is handed to
// req.Write, so the two can differ only in speed (TestWriteRequestAsNetHTTP).
func writeRequest(bw *bufio.Writer, req *http.Request) error {
	var keys [maxSortedHeaders]string
	host, ruri, sorted, ok := plainRequest(req, &keys)
	if !ok {
		return req.Write(bw)
	}
	userAgent := defaultUserAgent
	if vv, ok := req.Header["User-Agent"]; ok {
		userAgent = ""
		if len(vv) > 0 {
			userAgent = vv[0]
		}
	}

	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	bw.WriteString(method)
	bw.WriteByte(' ')
	bw.WriteString(ruri)
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(host)
	bw.WriteString("\r\n")
	if userAgent != "" {
		bw.WriteString("User-Agent: ")
		bw.WriteString(userAgent)
		bw.WriteString("\r\n")
	}
	length := outgoingLength(req)
	if length > 0 || method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		// net/http's shouldSendContentLength: "many servers expect" one there
		var digits [20]byte
		bw.WriteString("Content-Length: ")
		bw.Write(strconv.AppendInt(digits[:0], length, 10))
		bw.WriteString("\r\n")
	}
	for _, k := range sorted {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue // net/http's reqWriteExcludeHeader: written above, or not at all
		}
		for _, v := range req.Header[k] {
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
	_, err := bw.WriteString("\r\n")
	if length == 0 {
		if req.Body != nil {
			req.Body.Close()
		}
		return err
	}
	if err == nil && !inMemory(req.Body) {
		// As net/http: the headers go first when the body may block,
		// in case the server needs them before it.
		err = bw.Flush()
	}
	if err != nil {
		req.Body.Close()
		return err
	}
	return writeBody(bw, req.Body, length)
}

// nopCloserTypes are io.NopCloser's two types (with and without WriteTo).
var nopCloserTypes = [2]reflect.Type{reflect.TypeOf(io.NopCloser(nil)), reflect.TypeOf(io.NopCloser(bytes.NewReader(nil)))}

// inMemory reports whether r is a reader net/http knows to hold its bytes
// in memory (its isKnownInMemoryReader): reading it never blocks.
func inMemory(r io.Reader) bool {
	switch r.(type) {
	case *bytes.Reader, *bytes.Buffer, *strings.Reader:
		return true
	}
	if t := reflect.TypeOf(r); t == nopCloserTypes[0] || t == nopCloserTypes[1] {
		inner, _ := reflect.ValueOf(r).Field(0).Interface().(io.Reader)
		return inMemory(inner)
	}
	return false
}

// writeBody copies exactly length bytes of body, then closes it, failing
// as net/http does when the body is shorter or longer than it said.
func writeBody(bw *bufio.Writer, body io.ReadCloser, length int64) error {
	n, err := io.Copy(bw, io.LimitReader(body, length))
	if err == nil {
		var extra int64
		extra, err = io.Copy(io.Discard, body)
		n += extra
	}
	closeErr := body.Close()
	if err != nil {
		return err
	}
	if closeErr != nil {
		return closeErr
	}
	if n != length {
		return fmt.Errorf("http: ContentLength=%d with Body length %d", length, n)
	}
	return nil
}

// plainRequest reports whether req is of the shape writeRequest writes,
// with the Host and request URI it sends and its header keys sorted (in
// keys' array): no Close, transfer encoding or trailers, a body of known
// length or none, an ASCII Host net/http would send unchanged, a URI
// without control bytes, and at most maxSortedHeaders valid header keys
// whose values net/http would write unchanged.
func plainRequest(req *http.Request, keys *[maxSortedHeaders]string) (host, ruri string, sorted []string, ok bool) {
	if req.URL == nil || req.Close || len(req.TransferEncoding) > 0 || req.Trailer != nil || outgoingLength(req) < 0 {
		return "", "", nil, false
	}
	if req.Method == http.MethodConnect || req.Body == nil && req.ContentLength != 0 || httptrace.ContextClientTrace(req.Context()) != nil {
		return "", "", nil, false // a CONNECT's target, net/http's refusal, a trace's callbacks
	}
	host = req.Host
	if host == "" {
		host = req.URL.Host
	}
	for i := 0; i < len(host); i++ {
		if host[i] >= 0x80 || host[i] == '%' { // punycode and IPv6 zones: net/http rewrites them
			return "", "", nil, false
		}
	}
	if host == "" || !httpguts.ValidHostHeader(host) {
		return "", "", nil, false
	}
	n := 0
	for k, vv := range req.Header {
		if n == len(keys) || !httpguts.ValidHeaderFieldName(k) {
			return "", "", nil, false
		}
		for _, v := range vv {
			if !plainValue(v) {
				return "", "", nil, false
			}
		}
		keys[n] = k
		n++
	}
	sorted = keys[:n]
	for i := 1; i < len(sorted); i++ { // insertion sort: a handful of keys, no allocation
		for j := i; j > 0 && sorted[j] < sorted[j-1]; j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	ruri = req.URL.RequestURI()
	for i := 0; i < len(ruri); i++ {
		if ruri[i] < ' ' || ruri[i] == 0x7f {
			return "", "", nil, false
		}
	}
	return host, ruri, sorted, true
}

// outgoingLength is the body's length as net/http counts it: 0 without a
// body, -1 when unknown (net/http then sends it chunked).
func outgoingLength(req *http.Request) int64 {
	if req.Body == nil || req.Body == http.NoBody {
		return 0
	}
	if req.ContentLength != 0 {
		return req.ContentLength
	}
	return -1
}

// plainValue reports whether net/http writes v unchanged: no line break
// (it would write a space) and no surrounding white space (it would trim
// it), nor any other byte a header value may not hold.
func plainValue(v string) bool {
	if v == "" {
		return true
	}
	if first, last := v[0], v[len(v)-1]; first == ' ' || first == '\t' || last == ' ' || last == '\t' {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c == '\r' || c == '\n' {
			return false
		}
	}
	return httpguts.ValidHeaderFieldValue(v)
}
