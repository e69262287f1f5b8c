package apptest

import (
	"net/url"
	"testing"
)

// LogInfo is a log record as /api/log/ shows it.
type LogInfo struct {
	ID                 int64  `json:"id"`
	UserID             int64  `json:"user_id"`
	CreatedAt          int64  `json:"created_at"`
	Type               int    `json:"type"`
	Content            string `json:"content"`
	Username           string `json:"username"`
	TokenName          string `json:"token_name"`
	ModelName          string `json:"model_name"`
	Group              string `json:"group"`
	Quota              int64  `json:"quota"`
	PromptTokens       int64  `json:"prompt_tokens"`
	CompletionTokens   int64  `json:"completion_tokens"`
	CachedTokens       int64  `json:"cached_tokens"`
	CacheWriteTokens   int64  `json:"cache_write_tokens"`
	CacheWrite1hTokens int64  `json:"cache_write_1h_tokens"`
	ChannelID          int64  `json:"channel_id"`
	RequestID          string `json:"request_id"`
	ElapsedTime        int64  `json:"elapsed_time"`
	IsStream           bool   `json:"is_stream"`
	BillingSource      int    `json:"billing_source"`
	PlanID             int64  `json:"plan_id"`
	SessionKey         string `json:"session_key"`
}

// Accounts are the figures billing moves, read after every pending
// settlement was committed: the user's balance and the used quota of the
// user, of the gateway's key and of its channel.
type Accounts struct {
	Quota       int64
	UserUsed    int64
	TokenUsed   int64
	ChannelUsed int64
}

// Accounts reads the gateway's accounts through the management API: the
// user as root, the key as its owner, the channel as root.
func (g *Gateway) Accounts() Accounts {
	t := g.Env.t
	t.Helper()
	g.Env.SettleAll()
	var u struct {
		Quota     int64 `json:"quota"`
		UsedQuota int64 `json:"used_quota"`
	}
	g.Root.OK("GET", Path("/api/user/%d", g.UserID), nil).Decode(t, &u)
	var tok TokenInfo
	g.User.OK("GET", Path("/api/token/%d", g.TokenID()), nil).Decode(t, &tok)
	var ch struct {
		UsedQuota int64 `json:"used_quota"`
	}
	g.Root.OK("GET", Path("/api/channel/%d", g.ChannelID), nil).Decode(t, &ch)
	return Accounts{Quota: u.Quota, UserUsed: u.UsedQuota, TokenUsed: tok.UsedQuota, ChannelUsed: ch.UsedQuota}
}

// TokenID is the id of the gateway's key (the user's key named "relay").
func (g *Gateway) TokenID() int64 {
	t := g.Env.t
	t.Helper()
	var toks []TokenInfo
	g.User.OK("GET", "/api/token/?page_size=100", nil).Decode(t, &toks)
	for _, tok := range toks {
		if tok.Name == "relay" {
			return tok.ID
		}
	}
	t.Fatalf("the gateway's key is not among the user's keys: %+v", toks)
	return 0
}

// ConsumeLogs returns the consume logs (type 2) of the gateway's user,
// newest first, read after every pending settlement was committed.
func (g *Gateway) ConsumeLogs() []LogInfo {
	t := g.Env.t
	t.Helper()
	g.Env.SettleAll()
	var u struct {
		Username string `json:"username"`
	}
	g.Root.OK("GET", Path("/api/user/%d", g.UserID), nil).Decode(t, &u)
	var all []LogInfo
	for p := 0; ; p++ {
		var page []LogInfo
		q := url.Values{"type": {"2"}, "username": {u.Username}, "page_size": {"100"}, "p": {Path("%d", p)}}
		r := g.Root.OK("GET", "/api/log/?"+q.Encode(), nil)
		r.Decode(t, &page)
		all = append(all, page...)
		if len(page) == 0 || int64(len(all)) >= r.Total {
			return all
		}
	}
}

// SumQuota is the total quota of logs.
func SumQuota(logs []LogInfo) int64 {
	var sum int64
	for _, l := range logs {
		sum += l.Quota
	}
	return sum
}

// ModelPriceID is the id of the model price of model, failing t when there
// is none.
func (g *Gateway) ModelPriceID(t testing.TB, model string) int64 {
	t.Helper()
	var prices []struct {
		ID        int64  `json:"id"`
		ModelName string `json:"model_name"`
	}
	g.Root.OK("GET", "/api/model_price/?page_size=100", nil).Decode(t, &prices)
	for _, p := range prices {
		if p.ModelName == model {
			return p.ID
		}
	}
	t.Fatalf("no model price for %s", model)
	return 0
}
