package apptest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"
)

// Gateway is a ready relay setup: a channel to an upstream, a priced model,
// a funded user and an API key.
type Gateway struct {
	Env       *Env
	Root      *Client
	User      *Client
	UserID    int64
	Key       string // the full sk- key
	ChannelID int64
}

// GatewayConfig says what to set up; zero values take defaults.
type GatewayConfig struct {
	UpstreamURL  string // base URL of the channel (a fakeupstream server)
	UpstreamKey  string // default "upstream-key"
	ChannelType  int    // default 1 (OpenAI-compatible)
	Model        string // default "gpt-test"
	InputPrice   float64
	OutputPrice  float64 // default prices: 2 and 8 CNY per 1M tokens
	CachedPrice  float64
	Quota        int64 // the user's balance; default 10,000,000 (10 CNY)
	Username     string
	ModelMapping string
}

// NewGateway sets up a relay path through the management API, as an
// operator would.
func (e *Env) NewGateway(cfg GatewayConfig) *Gateway {
	e.t.Helper()
	if cfg.UpstreamKey == "" {
		cfg.UpstreamKey = "upstream-key"
	}
	if cfg.ChannelType == 0 {
		cfg.ChannelType = 1
	}
	if cfg.Model == "" {
		cfg.Model = "gpt-test"
	}
	if cfg.InputPrice == 0 && cfg.OutputPrice == 0 {
		cfg.InputPrice, cfg.OutputPrice = 2, 8
	}
	if cfg.Quota == 0 {
		cfg.Quota = 10_000_000
	}
	if cfg.Username == "" {
		cfg.Username = "caller"
	}
	g := &Gateway{Env: e, Root: e.Root()}
	var ch struct {
		ID int64 `json:"id"`
	}
	g.Root.OK("POST", "/api/channel/", map[string]any{"type": cfg.ChannelType, "name": "upstream", "key": cfg.UpstreamKey,
		"base_url": cfg.UpstreamURL, "models": cfg.Model, "group": "default", "model_mapping": cfg.ModelMapping}).Decode(e.t, &ch)
	g.ChannelID = ch.ID
	g.Root.Do("POST", "/api/model_price/", map[string]any{"model_name": cfg.Model,
		"input_price": cfg.InputPrice, "output_price": cfg.OutputPrice, "cached_price": cfg.CachedPrice})
	g.User, g.UserID = e.NewUser(cfg.Username, 1)
	g.Root.OK("POST", "/api/topup", map[string]any{"user_id": g.UserID, "quota": cfg.Quota})
	g.Key = g.User.CreateToken(map[string]any{"name": "relay", "unlimited_quota": true}).Key
	return g
}

// V1 is a raw /v1 answer.
type V1 struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v.
func (r *V1) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// Call sends a /v1 request with the key (when not empty) and returns the
// whole answer. body is marshalled unless it is a string or []byte.
func (e *Env) Call(key, method, path string, body any, header ...string) *V1 {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewReader([]byte(b))
	case []byte:
		rd = bytes.NewReader(b)
	default:
		buf, _ := json.Marshal(b)
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, e.Server.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return &V1{Status: resp.StatusCode, Header: resp.Header, Body: out}
}

// Quota is the user's balance, read after the ledger committed every
// pending settlement.
func (g *Gateway) Quota(userID int64) int64 {
	g.Env.t.Helper()
	g.Env.SettleAll()
	var u UserInfo
	g.Root.OK("GET", Path("/api/user/%d", userID), nil).Decode(g.Env.t, &u)
	return u.Quota
}

// SettleAll waits until every settlement queued so far is committed, on
// every running node of e's fleet (SecondNode) when it has one.
func (e *Env) SettleAll() {
	e.t.Helper()
	for _, n := range e.nodes() {
		if err := n.App.FlushBilling(5 * time.Second); err != nil {
			e.t.Fatalf("flush billing of %s: %v", n.URL(), err)
		}
	}
}
