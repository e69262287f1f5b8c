package owner

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelgate/modelgate/internal/logtext"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/token"
)

// SetQuotaPath is the owner's endpoint of an absolute balance edit.
const SetQuotaPath = "/api/cluster/set_quota"

// Tables whose balance an absolute edit sets.
const (
	TableUsers  = "users"  // quota
	TableTokens = "tokens" // remain_quota
)

// Outcomes of an edit on the owner, the answer's data; refusals of the
// call itself (secret, body, not this node's row) are a failed envelope.
const (
	OutcomeOK       = "ok"
	OutcomeNotFound = "not_found"
	OutcomeMoved    = "balance_moved"
	OutcomeLimit    = "balance_limit"
)

// ErrNotOwner refuses an edit of a row this node does not own: a
// misconfigured node table must not make two nodes apply one edit.
var ErrNotOwner = errors.New("row owned by another node")

// ErrBadEdit refuses a malformed edit: an unknown table, no id, a user
// edit without quota_before, a token edit without its user or out of
// range.
var ErrBadEdit = errors.New("invalid balance edit")

// QuotaEdit is an absolute balance edit, the body of POST
// /api/cluster/set_quota: the balance of row ID of Table set to Quota,
// only while it still is QuotaBefore when that is given. Users always
// carry QuotaBefore (PUT /api/user/ applies quota only with quota_before);
// a key's remain_quota is set as sent.
type QuotaEdit struct {
	Table       string `json:"table"`
	ID          int64  `json:"id"`
	UserID      int64  `json:"user_id,omitempty"` // tokens: the key's user
	Quota       int64  `json:"quota"`
	QuotaBefore *int64 `json:"quota_before,omitempty"`
	Admin       string `json:"admin,omitempty"` // users: named in the admin log
}

// QuotaAnswer is the owner's answer: what it did, and the balance as it
// has it after (when ok).
type QuotaAnswer struct {
	Outcome string `json:"outcome"`
	Quota   int64  `json:"quota"`
}

// Balances applies absolute balance edits (an admin's PUT /api/user/
// quota, a key's remain_quota) on the row's owner, so two edits made at
// the same moment on two nodes apply at most once: the owner applies each
// under its row lock, and the difference replicates as a delta. On the
// owner, and with cluster mode off, an edit runs here as it always did.
type Balances struct {
	store  *store.Store
	router *Router
}

// NewBalances returns the service over st; router nil is cluster mode
// off (every row is local).
func NewBalances(st *store.Store, router *Router) *Balances {
	return &Balances{store: st, router: router}
}

// UserEdit is an admin's change of user ID; Admin is the admin's
// username, named in the log of a quota change.
type UserEdit struct {
	ID    int64
	Patch store.UserPatch
	Admin string
}

// UpdateUser applies e and returns the user after. Where this node owns
// the user (or cluster mode is off) it is one store.UpdateUser, as ever.
// Elsewhere a quota change is sent to the owner first; only when the
// owner applied it is the rest of the patch applied here, and the user
// returned carries the owner's balance (this node's copy shows it once the
// owner's push arrives). The owner's refusals are the store's errors
// (ErrBalanceMoved, ErrBalanceLimit, ErrNotFound); an owner that cannot be
// reached is ErrUnavailable, and nothing is changed.
func (b *Balances) UpdateUser(ctx context.Context, e UserEdit) (store.User, error) {
	q := e.Patch.Quota
	if b.router.Local(e.ID) || q == nil || q.After == q.Before {
		// An unchanged quota moves nothing, on the owner neither.
		if err := b.store.UpdateUser(ctx, e.ID, e.Patch, quotaLog(e.Admin, q)); err != nil {
			return store.User{}, err
		}
		return b.store.UserByID(ctx, e.ID)
	}
	edit := QuotaEdit{Table: TableUsers, ID: e.ID, Quota: q.After, QuotaBefore: &q.Before, Admin: e.Admin}
	quota, err := b.forward(ctx, edit)
	if err != nil {
		return store.User{}, err
	}
	rest := e.Patch
	rest.Quota = nil
	if rest != (store.UserPatch{}) {
		if err := b.store.UpdateUser(ctx, e.ID, rest, nil); err != nil {
			return store.User{}, fmt.Errorf("update user %d after its owner set the quota: %w", e.ID, err)
		}
	}
	u, err := b.store.UserByID(ctx, e.ID)
	u.Quota = quota
	return u, err
}

