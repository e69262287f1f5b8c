// Package peer is how a node calls another node's internal endpoints
// (ping, sync, snapshot, the owner's credits): a POST carrying the
// target's CLUSTER_SECRET in X-Cluster-Secret (spec, Cluster rule 2) and
// signed with the caller's own secret (Sign), redirects refused, the
// answer read up to a bound and taken as the /api envelope.
package peer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// SecretHeader carries the target node's secret.
const SecretHeader = "X-Cluster-Secret"

// NewClient is an HTTP client for calls to peers with timeout. It never
// follows a redirect: the secret header would go wherever it points (only
// Authorization and cookies are dropped across hosts), so a redirect is a
// failed call.
func NewClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Self is the calling node: its id and the secrets it signs with.
type Self struct {
	NodeID int
	// Secret is CLUSTER_SECRET, which every peer should store for this node.
	Secret string
	// PreviousSecret is CLUSTER_PREVIOUS_SECRET during a rotation: a call
	// a peer refuses (HTTP 401) is sent once more signed with it, since
	// that peer still stores the old value; the ping so signed then
	// teaches it the new one (docs/cluster.md, Security).
	PreviousSecret string
}

// Target is the peer called: its base address and the secret this node's
// table stores for it.
type Target struct {
	Address string
	Secret  string
}

// Caller calls peers as Self through Client (NewClient).
type Caller struct {
	Client *http.Client
	Self   Self
	// Now is the clock of the timestamps; nil is time.Now.
	Now func() time.Time
}

// Post sends body to the endpoint path of to, with to's secret and signed
// as c.Self, with header's values added. A 401 answer when c.Self has a
// previous secret is tried once more signed with it. The caller closes the
// answer's body.
func (c Caller) Post(ctx context.Context, to Target, path string, body []byte, header http.Header) (*http.Response, error) {
	resp, err := c.post(ctx, to, path, body, header, c.Self.Secret)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || c.Self.PreviousSecret == "" {
		return resp, err
	}
	resp.Body.Close()
	return c.post(ctx, to, path, body, header, c.Self.PreviousSecret)
}

func (c Caller) post(ctx context.Context, to Target, path string, body []byte, header http.Header, key string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(to.Address, "/")+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("bad address: %w", err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	ts := now().Unix()
	req.Header.Set(SecretHeader, to.Secret)
	req.Header.Set(NodeHeader, strconv.Itoa(c.Self.NodeID))
	req.Header.Set(TimestampHeader, strconv.FormatInt(ts, 10))
	req.Header.Set(SignatureHeader, Sign(key, ts, path, body))
	return c.Client.Do(req)
}

// envelope is a peer's /api answer.
type envelope struct {
	Success bool            `json:"success"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// Refusal is a peer's answer success: false: its message, and the data it
// sent with it (null when none), which tells a caller what to do next
// (a sync refusal's expected_id).
type Refusal struct {
	Message string
	Data    json.RawMessage
}

func (e *Refusal) Error() string { return fmt.Sprintf("refused: %q", truncate(e.Message, 200)) }

// Call posts body as JSON to the endpoint path of to and decodes the data
// of the peer's success answer into out (nil: not read), reading at most
// maxAnswer bytes. Anything else is an error naming what went wrong,
// never the secret: the connection, an answer too large, an HTTP status
// other than 200, not the envelope, or the peer's refusal (a *Refusal).
func (c Caller) Call(ctx context.Context, to Target, path string, body any, maxAnswer int64, out any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	resp, err := c.Post(ctx, to, path, raw, http.Header{"Content-Type": {"application/json"}})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	ans, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	switch {
	case err != nil:
		return fmt.Errorf("read answer: %w", err)
	case int64(len(ans)) > maxAnswer:
		return fmt.Errorf("answer larger than %d bytes", maxAnswer)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("answered HTTP %d", resp.StatusCode)
	}
	var env envelope
	if err := json.Unmarshal(ans, &env); err != nil {
		return fmt.Errorf("answer is not the JSON envelope: %w", err)
	}
	if !env.Success {
		return &Refusal{Message: env.Message, Data: env.Data}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		return fmt.Errorf("answer data: %w", err)
	}
	return nil
}

// truncate bounds a peer's message kept in an error.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
