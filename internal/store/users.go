package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/modelgate/modelgate/internal/pricing"
	"github.com/modelgate/modelgate/internal/user"
)

// Page selects a slice of a list: rows Offset..Offset+Limit.
type Page struct {
	Offset, Limit int
}

func (p Page) apply(db *gorm.DB) *gorm.DB {
	if p.Limit <= 0 {
		p.Limit = 10
	}
	return db.Offset(p.Offset).Limit(p.Limit)
}

// whereLike matches keyword as a substring of any of cols. Wildcards in the
// keyword are escaped with '!', which (unlike backslash) means the same in
// SQLite, PostgreSQL and MySQL string literals.
func whereLike(db *gorm.DB, keyword string, cols ...string) *gorm.DB {
	pat := likePattern(keyword)
	conds := make([]string, len(cols))
	args := make([]any, len(cols))
	for i, c := range cols {
		conds[i] = c + " LIKE ? ESCAPE '!'"
		args[i] = pat
	}
	return db.Where(strings.Join(conds, " OR "), args...)
}

// likePattern is the LIKE pattern (with ESCAPE '!') matching keyword as a
// substring.
func likePattern(keyword string) string {
	return "%" + strings.NewReplacer("!", "!!", "%", "!%", "_", "!_").Replace(keyword) + "%"
}

// CreateUser inserts u, allocating its id and timestamps. A taken username
// gives an error wrapping ErrDuplicate.
func (s *Store) CreateUser(ctx context.Context, u *User) error {
	return s.write(ctx, "create user", func(tx *Tx) error {
		return tx.CreateUser(u)
	})
}

// CreateUser is Store.CreateUser inside a transaction.
func (tx *Tx) CreateUser(u *User) error {
	id, err := tx.allocIDs("users", 1)
	if err != nil {
		return err
	}
	now := time.Now().Unix()
	u.ID, u.CreatedAt, u.UpdatedAt = id, now, now
	if u.SessionVersion == 0 {
		u.SessionVersion = 1
	}
	if err := tx.db.Create(u).Error; err != nil {
		return err
	}
	return tx.changed("users", "INSERT", u.ID)
}

// UserByID returns the user with id, deleted or not.
func (s *Store) UserByID(ctx context.Context, id int64) (User, error) {
	var u User
	err := s.read(ctx).Where("id = ?", id).Take(&u).Error
	return u, wrap("get user", err)
}

// UserByUsername returns the user with that username, deleted or not.
func (s *Store) UserByUsername(ctx context.Context, username string) (User, error) {
	var u User
	err := s.read(ctx).Where("username = ?", username).Take(&u).Error
	return u, wrap("get user by username", err)
}

// UserByAccessToken returns the user whose access token is token.
func (s *Store) UserByAccessToken(ctx context.Context, token string) (User, error) {
	var u User
	err := s.read(ctx).Where("access_token = ?", token).Take(&u).Error
	return u, wrap("get user by access token", err)
}

// RootExists reports whether any user has the root role.
func (s *Store) RootExists(ctx context.Context) (bool, error) {
	var n int64
	err := s.read(ctx).Model(&User{}).Where("role = ?", user.RoleRoot).Count(&n).Error
	return n > 0, wrap("count root users", err)
}

// ListUsers returns users newest first and the total count. A non-empty
// keyword matches a substring of username, display name or email.
func (s *Store) ListUsers(ctx context.Context, keyword string, p Page) ([]User, int64, error) {
	q := s.read(ctx).Model(&User{})
	if keyword != "" {
		q = whereLike(q, keyword, "username", "display_name", "email")
	}
	var total int64
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, wrap("count users", err)
	}
	var users []User
	err := p.apply(q.Order("id DESC")).Find(&users).Error
	return users, total, wrap("list users", err)
}

// UserPatch lists the user fields an update may change; nil means unchanged.
type UserPatch struct {
	Username     *string
	DisplayName  *string
	PasswordHash *string
	Email        *string
	Role         *int
	Status       *int
	Quota        *QuotaChange
	Group        *string
}

// QuotaChange moves a balance from what the admin read (Before) to After as
// a delta: it applies only while the balance still is Before, so a charge or
// hold made since the read is never overwritten.
type QuotaChange struct {
	Before, After int64
}

