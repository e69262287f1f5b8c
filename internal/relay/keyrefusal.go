package relay

import (
	"net/http"

	"github.com/modelgate/modelgate/internal/relay/dialect"
)

// maxRefusalBody bounds what is read of a 400/403 answer to decide whether
// it refused the channel's key: the error envelopes are small.
const maxRefusalBody = 64 << 10

// keyRefused reports whether an upstream answer means the channel's key (or
// its account) is unusable for everyone, so the channel must be disabled.
// A 401 always does. Another status does only when dialect d says it may
// (a 403; Gemini's 400 too) and its error body carries the provider's
// invalid-key or account code (docs/decisions/channels.md); any other 403
// — a content refusal, a model the key may not use — concerns this request
// only.
func keyRefused(d dialect.Dialect, status int, body []byte) bool {
	if status == http.StatusUnauthorized {
		return true
	}
	return d.MayRefuseKey(status) && d.KeyRefused(status, body)
}
