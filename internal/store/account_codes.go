package store

import (
	"context"
	"errors"
	"github.com/modelgate/modelgate/internal/user"
)

// AccountCode is the live code of one purpose for one address: a
// verification code ("verify") or a password reset token ("reset"). Only
// its SHA-256 is kept. A new code replaces the old one, so an address has
// at most one that works.
type AccountCode struct {
	Purpose   string `gorm:"primaryKey;size:16"`
	Email     string `gorm:"primaryKey;size:128"`
	CodeHash  string `gorm:"size:64;not null"`
	CreatedAt int64  `gorm:"autoCreateTime:false;not null"` // unix seconds
	ExpiresAt int64  `gorm:"not null"`
	Used      bool   `gorm:"not null;default:false"`
}

// IssueAccountCode stores a new code for (purpose, email) created at now,
// valid until expires, unless the address got one after notBefore: then it
// is ErrConflict and nothing changes. Parallel calls for one address issue
// one code at most: the conditional update and the primary key decide.
func (s *Store) IssueAccountCode(ctx context.Context, c AccountCode, notBefore int64) error {
	var replaced bool
	err := s.write(ctx, "replace account code", func(tx *Tx) error {
		res := tx.db.Model(&AccountCode{}).
			Where("purpose = ? AND email = ? AND created_at <= ?", c.Purpose, c.Email, notBefore).
			Updates(map[string]any{"code_hash": c.CodeHash, "created_at": c.CreatedAt, "expires_at": c.ExpiresAt, "used": false})
		replaced = res.RowsAffected == 1
		return res.Error
	})
	if err != nil || replaced {
		return err
	}
	// No old row to replace: insert. A row that exists (recent, or made by
	// a parallel call) refuses it; its own transaction, since a failed
	// insert aborts the rest of a PostgreSQL transaction.
	err = s.write(ctx, "insert account code", func(tx *Tx) error { return tx.db.Create(&c).Error })
	if errors.Is(err, ErrDuplicate) {
		return ErrConflict
	}
	return err
}

// UseAccountCode marks the code of (purpose, email) used when its hash is
// hash and it has not expired at now; anything else is ErrNotFound.
func (s *Store) UseAccountCode(ctx context.Context, purpose, email, hash string, now int64) error {
	return s.write(ctx, "use account code", func(tx *Tx) error { return tx.UseAccountCode(purpose, email, hash, now) })
}

// UseAccountCode is Store.UseAccountCode inside a transaction: registration
// uses the code and creates the user together, so a refused username leaves
// the code working.
func (tx *Tx) UseAccountCode(purpose, email, hash string, now int64) error {
	res := tx.db.Model(&AccountCode{}).
		Where("purpose = ? AND email = ? AND code_hash = ? AND used = ? AND expires_at > ?", purpose, email, hash, false, now).
		Update("used", true)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected != 1 {
		return ErrNotFound
	}
	return nil
}

// UserByEmail returns the oldest live (not deleted) user with that address.
func (s *Store) UserByEmail(ctx context.Context, email string) (User, error) {
	var u User
	err := s.read(ctx).Where("LOWER(email) = ? AND status <> ?", email, user.StatusDeleted).Order("id").Take(&u).Error
	return u, wrap("get user by email", err)
}

// EmailTaken reports whether a live user has the address.
func (s *Store) EmailTaken(ctx context.Context, email string) (bool, error) {
	var n int64
	err := s.read(ctx).Model(&User{}).Where("LOWER(email) = ? AND status <> ?", email, user.StatusDeleted).Count(&n).Error
	return n > 0, wrap("count users by email", err)
}

// DeleteAccountCode removes the code of (purpose, email) if it is still the
// one with hash: a code whose mail could not be sent, so the address may ask
// again at once.
func (s *Store) DeleteAccountCode(ctx context.Context, purpose, email, hash string) error {
	return s.write(ctx, "delete account code", func(tx *Tx) error {
		return tx.db.Where("purpose = ? AND email = ? AND code_hash = ?", purpose, email, hash).Delete(&AccountCode{}).Error
	})
}
