package api

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/modelgate/modelgate/internal/channel"
	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/store"
)

// Messages of the channel endpoints.
const (
	MsgChannelNotFound = "渠道不存在"
	// MsgChannelTestFailed prefixes the transport error of a failed test.
	MsgChannelTestFailed = "渠道测试失败: "
	// MsgChannelKeyNotFound refuses a key index outside the channel's pool.
	MsgChannelKeyNotFound = "渠道没有这个序号的密钥"
	// msgKeyTestFmt prefixes a failed test of one key of a pool.
	msgKeyTestFmt = "密钥 [%d]: %s"
)

// channelView is a channel as shown to admins. The key is write-only: only
// whether one is set is shown, how many keys its pool holds, and which are
// retired (by index, never the key).
type channelView struct {
	ID           int64  `json:"id"`
	Type         int    `json:"type"`
	Name         string `json:"name"`
	HasKey       bool   `json:"has_key"`
	BaseURL      string `json:"base_url"`
	Models       string `json:"models"`
	Group        string `json:"group"`
	Priority     int64  `json:"priority"`
	Weight       int64  `json:"weight"`
	ModelMapping string `json:"model_mapping"`
	Setting      string `json:"setting"`
	Other        string `json:"other"`
	Status       int    `json:"status"`
	CreatedTime  int64  `json:"created_time"`
	TestTime     int64  `json:"test_time"`
	ResponseTime int64  `json:"response_time"` // ms
	UsedQuota    int64  `json:"used_quota"`
	LastError    string `json:"last_error"`
	KeyCount     int    `json:"key_count"`
	// DisabledKeys are the keys of the pool retired after a refusal.
	DisabledKeys []disabledKeyView `json:"disabled_keys"`
}

// disabledKeyView is a retired key of a pool: its 0-based index in the
// key text, the upstream's refusal and when (unix seconds).
type disabledKeyView struct {
	Index  int    `json:"index"`
	Reason string `json:"reason"`
	Time   int64  `json:"time"`
}

func viewChannel(c *store.Channel) channelView {
	pool := channel.Pool(c.Key, c.DisabledKeys)
	disabled := []disabledKeyView{}
	for _, k := range pool {
		if k.Disabled != nil {
			disabled = append(disabled, disabledKeyView{Index: k.Index, Reason: k.Disabled.Reason, Time: k.Disabled.Time})
		}
	}
	return channelView{KeyCount: len(pool), DisabledKeys: disabled,
		ID: c.ID, Type: c.Type, Name: c.Name, HasKey: c.Key != "", BaseURL: c.BaseURL, Models: c.Models,
		Group: c.Groups, Priority: c.Priority, Weight: c.Weight, ModelMapping: c.ModelMapping, Setting: c.Setting, Other: c.Other,
		Status: c.Status, CreatedTime: c.CreatedTime, TestTime: c.TestTime, ResponseTime: c.ResponseTime, UsedQuota: c.UsedQuota,
		LastError: c.LastError,
	}
}

func (s *Server) listChannels(w http.ResponseWriter, r *http.Request) error {
	return s.writeChannels(w, r, "")
}

func (s *Server) searchChannels(w http.ResponseWriter, r *http.Request) error {
	keyword, err := searchKeyword(r)
	if err != nil {
		return err
	}
	return s.writeChannels(w, r, keyword)
}

func (s *Server) writeChannels(w http.ResponseWriter, r *http.Request, keyword string) error {
	pg, err := page(r)
	if err != nil {
		return err
	}
	channels, total, err := s.Store.ListChannels(r.Context(), keyword, pg)
	if err != nil {
		return err
	}
	views := make([]channelView, len(channels))
	for i := range channels {
		views[i] = viewChannel(&channels[i])
	}
	return httpx.OKList(w, views, total)
}

