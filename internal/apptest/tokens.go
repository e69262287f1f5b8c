package apptest

import (
	"context"

	"github.com/modelgate/modelgate/internal/store"
)

// TokenInfo is an API key as /api/token/ shows it.
type TokenInfo struct {
	ID             int64  `json:"id"`
	UserID         int64  `json:"user_id"`
	Name           string `json:"name"`
	Key            string `json:"key"` // full only in the create response
	Status         int    `json:"status"`
	CreatedTime    int64  `json:"created_time"`
	AccessedTime   int64  `json:"accessed_time"`
	ExpiredTime    int64  `json:"expired_time"`
	RemainQuota    int64  `json:"remain_quota"`
	UnlimitedQuota bool   `json:"unlimited_quota"`
	UsedQuota      int64  `json:"used_quota"`
	Models         string `json:"models"`
	Subnet         string `json:"subnet"`
	// Rate limits; 0 = none.
	RPMLimit         int64 `json:"rpm_limit"`
	TPMLimit         int64 `json:"tpm_limit"`
	ConcurrencyLimit int64 `json:"concurrency_limit"`
}

// CreateToken creates an API key for the client's user with the fields in
// body (name at least) and returns it, full key included.
func (c *Client) CreateToken(body map[string]any) TokenInfo {
	c.t.Helper()
	var tok TokenInfo
	c.OK("POST", "/api/token/", body).Decode(c.t, &tok)
	return tok
}

// SetToken writes p to a stored key directly, as the relay or the passing of
// time would: an exhausted status, an expiry in the past.
func (e *Env) SetToken(userID, id int64, p store.TokenPatch) {
	e.t.Helper()
	_, err := e.App.Store.UpdateToken(context.Background(), userID, id, func(store.Token) (store.TokenPatch, error) { return p, nil })
	if err != nil {
		e.t.Fatalf("set token %d: %v", id, err)
	}
}
