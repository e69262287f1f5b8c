package apptest

import (
	"encoding/json"
	"net/http"
)

// ChannelSpec is a channel a routing test adds next to the gateway's first
// one; zero values take defaults.
type ChannelSpec struct {
	URL          string // base URL (a fakeupstream server)
	Key          string // default "upstream-key"
	Type         int    // default 1 (OpenAI-compatible)
	Name         string // default "extra"
	Models       string // default "gpt-test"
	Group        string // default "default"
	Priority     int64
	Weight       *int64 // nil: the API's default weight
	ModelMapping string
}

// AddChannel creates a channel through POST /api/channel/ as root and
// returns its id.
func (g *Gateway) AddChannel(s ChannelSpec) int64 {
	g.Env.t.Helper()
	body := map[string]any{
		"type": orInt(s.Type, 1), "name": orString(s.Name, "extra"), "key": orString(s.Key, "upstream-key"),
		"base_url": s.URL, "models": orString(s.Models, "gpt-test"), "group": orString(s.Group, "default"),
		"priority": s.Priority, "model_mapping": s.ModelMapping,
	}
	if s.Weight != nil {
		body["weight"] = *s.Weight
	}
	var ch struct {
		ID int64 `json:"id"`
	}
	g.Root.OK("POST", "/api/channel/", body).Decode(g.Env.t, &ch)
	return ch.ID
}

// UpdateChannel changes fields of a channel through PUT /api/channel/.
func (g *Gateway) UpdateChannel(id int64, fields map[string]any) {
	g.Env.t.Helper()
	body := map[string]any{"id": id}
	for k, v := range fields {
		body[k] = v
	}
	g.Root.OK("PUT", "/api/channel/", body)
}

// ChannelState is the part of GET /api/channel/:id routing tests read.
type ChannelState struct {
	ID        int64  `json:"id"`
	Status    int    `json:"status"`
	LastError string `json:"last_error"`
	Priority  int64  `json:"priority"`
	Weight    int64  `json:"weight"`
	UsedQuota int64  `json:"used_quota"`
}

// ChannelState reads a channel as an admin sees it.
func (g *Gateway) ChannelState(id int64) ChannelState {
	g.Env.t.Helper()
	var c ChannelState
	g.Root.OK("GET", Path("/api/channel/%d", id), nil).Decode(g.Env.t, &c)
	return c
}

// SetOption sets a system option through PUT /api/option/ as root.
func (g *Gateway) SetOption(key, value string) {
	g.Env.t.Helper()
	g.Root.OK("PUT", "/api/option/", map[string]string{"key": key, "value": value})
}

// AllConsumeLogs returns the consume logs (type 2) of every user, newest
// first, after every pending settlement was committed.
func (g *Gateway) AllConsumeLogs() []LogInfo {
	g.Env.t.Helper()
	g.Env.SettleAll()
	var logs []LogInfo
	r := g.Root.OK("GET", "/api/log/?type=2&page_size=100", nil)
	if err := json.Unmarshal(r.Data, &logs); err != nil {
		g.Env.t.Fatalf("decode logs %s: %v", r.Data, err)
	}
	return logs
}

// Pinned is the gateway's key pinned to a channel (an admin's feature).
func (g *Gateway) Pinned(channelID int64) string {
	return g.Key + "-" + itoa(channelID)
}

// Post sends a /v1 request with a raw body and content type, for multipart
// uploads that Env.Call would mark as JSON.
func (e *Env) Post(key, path, contentType string, body []byte) *V1 {
	e.t.Helper()
	return e.Call(key, http.MethodPost, path, body, "Content-Type", contentType)
}

func orInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func orString(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func itoa(n int64) string { return Path("%d", n) }