// channelModels lists every model some channel serves, enabled or not.
func (s *Server) channelModels(w http.ResponseWriter, r *http.Request) error {
	models, err := s.Store.ChannelModels(r.Context())
	if err != nil {
		return err
	}
	return httpx.OK(w, models)
}

// channelByID loads a channel; an unknown id is a client error.
func (s *Server) channelByID(r *http.Request, id int64) (store.Channel, error) {
	c, err := s.Store.ChannelByID(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return c, httpx.Fail(MsgChannelNotFound)
	}
	return c, err
}

func (s *Server) getChannel(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r)
	if err != nil {
		return err
	}
	c, err := s.channelByID(r, id)
	if err != nil {
		return err
	}
	return httpx.OK(w, viewChannel(&c))
}

type createChannelRequest struct {
	Type         *int   `json:"type"` // default 1
	Name         string `json:"name"`
	Key          string `json:"key"`
	BaseURL      string `json:"base_url"`
	Models       string `json:"models"`
	Group        string `json:"group"`
	Priority     int64  `json:"priority"`
	Weight       *int64 `json:"weight"` // default 1; 0 is allowed
	ModelMapping string `json:"model_mapping"`
	Setting      string `json:"setting"` // JSON object; responses_api (docs/api.md)
	Other        string `json:"other"`
	Status       *int   `json:"status"` // default 1
}

// createChannel adds a channel and its abilities.
func (s *Server) createChannel(w http.ResponseWriter, r *http.Request) error {
	var req createChannelRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	f := channel.Fields{
		Type: channel.TypeOpenAI, Name: req.Name, BaseURL: req.BaseURL, Models: req.Models, Groups: req.Group,
		Priority: req.Priority, Weight: channel.DefaultWeight, ModelMapping: req.ModelMapping, Setting: req.Setting, Other: req.Other,
		Status: channel.StatusEnabled,
	}
	setIfSent(&f.Type, req.Type)
	setIfSent(&f.Weight, req.Weight)
	setIfSent(&f.Status, req.Status)
	key, keyMsg := channel.NormalizeKey(req.Key)
	if msg := firstProblem(f.Normalize(), keyMsg); msg != "" {
		return httpx.Fail(msg)
	}
	if msg := channel.CheckKey(f.Type, key); msg != "" {
		return httpx.Fail(msg)
	}
	c := store.Channel{
		Type: f.Type, Name: f.Name, Key: key, BaseURL: f.BaseURL, Models: f.Models,
		Groups: f.Groups, Priority: f.Priority, Weight: f.Weight, ModelMapping: f.ModelMapping, Setting: f.Setting, Other: f.Other,
		Status: f.Status,
	}
	if err := s.Store.CreateChannel(r.Context(), &c); err != nil {
		return err
	}
	return httpx.OK(w, viewChannel(&c))
}

type updateChannelRequest struct {
	ID           int64   `json:"id"`
	Type         *int    `json:"type"`
	Name         *string `json:"name"`
	Key          *string `json:"key"` // empty or absent: unchanged
	BaseURL      *string `json:"base_url"`
	Models       *string `json:"models"`
	Group        *string `json:"group"`
	Priority     *int64  `json:"priority"`
	Weight       *int64  `json:"weight"`
	ModelMapping *string `json:"model_mapping"`
	Setting      *string `json:"setting"`
	Other        *string `json:"other"`
	Status       *int    `json:"status"`
}

// updateChannel changes the fields sent and rebuilds the channel's
// abilities. The sent fields are validated together with the kept ones, so
// the channel as a whole stays valid.
func (s *Server) updateChannel(w http.ResponseWriter, r *http.Request) error {
	var req updateChannelRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	if req.ID == 0 {
		return httpx.Fail(MsgIDRequired)
	}
	c, err := s.channelByID(r, req.ID)
	if err != nil {
		return err
	}
	patch, err := channelPatch(&c, &req)
	if err != nil {
		return err
	}
	err = s.Store.UpdateChannel(r.Context(), c.ID, patch)
	if errors.Is(err, store.ErrNotFound) {
		return httpx.Fail(MsgChannelNotFound)
	}
	if err != nil {
		return err
	}
	if c, err = s.channelByID(r, c.ID); err != nil {
		return err
	}
	return httpx.OK(w, viewChannel(&c))
}

