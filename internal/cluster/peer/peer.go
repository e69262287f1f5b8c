// Package peer is how a node calls another node's internal endpoints
// (ping, sync, the owner's credits): a JSON POST carrying the target's
// CLUSTER_SECRET in X-Cluster-Secret (spec, Cluster rule 2), redirects
// refused, the answer read up to a bound and taken as the /api envelope.
package peer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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

// Call posts body as JSON to url with secret and decodes the data of the
// peer's success answer into out (nil: not read), reading at most
// maxAnswer bytes. Anything else is an error naming what went wrong,
// never the secret: the connection, an answer too large, an HTTP status
// other than 200, not the envelope, or the peer's refusal (a *Refusal).
func Call(ctx context.Context, client *http.Client, url, secret string, body any, maxAnswer int64, out any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("bad address: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(SecretHeader, secret)
	resp, err := client.Do(req)
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
