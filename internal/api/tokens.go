package api

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/cluster"
	"github.com/modelgate/modelgate/internal/cluster/owner"
	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/ratelimit"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/token"
)

// Messages of the API key endpoints (validation messages are in package
// token).
const (
	MsgTokenNotFound = "令牌不存在"
)

// tokenView is an API key as its owner sees it: the key masked (the full key
// only in the create response), never the key hash.
type tokenView struct {
	ID             int64  `json:"id"`
	UserID         int64  `json:"user_id"`
	Name           string `json:"name"`
	Key            string `json:"key"`
	Status         int    `json:"status"`
	CreatedTime    int64  `json:"created_time"`
	AccessedTime   int64  `json:"accessed_time"`
	ExpiredTime    int64  `json:"expired_time"`
	RemainQuota    int64  `json:"remain_quota"`
	UnlimitedQuota bool   `json:"unlimited_quota"`
	UsedQuota      int64  `json:"used_quota"`
	Models         string `json:"models"`
	Subnet         string `json:"subnet"`
	// Rate limits (docs/decisions/rate-limits.md); 0 = none.
	RPMLimit         int64 `json:"rpm_limit"`
	TPMLimit         int64 `json:"tpm_limit"`
	ConcurrencyLimit int64 `json:"concurrency_limit"`
}

// viewToken shows t at now: an enabled key past its expiry reads as expired
// although the stored row may still say enabled.
func viewToken(t *store.Token, now int64) tokenView {
	return tokenView{
		ID: t.ID, UserID: t.UserID, Name: t.Name, Key: token.Mask(t.KeyPrefix, t.KeySuffix),
		Status: tokenState(t).EffectiveStatus(now), CreatedTime: t.CreatedTime, AccessedTime: t.AccessedTime,
		ExpiredTime: t.ExpiredTime, RemainQuota: t.RemainQuota, UnlimitedQuota: t.UnlimitedQuota,
		UsedQuota: t.UsedQuota, Models: t.Models, Subnet: t.Subnet,
		RPMLimit: t.RPMLimit, TPMLimit: t.TPMLimit, ConcurrencyLimit: t.ConcurrencyLimit,
	}
}

func tokenState(t *store.Token) token.State {
	return token.State{Status: t.Status, ExpiredTime: t.ExpiredTime, RemainQuota: t.RemainQuota, UnlimitedQuota: t.UnlimitedQuota}
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) error {
	return s.writeTokens(w, r, caller(r).ID, "")
}

// listUserTokens lists another user's keys for an admin (issue 30 §1: a
// user's keys from their row in the console), masked as their owner sees
// them; it changes nothing, so like GET /api/user/{id} it is not limited
// to users the caller outranks.
func (s *Server) listUserTokens(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r)
	if err != nil {
		return err
	}
	if _, err := s.Store.UserByID(r.Context(), id); errors.Is(err, store.ErrNotFound) {
		return httpx.Fail(MsgUserNotFound)
	} else if err != nil {
		return err
	}
	return s.writeTokens(w, r, id, "")
}

func (s *Server) searchTokens(w http.ResponseWriter, r *http.Request) error {
	keyword, err := searchKeyword(r)
	if err != nil {
		return err
	}
	return s.writeTokens(w, r, caller(r).ID, keyword)
}

// writeTokens lists userID's keys: the caller's own on /api/token/ (admins
// too see only their own there), a user's for an admin on
// /api/user/{id}/tokens.
func (s *Server) writeTokens(w http.ResponseWriter, r *http.Request, userID int64, keyword string) error {
	pg, err := page(r)
	if err != nil {
		return err
	}
	tokens, total, err := s.Store.ListTokens(r.Context(), userID, keyword, pg)
	if err != nil {
		return err
	}
	now := time.Now().Unix()
	views := make([]tokenView, len(tokens))
	for i := range tokens {
		views[i] = viewToken(&tokens[i], now)
	}
	return httpx.OKList(w, views, total)
}

// notFoundToken turns the store's not-found into the message; another
// user's key is not found either.
func notFoundToken(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return httpx.Fail(MsgTokenNotFound)
	}
	return err
}

func (s *Server) getToken(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r)
	if err != nil {
		return err
	}
	t, err := s.Store.UserToken(r.Context(), caller(r).ID, id)
	if err != nil {
		return notFoundToken(err)
	}
	return httpx.OK(w, viewToken(&t, time.Now().Unix()))
}