// UpdateUser applies p to user id. A change of password, role or status also
// bumps the session version in the same transaction, which ends the user's
// existing sessions: a cookie never outlives the rights it was issued for. A quota change whose
// Before is not the balance any more changes nothing and returns
// ErrBalanceMoved. audit, when not nil, gets the row as it was before the
// change (read under lock) and may return a log to write in the same
// transaction: admin logs of quota changes.
func (s *Store) UpdateUser(ctx context.Context, id int64, p UserPatch, audit func(before User) *Log) error {
	set := map[string]any{"updated_at": time.Now().Unix()}
	put := func(col string, v any, ok bool) {
		if ok {
			set[col] = v
		}
	}
	put("username", deref(p.Username), p.Username != nil)
	put("display_name", deref(p.DisplayName), p.DisplayName != nil)
	if p.PasswordHash != nil {
		set["password_hash"] = *p.PasswordHash
		set["session_version"] = gorm.Expr("session_version + 1")
	}
	put("email", deref(p.Email), p.Email != nil)
	put("role", deref(p.Role), p.Role != nil)
	put("status", deref(p.Status), p.Status != nil)
	put("user_group", deref(p.Group), p.Group != nil)
	return s.write(ctx, "update user", func(tx *Tx) error {
		var before User
		if err := tx.forUpdate().Where("id = ?", id).Take(&before).Error; err != nil {
			return err
		}
		if (p.Role != nil && *p.Role != before.Role) || (p.Status != nil && *p.Status != before.Status) {
			set["session_version"] = gorm.Expr("session_version + 1")
		}
		if p.Quota != nil {
			if err := tx.moveUserQuota(id, *p.Quota); err != nil {
				return err
			}
		}
		if err := tx.db.Model(&User{}).Where("id = ?", id).Updates(set).Error; err != nil {
			return err
		}
		if audit != nil {
			if log := audit(before); log != nil {
				if err := tx.InsertLogs([]Log{*log}); err != nil {
					return err
				}
			}
		}
		return tx.changed("users", "UPDATE", id)
	})
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// SetAccessToken replaces the user's access token.
func (s *Store) SetAccessToken(ctx context.Context, id int64, token string) error {
	return s.write(ctx, "set access token", func(tx *Tx) error {
		res := tx.db.Model(&User{}).Where("id = ?", id).Updates(map[string]any{"access_token": token, "updated_at": time.Now().Unix()})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		return tx.changed("users", "UPDATE", id)
	})
}

// EndSessionsOf bumps the user's session version from version, so every
// cookie issued before stops working. It changes nothing when the version
// has moved on already: a stale cookie cannot end the sessions of today.
func (s *Store) EndSessionsOf(ctx context.Context, id, version int64) error {
	return s.write(ctx, "end sessions of version", func(tx *Tx) error {
		res := tx.db.Model(&User{}).Where("id = ? AND session_version = ?", id, version).
			Update("session_version", gorm.Expr("session_version + 1"))
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		return tx.changed("users", "UPDATE", id)
	})
}

// ErrBalanceLimit refuses a credit that would take a balance above
// pricing.MaxBalance; nothing is written.
var ErrBalanceLimit = errors.New("balance limit exceeded")

// ErrBalanceMoved refuses a quota change made from a balance that has
// changed since it was read; nothing is written.
var ErrBalanceMoved = errors.New("balance changed since it was read")

// moveUserQuota applies a QuotaChange as a delta, conditional on the
// balance still being c.Before. It is a counter change, like a top-up, so
// other nodes apply the delta rather than a whole-row value.
func (tx *Tx) moveUserQuota(id int64, c QuotaChange) error {
	if c.After < 0 || c.After > pricing.MaxBalance || c.Before < -pricing.MaxBalance || c.Before > pricing.MaxBalance {
		return ErrBalanceLimit
	}
	if c.After == c.Before {
		return nil
	}
	if c.After < c.Before {
		if err := tx.keepGranted("users", id, c.After); err != nil {
			return err
		}
	}
	res := tx.db.Exec("UPDATE users SET quota = quota + ? WHERE id = ? AND quota = ?", c.After-c.Before, id, c.Before)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return ErrBalanceMoved
	}
	return tx.counted("users", id, counterDelta{"quota": c.After - c.Before})
}