// channelPatch merges req into the stored channel c, validates the result
// and returns a patch of the sent fields, cleaned.
func channelPatch(c *store.Channel, req *updateChannelRequest) (store.ChannelPatch, error) {
	f := channel.Fields{
		Type: c.Type, Name: c.Name, BaseURL: c.BaseURL, Models: c.Models, Groups: c.Groups,
		Priority: c.Priority, Weight: c.Weight, ModelMapping: c.ModelMapping, Setting: c.Setting, Other: c.Other, Status: c.Status,
	}
	setIfSent(&f.Name, req.Name)
	setIfSent(&f.Other, req.Other)
	setIfSent(&f.BaseURL, req.BaseURL)
	setIfSent(&f.Models, req.Models)
	setIfSent(&f.Groups, req.Group)
	setIfSent(&f.ModelMapping, req.ModelMapping)
	setIfSent(&f.Setting, req.Setting)
	setIfSent(&f.Type, req.Type)
	setIfSent(&f.Priority, req.Priority)
	setIfSent(&f.Weight, req.Weight)
	setIfSent(&f.Status, req.Status)
	if msg := f.Normalize(); msg != "" {
		return store.ChannelPatch{}, httpx.Fail(msg)
	}
	// Point at the cleaned value of each field that was sent.
	pick := func(sent bool, v *string) *string {
		if sent {
			return v
		}
		return nil
	}
	p := store.ChannelPatch{
		Name: pick(req.Name != nil, &f.Name), BaseURL: pick(req.BaseURL != nil, &f.BaseURL),
		Models: pick(req.Models != nil, &f.Models), Groups: pick(req.Group != nil, &f.Groups),
		ModelMapping: pick(req.ModelMapping != nil, &f.ModelMapping), Setting: pick(req.Setting != nil, &f.Setting),
		// A type change may change what "other" means: it is stored
		// (cleaned, defaulted) whenever either was sent.
		Other: pick(req.Other != nil || req.Type != nil, &f.Other),
		Type:  req.Type, Priority: req.Priority, Weight: req.Weight, Status: req.Status,
	}
	if req.Key != nil {
		key, msg := channel.NormalizeKey(*req.Key)
		if msg != "" {
			return p, httpx.Fail(msg)
		}
		if key != "" {
			p.Key = &key
		}
	}
	key := c.Key // the key the channel will have, checked against its type
	if p.Key != nil {
		key = *p.Key
	}
	if msg := channel.CheckKey(f.Type, key); msg != "" {
		return p, httpx.Fail(msg)
	}
	return p, nil
}

// deleteChannel removes a channel and its abilities for good.
func (s *Server) deleteChannel(w http.ResponseWriter, r *http.Request) error {
	return deleteByID(w, r, s.Store.DeleteChannel, MsgChannelNotFound)
}

type channelTestResult struct {
	TimeMS     int64  `json:"time_ms"`
	StatusCode int    `json:"status_code"`
	Model      string `json:"model"`
	// Keys is the outcome per key of the pool.
	Keys []keyTestResult `json:"keys"`
}

// keyTestResult is the test of one key of a pool: its 0-based index,
// whether it is retired, the upstream's status (0: no answer), the time
// and, when it failed, why (key masked).
type keyTestResult struct {
	Index      int    `json:"index"`
	Disabled   bool   `json:"disabled"`
	StatusCode int    `json:"status_code"`
	TimeMS     int64  `json:"time_ms"`
	Message    string `json:"message"`
}