type createTokenRequest struct {
	Name             string `json:"name"`
	ExpiredTime      *int64 `json:"expired_time"` // absent: never expires
	RemainQuota      int64  `json:"remain_quota"`
	UnlimitedQuota   bool   `json:"unlimited_quota"`
	Models           string `json:"models"`
	Subnet           string `json:"subnet"`
	RPMLimit         int64  `json:"rpm_limit"`
	TPMLimit         int64  `json:"tpm_limit"`
	ConcurrencyLimit int64  `json:"concurrency_limit"`
}

// keyLimitsProblem checks a key's limits for its owner u: within their
// bounds and not above u's group limits (ratelimit.ValidateKey).
func (s *Server) keyLimitsProblem(u *store.User, l ratelimit.Limits) string {
	return ratelimit.ValidateKey(l, u.Group, s.Options.Current().GroupRateLimits[u.Group])
}

// createToken makes a new enabled key for the caller. The response is the
// only time the full key is shown: only its hash is stored.
func (s *Server) createToken(w http.ResponseWriter, r *http.Request) error {
	var req createTokenRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	now := time.Now().Unix()
	name := strings.TrimSpace(req.Name)
	expired := int64(token.NeverExpires)
	if req.ExpiredTime != nil {
		expired = *req.ExpiredTime
	}
	models, modelsMsg := token.NormalizeModels(req.Models)
	subnet, subnetMsg := token.NormalizeSubnets(req.Subnet)
	msg := firstProblem(token.ValidateName(name), token.ValidateExpiry(expired, now),
		token.ValidateRemainQuota(req.RemainQuota), modelsMsg, subnetMsg,
		s.keyLimitsProblem(caller(r), ratelimit.Limits{RPM: req.RPMLimit, TPM: req.TPMLimit, Concurrency: req.ConcurrencyLimit}))
	if msg != "" {
		return httpx.Fail(msg)
	}
	key := token.GenerateKey()
	prefix, suffix := token.Ends(key)
	t := store.Token{
		UserID: caller(r).ID, Name: name, KeyHash: token.HashKey(key), KeyPrefix: prefix, KeySuffix: suffix,
		Status: token.StatusEnabled, ExpiredTime: expired, RemainQuota: req.RemainQuota,
		UnlimitedQuota: req.UnlimitedQuota, Models: models, Subnet: subnet,
		RPMLimit: req.RPMLimit, TPMLimit: req.TPMLimit, ConcurrencyLimit: req.ConcurrencyLimit,
	}
	if err := s.Store.CreateToken(r.Context(), &t); err != nil {
		return err
	}
	v := viewToken(&t, now)
	v.Key = key
	return httpx.OK(w, v)
}

type updateTokenRequest struct {
	ID             int64   `json:"id"`
	Name           *string `json:"name"`
	Status         *int    `json:"status"`
	ExpiredTime    *int64  `json:"expired_time"`
	RemainQuota    *int64  `json:"remain_quota"`
	UnlimitedQuota *bool   `json:"unlimited_quota"`
	Models         *string `json:"models"`
	Subnet         *string `json:"subnet"`
	// Limits not sent keep their value.
	RPMLimit         *int64 `json:"rpm_limit"`
	TPMLimit         *int64 `json:"tpm_limit"`
	ConcurrencyLimit *int64 `json:"concurrency_limit"`
}

// updateToken changes the caller's key: the fields sent (nil = unchanged),
// or with ?status_only=1 the status alone, whatever else the body holds.
// In cluster mode a changed remain_quota is set on the key's owner node
// first (owner.Balances): an owner that cannot be reached changes nothing.
func (s *Server) updateToken(w http.ResponseWriter, r *http.Request) error {
	var req updateTokenRequest
	if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	if req.ID <= 0 {
		return httpx.Fail(MsgIDRequired)
	}
	var patch store.TokenPatch
	if !statusOnly(r) {
		var err error
		if patch, err = tokenPatch(&req); err != nil {
			return err
		}
	}
	now := time.Now().Unix()
	me := caller(r)
	decide := func(before store.Token) (store.TokenPatch, error) {
		if !statusOnly(r) {
			var err error
			if patch.Limits, err = s.limitsPatch(me, &req, before); err != nil {
				return patch, err
			}
		}
		return finishTokenPatch(patch, req.Status, before, now)
	}
	t, err := s.Balances.UpdateToken(r.Context(), me.ID, req.ID, decide)
	if errors.Is(err, owner.ErrUnavailable) {
		s.Log.Warn("key remain_quota not forwarded: owner unavailable", "token_id", req.ID, "err", err)
		return httpx.Failf(MsgTokenQuotaOwnerDown, cluster.Owner(req.ID))
	}
	if errors.Is(err, store.ErrBalanceMoved) {
		// Cluster mode: other nodes hold grants of the key's quota above
		// the new value (docs/decisions/cluster-grants.md).
		return httpx.Fail(MsgTokenQuotaGranted)
	}
	if err != nil {
		return notFoundToken(err)
	}
	return httpx.OK(w, viewToken(&t, now))
}

