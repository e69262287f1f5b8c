// Package bedrock speaks to AWS Bedrock Runtime (channel type 33, one-api's
// number): it parses a channel key into AWS credentials, signs requests
// with the AWS SDK's SigV4 signer, turns an Anthropic Messages body into
// Bedrock's InvokeModel body, decodes the AWS event stream of streamed
// answers, converts OpenAI chat to and from the Converse API for models
// that are not Claude, and classifies Bedrock's error answers.
package bedrock

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/smithy-go/encoding/httpbinding"
)

// ChannelType is the channel type of AWS Bedrock, as one-api and new-api
// number it.
const ChannelType = 33

// SigningService is the SigV4 service name of Bedrock Runtime (the host is
// bedrock-runtime, the signing name is bedrock).
const SigningService = "bedrock"

// Operation is a Bedrock Runtime call on a model.
type Operation int

const (
	Invoke Operation = iota
	InvokeStream
	Converse
	ConverseStream
)

var operationPath = map[Operation]string{
	Invoke:         "invoke",
	InvokeStream:   "invoke-with-response-stream",
	Converse:       "converse",
	ConverseStream: "converse-stream",
}

// Streams reports whether the operation answers with an AWS event stream.
func (o Operation) Streams() bool { return o == InvokeStream || o == ConverseStream }

// DefaultBaseURL is the regional endpoint a channel without base_url uses.
func DefaultBaseURL(region string) string {
	return "https://bedrock-runtime." + region + ".amazonaws.com"
}

// Channel is a Bedrock endpoint with the credentials that sign for it.
type Channel struct {
	base   *url.URL
	creds  Credentials
	signer *v4.Signer
	// Now is the signing clock; nil means time.Now. Tests set it to check
	// that a stale signature is refused.
	Now func() time.Time
}

// New validates a channel's fields: base_url (optional, an https endpoint
// such as a VPC endpoint; default DefaultBaseURL of the key's region) and
// key (ParseKey).
func New(baseURL, key string) (*Channel, error) {
	creds, err := ParseKey(key)
	if err != nil {
		return nil, err
	}
	raw := strings.TrimSpace(baseURL)
	if raw == "" {
		raw = DefaultBaseURL(creds.Region)
	}
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("bedrock base_url %q: want an endpoint like %s", baseURL, DefaultBaseURL("us-east-1"))
	}
	return &Channel{base: u, creds: creds, signer: v4.NewSigner()}, nil
}

// Region returns the region the channel signs for.
func (c *Channel) Region() string { return c.creds.Region }

// Path returns the escaped path of an operation on a model: the model id
// (or inference profile id, or ARN) is one path segment in which every
// character but letters, digits and -_.~ is percent-encoded, as the AWS SDK
// sends it (":" of "…-v1:0" becomes %3A, "/" of an ARN %2F).
func Path(op Operation, modelID string) (string, error) {
	s, ok := operationPath[op]
	if !ok {
		return "", fmt.Errorf("bedrock: unknown operation %d", op)
	}
	if modelID == "" {
		return "", fmt.Errorf("bedrock: empty model id")
	}
	return "/model/" + httpbinding.EscapePath(modelID, true) + "/" + s, nil
}

// NewRequest builds and signs the POST of an operation on a model. The body
// is sent as given: the caller builds it with MessagesBody (Claude through
// Invoke) or ConverseRequest.
func (c *Channel) NewRequest(ctx context.Context, op Operation, modelID string, body []byte) (*http.Request, error) {
	u, err := c.URL(op, modelID)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("bedrock request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if op.Streams() {
		req.Header.Set("Accept", "application/vnd.amazon.eventstream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	if err := c.sign(ctx, req, body); err != nil {
		return nil, err
	}
	return req, nil
}

// URL is the endpoint of an operation on a model (Path under the base URL).
func (c *Channel) URL(op Operation, modelID string) (string, error) {
	escaped, err := Path(op, modelID)
	if err != nil {
		return "", err
	}
	u := *c.base
	u.RawPath = strings.TrimRight(c.base.EscapedPath(), "/") + escaped
	u.Path, err = url.PathUnescape(u.RawPath)
	if err != nil {
		return "", fmt.Errorf("bedrock path: %w", err)
	}
	return u.String(), nil
}

// sign adds X-Amz-Date, the session token when there is one, and the SigV4
// Authorization header; the payload hash is part of the signature, so a
// changed body is refused.
func (c *Channel) sign(ctx context.Context, req *http.Request, body []byte) error {
	return c.signWith(ctx, req, body, c.creds)
}

// signWith signs as sign does with creds of c's region (a key pool's
// other keys).
func (c *Channel) signWith(ctx context.Context, req *http.Request, body []byte, key Credentials) error {
	sum := sha256.Sum256(body)
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	creds := aws.Credentials{
		AccessKeyID:     key.AccessKeyID,
		SecretAccessKey: key.SecretAccessKey,
		SessionToken:    key.SessionToken,
	}
	if err := c.signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), SigningService, c.creds.Region, now()); err != nil {
		return fmt.Errorf("bedrock sign: %w", err)
	}
	return nil
}
