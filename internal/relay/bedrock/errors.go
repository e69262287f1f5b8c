package bedrock

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/modelgate/modelgate/internal/relay/refusal"
)

// keyExceptions are the errors with which AWS refuses the credentials
// themselves, for every request: an unknown access key id, a signature the
// secret does not reproduce, an expired session token, a disabled or
// unpermitted identity.
var keyExceptions = map[string]bool{
	"unrecognizedclientexception":         true,
	"invalidsignatureexception":           true,
	"incompletesignatureexception":        true,
	"missingauthenticationtokenexception": true,
	"expiredtokenexception":               true,
	"invalidclienttokenid":                true,
	"signaturedoesnotmatch":               true,
	"accessdeniedexception":               true,
}

// throttleExceptions are rate and quota limits of the account: the key
// cools down, another may serve.
var throttleExceptions = map[string]bool{
	"throttlingexception":           true,
	"servicequotaexceededexception": true,
	"toomanyrequestsexception":      true,
}

// upstreamExceptions are failures of the service or the model.
var upstreamExceptions = map[string]bool{
	"internalserverexception":     true,
	"serviceunavailableexception": true,
	"modeltimeoutexception":       true,
	"modelnotreadyexception":      true,
	"modelerrorexception":         true,
	"modelstreamerrorexception":   true,
}

// Classify says what a Bedrock error answer means. The exception name comes
// from the x-amzn-ErrorType header (or the body's __type); the status
// decides for names it does not know.
func Classify(status int, header http.Header, body []byte) *refusal.Error {
	name := header.Get("X-Amzn-Errortype")
	return classifyException(name, status, body)
}

// classifyException classifies an exception by name, as a header or an
// event-stream frame names it ("ThrottlingException:http://…" or
// "throttlingException").
func classifyException(name string, status int, body []byte) *refusal.Error {
	var b struct {
		Message  string `json:"message"`
		Message2 string `json:"Message"`
		Type     string `json:"__type"`
	}
	_ = json.Unmarshal(body, &b)
	if name == "" {
		name = b.Type
	}
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	if i := strings.LastIndexByte(name, '#'); i >= 0 {
		name = name[i+1:]
	}
	msg := b.Message
	if msg == "" {
		msg = b.Message2
	}
	e := &refusal.Error{Status: status, Code: name, Message: msg}
	lower := strings.ToLower(name)
	switch {
	case lower == "accessdeniedexception" && modelAccessDenied(msg):
		// Model access is granted per model and region: other models of
		// the same key still work.
		e.Kind = refusal.Request
	case keyExceptions[lower]:
		e.Kind = refusal.Key
	case throttleExceptions[lower]:
		e.Kind = refusal.Throttled
	case upstreamExceptions[lower]:
		e.Kind = refusal.Upstream
	case name != "":
		// ValidationException, ResourceNotFoundException and other modeled
		// client errors.
		e.Kind = refusal.Request
		if status >= 500 {
			e.Kind = refusal.Upstream
		}
	default:
		e.Kind = byStatus(status)
	}
	return e
}

// modelAccessDenied recognises the AccessDeniedException of a model whose
// access was not requested in the Bedrock console, which concerns that
// model only.
func modelAccessDenied(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "access to the model") || strings.Contains(m, "model access")
}

func byStatus(status int) refusal.Kind {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return refusal.Key
	case status == http.StatusTooManyRequests:
		return refusal.Throttled
	case status >= 400 && status < 500:
		return refusal.Request
	}
	return refusal.Upstream
}