// statusOnly reads the status_only switch: 1 or true turns it on.
func statusOnly(r *http.Request) bool {
	v := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("status_only")))
	return v == "1" || v == "true"
}

// tokenPatch validates the fields of a full update that need no stored row.
func tokenPatch(req *updateTokenRequest) (store.TokenPatch, error) {
	p := store.TokenPatch{ExpiredTime: req.ExpiredTime, RemainQuota: req.RemainQuota, UnlimitedQuota: req.UnlimitedQuota}
	var problems []string
	if req.Name != nil {
		name := strings.TrimSpace(*req.Name)
		p.Name = &name
		problems = append(problems, token.ValidateName(name))
	}
	if req.RemainQuota != nil {
		problems = append(problems, token.ValidateRemainQuota(*req.RemainQuota))
	}
	if req.Models != nil {
		models, msg := token.NormalizeModels(*req.Models)
		p.Models = &models
		problems = append(problems, msg)
	}
	if req.Subnet != nil {
		subnet, msg := token.NormalizeSubnets(*req.Subnet)
		p.Subnet = &subnet
		problems = append(problems, msg)
	}
	if msg := firstProblem(problems...); msg != "" {
		return p, httpx.Fail(msg)
	}
	return p, nil
}

// limitsPatch is the key's limits after the update (those not sent keep
// their stored value), validated for its owner; nil when none was sent.
func (s *Server) limitsPatch(owner *store.User, req *updateTokenRequest, before store.Token) (*store.TokenLimits, error) {
	if req.RPMLimit == nil && req.TPMLimit == nil && req.ConcurrencyLimit == nil {
		return nil, nil
	}
	// Only the values sent are checked: one stored before the admin
	// lowered the group's limit does not block changing another (the
	// group's limit applies to calls anyway).
	l := ratelimit.Limits{RPM: before.RPMLimit, TPM: before.TPMLimit, Concurrency: before.ConcurrencyLimit}
	var sent ratelimit.Limits
	for _, f := range []struct {
		dst, chk *int64
		v        *int64
	}{{&l.RPM, &sent.RPM, req.RPMLimit}, {&l.TPM, &sent.TPM, req.TPMLimit}, {&l.Concurrency, &sent.Concurrency, req.ConcurrencyLimit}} {
		if f.v != nil {
			*f.dst, *f.chk = *f.v, *f.v
		}
	}
	if msg := s.keyLimitsProblem(owner, sent); msg != "" {
		return nil, httpx.Fail(msg)
	}
	return &store.TokenLimits{RPM: l.RPM, TPM: l.TPM, Concurrency: l.Concurrency}, nil
}

// finishTokenPatch completes p against the locked row before: the expiry and
// status rules need the stored values.
//   - An unchanged expired_time is accepted even when past (clients send
//     back the whole key); a changed one must be -1 or not before now.
//   - A change to enabled must leave a usable key (token.CheckEnable).
//   - A key that reads as expired but is stored enabled gets status 3 stored
//     when the update sets no status, so moving its expiry alone does not
//     silently re-enable it: that takes an explicit status 1.
func finishTokenPatch(p store.TokenPatch, status *int, before store.Token, now int64) (store.TokenPatch, error) {
	if p.ExpiredTime != nil {
		if *p.ExpiredTime == before.ExpiredTime {
			p.ExpiredTime = nil
		} else if msg := token.ValidateExpiry(*p.ExpiredTime, now); msg != "" {
			return p, httpx.Fail(msg)
		}
	}
	current := tokenState(&before).EffectiveStatus(now)
	change := false
	if status != nil {
		var msg string
		if change, msg = token.StatusRequest(*status, current); msg != "" {
			return p, httpx.Fail(msg)
		}
	}
	switch {
	case change && *status == token.StatusEnabled:
		after := p.Apply(before)
		after.Status = token.StatusEnabled
		if msg := token.CheckEnable(tokenState(&after), now); msg != "" {
			return p, httpx.Fail(msg)
		}
		p.Status = status
	case change:
		p.Status = status
	case current != before.Status:
		p.Status = &current
	}
	return p, nil
}

// deleteToken removes the caller's key for good.
func (s *Server) deleteToken(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r)
	if err != nil {
		return err
	}
	if err := s.Store.DeleteToken(r.Context(), caller(r).ID, id); err != nil {
		return notFoundToken(err)
	}
	return httpx.OKMessage(w, "")
}
