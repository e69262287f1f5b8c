// Package refusal names what an upstream's error answer means for the
// gateway, so each provider package can classify its own error shapes and
// the relay acts on one vocabulary: take the key out, cool it down, blame
// the request, or count a failure of the upstream.
package refusal

import "fmt"

// Kind is what an error answer says about whom to blame.
type Kind int

const (
	// Upstream is a failure of the provider (5xx, timeouts, a broken
	// stream): retry elsewhere, and count it toward the channel's breaker.
	Upstream Kind = iota
	// Key means the credential is refused for good (invalid, unknown,
	// expired, wrong signature, denied): take the key out of the pool.
	Key
	// Throttled is a rate or quota limit of the credential: cool the key
	// down and try another.
	Throttled
	// Request means this request is at fault (bad field, unknown model or
	// deployment, content refusal): answer the client, blame nobody.
	Request
)

func (k Kind) String() string {
	switch k {
	case Key:
		return "key"
	case Throttled:
		return "throttled"
	case Request:
		return "request"
	}
	return "upstream"
}

// Error is a classified error answer of an upstream.
type Error struct {
	Kind Kind
	// Status is the HTTP status the provider answered (0 for an error that
	// arrived inside a stream or before any answer).
	Status int
	// Code is the provider's own error name (Bedrock's exception type,
	// Google's status, Azure's code, an OAuth error).
	Code string
	// Message is the provider's message, for logs and the admin's view.
	Message string
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("upstream refused (%s, %d %s): %s", e.Kind, e.Status, e.Code, e.Message)
	}
	return fmt.Sprintf("upstream refused (%s, %s): %s", e.Kind, e.Code, e.Message)
}
