package peer

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
)

// Headers that prove which node sent a request (docs/cluster.md,
// Security). The spec's X-Cluster-Secret is the receiver's own secret, which
// every peer knows; these prove the sender with a key only it and the
// receiver hold: the secret the receiver's node table stores for it.
const (
	// NodeHeader carries the sender's node id.
	NodeHeader = "X-Cluster-Node"
	// TimestampHeader carries the sender's clock in unix seconds.
	TimestampHeader = "X-Cluster-Timestamp"
	// SignatureHeader carries Sign's lowercase hex HMAC-SHA256.
	SignatureHeader = "X-Cluster-Signature"
	// JoinTokenHeader carries the single-use token of a snapshot pull.
	JoinTokenHeader = "X-Cluster-Join-Token"
)

// MaxSkew is how far a request's timestamp may be from the receiver's
// clock: a recorded request cannot be replayed later than this.
const MaxSkew = 300 * time.Second

// Sign is the signature of a request: the lowercase hex HMAC-SHA256, keyed
// with the sender's own secret, of the timestamp, the endpoint path
// (without the address's base path or a query) and the raw body, joined
// by newlines.
func Sign(secret string, ts int64, path string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(ts, 10)))
	mac.Write([]byte{'\n'})
	mac.Write([]byte(path))
	mac.Write([]byte{'\n'})
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// Verify reports whether sig is Sign's signature of the request under
// secret, comparing in constant time. No secret or no signature never
// verifies.
func Verify(secret string, ts int64, path string, body []byte, sig string) bool {
	if secret == "" || sig == "" {
		return false
	}
	want := Sign(secret, ts, path, body)
	return hmac.Equal([]byte(want), []byte(sig))
}

// Fresh reports whether timestamp ts is within MaxSkew of now, either way.
func Fresh(ts int64, now time.Time) bool {
	d := now.Unix() - ts
	return d <= int64(MaxSkew/time.Second) && d >= -int64(MaxSkew/time.Second)
}

// ParseTimestamp reads a TimestampHeader value: decimal unix seconds.
func ParseTimestamp(v string) (int64, bool) {
	ts, err := strconv.ParseInt(v, 10, 64)
	return ts, err == nil && ts > 0
}