// UpdateToken changes userID's key id as store.UpdateToken does: decide
// sees the row and returns the patch or a refusal. Where this node does
// not own the key and the patch changes remain_quota, decide is first run
// on this node's copy (a refusal changes nothing), then remain_quota is
// set on the owner, then the rest is applied here (decide runs again,
// under the row lock); the key returned carries the owner's remain_quota.
// A remain_quota equal to this node's copy is no change and is not sent:
// clients send the whole key back, and an echo must neither need the
// owner nor undo a charge the owner made since.
func (b *Balances) UpdateToken(ctx context.Context, userID, id int64, decide func(before store.Token) (store.TokenPatch, error)) (store.Token, error) {
	if b.router.Local(id) {
		return b.store.UpdateToken(ctx, userID, id, decide)
	}
	here, err := b.store.UserToken(ctx, userID, id)
	if err != nil {
		return here, err
	}
	p, err := decide(here)
	if err != nil {
		return here, err
	}
	if p.RemainQuota == nil || *p.RemainQuota == here.RemainQuota {
		return b.store.UpdateToken(ctx, userID, id, keepQuota(decide))
	}
	quota, err := b.forward(ctx, QuotaEdit{Table: TableTokens, ID: id, UserID: userID, Quota: *p.RemainQuota})
	if err != nil {
		return here, err
	}
	t, err := b.store.UpdateToken(ctx, userID, id, keepQuota(decide))
	if err != nil {
		return t, fmt.Errorf("update token %d after its owner set remain_quota: %w", id, err)
	}
	t.RemainQuota = quota
	return t, nil
}

// keepQuota is decide without its remain_quota: the owner sets that.
func keepQuota(decide func(store.Token) (store.TokenPatch, error)) func(store.Token) (store.TokenPatch, error) {
	return func(before store.Token) (store.TokenPatch, error) {
		p, err := decide(before)
		p.RemainQuota = nil
		return p, err
	}
}

// forward sends e to the row's owner and returns the balance it has
// after; the owner's refusals come back as the store's errors.
func (b *Balances) forward(ctx context.Context, e QuotaEdit) (int64, error) {
	var ans QuotaAnswer
	if err := b.router.Forward(ctx, e.ID, SetQuotaPath, e, &ans); err != nil {
		return 0, err
	}
	switch ans.Outcome {
	case OutcomeOK:
		return ans.Quota, nil
	case OutcomeNotFound:
		return 0, fmt.Errorf("%s %d on its owner: %w", e.Table, e.ID, store.ErrNotFound)
	case OutcomeMoved:
		return 0, fmt.Errorf("%s %d on its owner: %w", e.Table, e.ID, store.ErrBalanceMoved)
	case OutcomeLimit:
		return 0, fmt.Errorf("%s %d on its owner: %w", e.Table, e.ID, store.ErrBalanceLimit)
	}
	return 0, fmt.Errorf("owner of %s %d answered outcome %q: %w", e.Table, e.ID, ans.Outcome, ErrUnavailable)
}

// Apply runs an edit another node forwarded, on this node as the row's
// owner: under the row lock, checking QuotaBefore against this node's
// balance. A row this node does not own is ErrNotOwner, a malformed edit
// ErrBadEdit; the store's refusals are outcomes.
func (b *Balances) Apply(ctx context.Context, e QuotaEdit) (QuotaAnswer, error) {
	if err := e.check(); err != nil {
		return QuotaAnswer{}, err
	}
	if b.router == nil || !b.router.Local(e.ID) {
		return QuotaAnswer{}, ErrNotOwner
	}
	quota, err := b.apply(ctx, e)
	switch {
	case err == nil:
		return QuotaAnswer{Outcome: OutcomeOK, Quota: quota}, nil
	case errors.Is(err, store.ErrNotFound):
		return QuotaAnswer{Outcome: OutcomeNotFound}, nil
	case errors.Is(err, store.ErrBalanceMoved):
		return QuotaAnswer{Outcome: OutcomeMoved}, nil
	case errors.Is(err, store.ErrBalanceLimit):
		return QuotaAnswer{Outcome: OutcomeLimit}, nil
	}
	return QuotaAnswer{}, err
}

func (e QuotaEdit) check() error {
	ok := e.ID > 0
	switch e.Table {
	case TableUsers:
		ok = ok && e.QuotaBefore != nil && len(e.Admin) <= 255
	case TableTokens:
		ok = ok && e.UserID > 0 && token.ValidateRemainQuota(e.Quota) == ""
	default:
		ok = false
	}
	if !ok {
		return ErrBadEdit
	}
	return nil
}

// apply runs e through the store's balance-only writes: the forwarding
// node applies the rest of its edit itself, and a row change from here
// could overwrite it by last writer wins.
func (b *Balances) apply(ctx context.Context, e QuotaEdit) (int64, error) {
	if e.Table == TableUsers {
		c := store.QuotaChange{Before: *e.QuotaBefore, After: e.Quota}
		return b.store.MoveUserQuota(ctx, e.ID, c, quotaLog(e.Admin, &c))
	}
	t, err := b.store.SetTokenQuota(ctx, e.UserID, e.ID, e.Quota, e.QuotaBefore)
	return t.RemainQuota, err
}

// quotaLog is the audit of an admin's quota change c: a type-3 log
// written with the change, in its transaction; none without a change.
func quotaLog(admin string, c *store.QuotaChange) func(before store.User) *store.Log {
	return func(before store.User) *store.Log {
		if c == nil || c.After == c.Before {
			return nil
		}
		return &store.Log{
			UserID: before.ID, Username: before.Username, Type: store.LogAdmin, Group: before.Group,
			Content: fmt.Sprintf(logtext.AdminSetQuota, admin, c.Before, c.After),
		}
	}
}