// testChannel sends a minimal real chat completion through the channel's
// dialect (the relay's TestChannel): for the model in ?model=, else the
// channel's first model. Only a 200 is a success; the outcome is recorded on
// the channel (test_time, response_time, last_error). Nobody is billed.
func (s *Server) testChannel(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r)
	if err != nil {
		return err
	}
	c, err := s.channelByID(r, id)
	if err != nil {
		return err
	}
	model, err := httpx.QueryText(r, "model", maxModelNameChars)
	if err != nil {
		return err
	}
	if models := channel.Split(c.Models); model == "" && len(models) > 0 {
		model = models[0]
	}
	start := time.Now()
	res := s.Channels.TestChannel(r.Context(), c, model)
	elapsed := res.Elapsed.Milliseconds()
	keys := make([]keyTestResult, len(res.Keys))
	for i, k := range res.Keys {
		keys[i] = keyTestResult{Index: k.Index, Disabled: k.Retired, StatusCode: k.Status, TimeMS: k.Elapsed.Milliseconds(),
			Message: channel.CleanLastError(testFailure(k.Status, k.Detail))}
	}
	if !res.OK() {
		msg := testFailure(res.Status, res.Detail)
		if len(res.Keys) > 1 {
			for _, k := range res.Keys {
				if k.Status != res.Status || k.Detail != res.Detail {
					continue
				}
				msg = fmt.Sprintf(msgKeyTestFmt, k.Index, msg) // the pool's first failing key
				break
			}
		}
		msg = channel.CleanLastError(msg)
		if err := s.Store.RecordChannelTest(r.Context(), c.ID, store.ChannelTest{Time: start.Unix(), Error: msg}); err != nil {
			return err
		}
		return httpx.Fail(MsgChannelTestFailed + msg)
	}
	test := store.ChannelTest{Time: start.Unix(), ResponseTime: elapsed, OK: true}
	if err := s.Store.RecordChannelTest(r.Context(), c.ID, test); err != nil {
		return err
	}
	return httpx.OK(w, channelTestResult{TimeMS: elapsed, StatusCode: res.Status, Model: model, Keys: keys})
}

// testFailure is how a failed test reads ("" for a success).
func testFailure(status int, detail string) string {
	switch {
	case status == 200:
		return ""
	case status != 0:
		return fmt.Sprintf("上游返回 %d: %s", status, detail)
	}
	return detail
}

// enableChannelKey puts a retired key of a channel's pool back in service
// (POST /api/channel/{id}/keys/{index}/enable); a channel the system
// disabled because all its keys were out is enabled again with it.
func (s *Server) enableChannelKey(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r)
	if err != nil {
		return err
	}
	c, err := s.channelByID(r, id)
	if err != nil {
		return err
	}
	pool := channel.Pool(c.Key, c.DisabledKeys)
	index, err := strconv.Atoi(r.PathValue("index"))
	if err != nil || index < 0 || index >= len(pool) {
		return httpx.Fail(MsgChannelKeyNotFound)
	}
	if _, err := s.Store.RestoreChannelKeys(r.Context(), id, []string{pool[index].ID}, store.ChannelTest{}); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return httpx.Fail(MsgChannelNotFound)
		}
		return err
	}
	c, err = s.channelByID(r, id)
	if err != nil {
		return err
	}
	return httpx.OK(w, viewChannel(&c))
}

// listGroups lists every group name in use (see Store.GroupNames).
func (s *Server) listGroups(w http.ResponseWriter, r *http.Request) error {
	groups, err := s.Store.GroupNames(r.Context())
	if err != nil {
		return err
	}
	return httpx.OK(w, groups)
}

// availableModels lists the models the caller's group can call: served by
// an enabled channel in the group, and priced (GET /v1/models narrows this
// further by a key's allow list).
func (s *Server) availableModels(w http.ResponseWriter, r *http.Request) error {
	models, err := s.Store.OfferedModels(r.Context(), caller(r).Group)
	if err != nil {
		return err
	}
	return httpx.OK(w, models)
}
