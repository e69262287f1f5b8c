package fakecloud

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// AWSCredentials are the credentials a fake AWS service knows.
type AWSCredentials struct {
	AccessKeyID, SecretAccessKey, SessionToken string
}

// sigv4Failure is why a signature was refused, in AWS's own terms.
type sigv4Failure struct {
	exception, message string
}

// Messages of AWS's signature checks.
const (
	awsUnknownKey   = "The security token included in the request is invalid."
	awsBadSignature = "The request signature we calculated does not match the signature you provided. " +
		"Check your AWS Secret Access Key and signing method. Consult the service documentation for details."
	awsMissingAuth = "Missing Authentication Token"
)

// verifySigV4 recomputes a request's AWS Signature Version 4 from the
// spec (docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html),
// independently of the SDK that made it: the canonical request (method,
// the path as sent encoded once more, the sorted query, the signed headers,
// the body's SHA-256), the string to sign with the credential scope, and
// the HMAC chain from the secret. A request whose scope, clock, headers or
// body differ from what was signed is refused.
func verifySigV4(r *http.Request, body []byte, creds AWSCredentials, region, service string, now time.Time) *sigv4Failure {
	auth := r.Header.Get("Authorization")
	const algo = "AWS4-HMAC-SHA256 "
	if !strings.HasPrefix(auth, algo) {
		return &sigv4Failure{"MissingAuthenticationTokenException", awsMissingAuth}
	}
	fields := map[string]string{}
	for _, p := range strings.Split(auth[len(algo):], ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		fields[k] = v
	}
	scope := strings.Split(fields["Credential"], "/")
	if len(scope) != 5 || fields["SignedHeaders"] == "" || fields["Signature"] == "" {
		return &sigv4Failure{"IncompleteSignatureException", "Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters."}
	}
	if scope[0] != creds.AccessKeyID {
		return &sigv4Failure{"UnrecognizedClientException", awsUnknownKey}
	}
	if r.Header.Get("X-Amz-Security-Token") != creds.SessionToken {
		return &sigv4Failure{"UnrecognizedClientException", awsUnknownKey}
	}
	amzDate := r.Header.Get("X-Amz-Date")
	signedAt, err := time.Parse("20060102T150405Z", amzDate)
	if err != nil || scope[1] != amzDate[:8] {
		return &sigv4Failure{"IncompleteSignatureException", "Date must be in ISO-8601 'basic format' and match the credential scope."}
	}
	if d := now.Sub(signedAt); d > 5*time.Minute || d < -5*time.Minute {
		return &sigv4Failure{"InvalidSignatureException", fmt.Sprintf("Signature expired: %s is now earlier than %s", amzDate, now.Add(-5*time.Minute).UTC().Format("20060102T150405Z"))}
	}
	if scope[2] != region || scope[3] != service || scope[4] != "aws4_request" {
		return &sigv4Failure{"InvalidSignatureException", fmt.Sprintf("Credential should be scoped to a valid region and service '%s'.", service)}
	}
	signed := strings.Split(fields["SignedHeaders"], ";")
	if !slices.IsSorted(signed) || !slices.Contains(signed, "host") || !slices.Contains(signed, "x-amz-date") ||
		(creds.SessionToken != "" && !slices.Contains(signed, "x-amz-security-token")) {
		return &sigv4Failure{"InvalidSignatureException", "Signed headers must include host and x-amz-date (and x-amz-security-token)."}
	}
	var canonical strings.Builder
	canonical.WriteString(r.Method + "\n")
	canonical.WriteString(uriEncode(r.URL.EscapedPath(), false) + "\n")
	canonical.WriteString(canonicalQuery(r) + "\n")
	for _, h := range signed {
		v := r.Header.Values(h)
		if h == "host" {
			v = []string{r.Host}
		}
		for i := range v {
			v[i] = strings.Join(strings.Fields(v[i]), " ")
		}
		canonical.WriteString(h + ":" + strings.Join(v, ",") + "\n")
	}
	canonical.WriteString("\n" + fields["SignedHeaders"] + "\n")
	sum := sha256.Sum256(body)
	canonical.WriteString(hex.EncodeToString(sum[:]))

	hashed := sha256.Sum256([]byte(canonical.String()))
	credScope := strings.Join(scope[1:], "/")
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + credScope + "\n" + hex.EncodeToString(hashed[:])
	key := hmacSHA256([]byte("AWS4"+creds.SecretAccessKey), scope[1])
	for _, part := range scope[2:] {
		key = hmacSHA256(key, part)
	}
	want := hex.EncodeToString(hmacSHA256(key, toSign))
	if !hmac.Equal([]byte(want), []byte(fields["Signature"])) {
		return &sigv4Failure{"InvalidSignatureException", awsBadSignature}
	}
	return nil
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// uriEncode percent-encodes every byte but A-Z a-z 0-9 - _ . ~ (and "/"
// unless encodeSlash), upper-case hex, as SigV4 defines UriEncode. Applied
// to the path as sent, it encodes each escape once more, which is what
// every AWS service but S3 signs.
func uriEncode(s string, encodeSlash bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~':
			b.WriteByte(c)
		case c == '/' && !encodeSlash:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func canonicalQuery(r *http.Request) string {
	q := r.URL.Query()
	var pairs []string
	for k, vs := range q {
		for _, v := range vs {
			pairs = append(pairs, uriEncode(k, true)+"="+uriEncode(v, true))
		}
	}
	slices.Sort(pairs)
	return strings.Join(pairs, "&")
}
