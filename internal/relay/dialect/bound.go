package dialect

import (
	"errors"
	"io"
	"net/http"

	"github.com/modelgate/modelgate/internal/relay/openai"
)

// Binder is implemented by a dialect whose requests depend on a channel's
// own fields beyond its base URL and key: Azure's api-version (the
// channel's "other"), Bedrock's region and signing credentials (parts of
// its key), Vertex's project, region and token source. The relay calls Bind
// once per channel when the routing catalog is built, and uses the returned
// dialect (with its optional capabilities) for that channel; the registered
// value itself serves no call. A Bind error (fields stored before they
// were validated) makes the channel Unusable.
type Binder interface {
	Bind(baseURL, key, other string) (Dialect, error)
}

// Framed is implemented by a dialect native to an ingress API (Native) for
// some of its models only, and with its own body and stream framing there:
// Claude on Bedrock (invoke: no "model" nor "stream" in the body, an AWS
// event stream back) and on Vertex (rawPredict). The relay passes a call of
// that API through only for a model NativeModel accepts (others are
// converted), rewrites its body with PassthroughBody after its own changes
// (model mapped, completion limit), and reads a 200 stream through SSE.
type Framed interface {
	// NativeModel reports whether the upstream model is served in the
	// Native API.
	NativeModel(model string) bool
	// PassthroughBody is the upstream body of a native call whose ingress
	// body (already mapped and limited) is body; header is the client's.
	PassthroughBody(body []byte, header http.Header, stream bool) ([]byte, error)
	// SSE turns a streamed 200 answer into the Native API's server-sent
	// events; a stream that breaks is a Read error.
	SSE(body io.Reader) io.Reader
}

// Unusable is the dialect of a channel whose fields a Binder refused: its
// calls fail as the channel's failure (Authorize returns Err), so another
// channel serves them, and its channel test shows Err.
type Unusable struct{ Err error }

var errUnusable = errors.New("channel unusable")

func (u Unusable) err() error {
	if u.Err == nil {
		return errUnusable
	}
	return u.Err
}

func (u Unusable) Authorize(*http.Request, string, []byte) error { return u.err() }
func (u Unusable) ChatRequest(string, *openai.ChatRequest, string) (string, []byte, error) {
	return "http://invalid.invalid/", []byte("{}"), nil // Authorize refuses it before it leaves
}
func (u Unusable) DecodeChat([]byte, string, string, int64) (*openai.ChatResponse, openai.Usage, error) {
	return nil, openai.Usage{}, u.err()
}
func (u Unusable) ChatStream(io.Reader, string, string, int64) openai.ChunkSource {
	return openai.Dialect{}.ChatStream(eofReader{}, "", "", 0)
}
func (Unusable) MayRefuseKey(int) bool       { return false }
func (Unusable) KeyRefused(int, []byte) bool { return false }

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

var _ Dialect = Unusable{}