// MoveUserQuota applies c to user id's balance alone, under the row lock,
// with audit's log (when not nil) in the same transaction, and returns the
// balance after: the owner's side of an admin's quota edit another node
// forwarded (docs/cluster.md, Credits: owner node). Unlike UpdateUser it
// writes no row change, updated_at included: peers get the difference
// only, so the owner's copy of the other fields cannot overwrite, by last
// writer wins, what the forwarding node changes beside the quota.
func (s *Store) MoveUserQuota(ctx context.Context, id int64, c QuotaChange, audit func(before User) *Log) (int64, error) {
	var after int64
	err := s.write(ctx, "move user quota", func(tx *Tx) error {
		var before User
		if err := tx.forUpdate().Where("id = ?", id).Take(&before).Error; err != nil {
			return err
		}
		if err := tx.moveUserQuota(id, c); err != nil {
			return err
		}
		// Applied, the balance was c.Before; an unchanged quota moved nothing.
		after = before.Quota + c.After - c.Before
		if audit == nil {
			return nil
		}
		if log := audit(before); log != nil {
			return tx.InsertLogs([]Log{*log})
		}
		return nil
	})
	return after, err
}

// AddUserQuota changes user id's balance by delta in one statement and
// writes log in the same transaction. A credit always applies, to a negative
// balance too, unless it would take the balance above pricing.MaxBalance
// (ErrBalanceLimit); a deduction larger than the balance changes nothing and
// returns ErrConflict; an unknown user ErrNotFound.
func (s *Store) AddUserQuota(ctx context.Context, id, delta int64, log *Log) error {
	return s.write(ctx, "add user quota", func(tx *Tx) error {
		if err := tx.AddUserQuota(id, delta); err != nil {
			return err
		}
		if log != nil {
			if err := tx.InsertLogs([]Log{*log}); err != nil {
				return err
			}
		}
		return nil
	})
}

// AddUserQuota is Store.AddUserQuota without the log, inside a transaction.
func (tx *Tx) AddUserQuota(id, delta int64) error {
	if delta > pricing.MaxBalance || delta < -pricing.MaxBalance {
		return fmt.Errorf("user %d: delta %d: %w", id, delta, ErrBalanceLimit)
	}
	// Both bounds compare the column with a constant, never compute
	// quota + delta unchecked: that sum could overflow (SQLite would store a
	// REAL, PostgreSQL and MySQL fail the statement).
	bound := "quota <= ?"
	limit := pricing.MaxBalance - delta
	if delta < 0 {
		bound, limit = "quota >= ?", -delta
		if err := tx.debitGranted(id, delta); err != nil {
			return err
		}
	}
	// updated_at is left alone: it is the row's last edit, which the
	// cluster replicates by last writer wins, while a balance moves by
	// deltas on every node (an own stamp here would differ between nodes).
	res := tx.db.Exec("UPDATE users SET quota = quota + ? WHERE id = ? AND "+bound, delta, id, limit)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		var n int64
		if err := tx.db.Model(&User{}).Where("id = ?", id).Count(&n).Error; err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("user %d: %w", id, ErrNotFound)
		}
		if delta > 0 {
			return fmt.Errorf("user %d balance plus %d: %w", id, delta, ErrBalanceLimit)
		}
		return fmt.Errorf("user %d balance below %d: %w", id, -delta, ErrConflict)
	}
	return tx.counted("users", id, counterDelta{"quota": delta})
}

// RootUser returns the oldest user with the root role: the account that
// ROOT_ACCESS_TOKEN acts as.
func (s *Store) RootUser(ctx context.Context) (User, error) {
	var u User
	err := s.read(ctx).Where("role = ?", user.RoleRoot).Order("id").Take(&u).Error
	return u, wrap("get root user", err)
}

// debitGranted refuses, in cluster mode on the user's owner, a debit of
// -delta that would take the balance below what is granted to other nodes
// (keepGranted): as a debit larger than the balance, ErrConflict.
func (tx *Tx) debitGranted(id, delta int64) error {
	if !tx.s.grantsOn() {
		return nil
	}
	var quota []int64
	if err := tx.forUpdate().Model(&User{}).Where("id = ?", id).Pluck("quota", &quota).Error; err != nil || len(quota) == 0 {
		return err // an unknown user: the update below tells
	}
	if err := tx.keepGranted("users", id, quota[0]+delta); errors.Is(err, ErrBalanceMoved) {
		return fmt.Errorf("user %d balance below %d: %w", id, -delta, ErrConflict)
	} else if err != nil {
		return err
	}
	return nil
}
