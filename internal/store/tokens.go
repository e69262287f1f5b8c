package store

import (
	"context"
	"time"
)

// CreateToken inserts t, allocating its id and created_time.
func (s *Store) CreateToken(ctx context.Context, t *Token) error {
	return s.write(ctx, "create token", func(tx *Tx) error {
		id, err := tx.allocIDs("tokens", 1)
		if err != nil {
			return err
		}
		t.ID, t.CreatedTime = id, time.Now().Unix()
		if err := tx.db.Create(t).Error; err != nil {
			return err
		}
		return tx.changed("tokens", "INSERT", t.ID)
	})
}

// UserToken returns token id if userID owns it. Another user's token is
// ErrNotFound, like a missing one, so callers cannot learn it exists.
func (s *Store) UserToken(ctx context.Context, userID, id int64) (Token, error) {
	var t Token
	err := s.read(ctx).Where("id = ? AND user_id = ?", id, userID).Take(&t).Error
	return t, wrap("get token", err)
}

// TokenByKeyHash returns the token whose key hashes to hash (the relay's
// lookup; see token.HashKey).
func (s *Store) TokenByKeyHash(ctx context.Context, hash string) (Token, error) {
	var t Token
	err := s.read(ctx).Where("key_hash = ?", hash).Take(&t).Error
	return t, wrap("get token by key", err)
}

// ListTokens returns userID's tokens newest first and their total count. A
// non-empty keyword matches the name.
func (s *Store) ListTokens(ctx context.Context, userID int64, keyword string, p Page) ([]Token, int64, error) {
	q := s.read(ctx).Model(&Token{}).Where("user_id = ?", userID)
	if keyword != "" {
		q = whereLike(q, keyword, "name")
	}
	var total int64
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, wrap("count tokens", err)
	}
	var tokens []Token
	err := p.apply(q.Order("id DESC")).Find(&tokens).Error
	return tokens, total, wrap("list tokens", err)
}

// TokenPatch lists the token fields an update may change; nil means
// unchanged.
type TokenPatch struct {
	Name           *string
	Status         *int
	ExpiredTime    *int64
	RemainQuota    *int64
	UnlimitedQuota *bool
	Models         *string
	Subnet         *string
	// Limits, when set, replaces the key's three rate limits.
	Limits *TokenLimits
}

// TokenLimits are a key's rate limits as stored.
type TokenLimits struct {
	RPM, TPM, Concurrency int64
}

// Apply returns t with p applied.
func (p TokenPatch) Apply(t Token) Token {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&t.Name, p.Name)
	set(&t.Models, p.Models)
	set(&t.Subnet, p.Subnet)
	if p.Status != nil {
		t.Status = *p.Status
	}
	if p.ExpiredTime != nil {
		t.ExpiredTime = *p.ExpiredTime
	}
	if p.RemainQuota != nil {
		t.RemainQuota = *p.RemainQuota
	}
	if p.UnlimitedQuota != nil {
		t.UnlimitedQuota = *p.UnlimitedQuota
	}
	if p.Limits != nil {
		t.RPMLimit, t.TPMLimit, t.ConcurrencyLimit = p.Limits.RPM, p.Limits.TPM, p.Limits.Concurrency
	}
	return t
}

// columns maps the patched fields to their columns.
func (p TokenPatch) columns() map[string]any {
	set := map[string]any{}
	put := func(col string, v any, ok bool) {
		if ok {
			set[col] = v
		}
	}
	put("name", deref(p.Name), p.Name != nil)
	put("status", deref(p.Status), p.Status != nil)
	put("expired_time", deref(p.ExpiredTime), p.ExpiredTime != nil)
	put("remain_quota", deref(p.RemainQuota), p.RemainQuota != nil)
	put("unlimited_quota", deref(p.UnlimitedQuota), p.UnlimitedQuota != nil)
	put("models", deref(p.Models), p.Models != nil)
	put("subnet", deref(p.Subnet), p.Subnet != nil)
	if p.Limits != nil {
		set["rpm_limit"], set["tpm_limit"], set["concurrency_limit"] = p.Limits.RPM, p.Limits.TPM, p.Limits.Concurrency
	}
	return set
}

// UpdateToken changes userID's token id. decide sees the row as it is
// (read under lock, so a status the relay sets meanwhile is not missed) and
// returns the patch to apply, or an error to refuse the update; the error is
// returned wrapped. The result is the row as saved.
func (s *Store) UpdateToken(ctx context.Context, userID, id int64, decide func(before Token) (TokenPatch, error)) (Token, error) {
	var after Token
	err := s.write(ctx, "update token", func(tx *Tx) error {
		var before Token
		if err := tx.forUpdate().Where("id = ? AND user_id = ?", id, userID).Take(&before).Error; err != nil {
			return err
		}
		p, err := decide(before)
		if err != nil {
			return err
		}
		if p.RemainQuota != nil && *p.RemainQuota < before.RemainQuota {
			if err := tx.keepGranted("tokens", id, *p.RemainQuota); err != nil {
				return err
			}
		}
		if set := p.columns(); len(set) > 0 {
			if err := tx.db.Model(&Token{}).Where("id = ?", id).Updates(set).Error; err != nil {
				return err
			}
		}
		// The row is locked, so the stored row now is before plus p.
		after = p.Apply(before)
		if p.RemainQuota != nil && *p.RemainQuota != before.RemainQuota {
			// A balance: peers add the difference, so charges made there
			// meanwhile still count.
			if err := tx.counted("tokens", id, counterDelta{"remain_quota": *p.RemainQuota - before.RemainQuota}); err != nil {
				return err
			}
		}
		return tx.changed("tokens", "UPDATE", id)
	})
	return after, err
}

// SetTokenQuota sets userID's token id's remain_quota to quota under the
// row lock, only while it is *before when before is not nil
// (ErrBalanceMoved), and returns the row after: the owner's side of a
// remain_quota edit another node forwarded (docs/cluster.md, Credits:
// owner node). Like MoveUserQuota it writes the difference alone, no row
// change.
func (s *Store) SetTokenQuota(ctx context.Context, userID, id, quota int64, before *int64) (Token, error) {
	var t Token
	err := s.write(ctx, "set token quota", func(tx *Tx) error {
		if err := tx.forUpdate().Where("id = ? AND user_id = ?", id, userID).Take(&t).Error; err != nil {
			return err
		}
		if before != nil && *before != t.RemainQuota {
			return ErrBalanceMoved
		}
		delta := quota - t.RemainQuota
		if delta == 0 {
			return nil
		}
		if delta < 0 {
			if err := tx.keepGranted("tokens", id, quota); err != nil {
				return err
			}
		}
		if err := tx.db.Exec("UPDATE tokens SET remain_quota = ? WHERE id = ?", quota, id).Error; err != nil {
			return err
		}
		t.RemainQuota = quota
		return tx.counted("tokens", id, counterDelta{"remain_quota": delta})
	})
	return t, err
}

// DeleteToken removes userID's token id; another user's token is
// ErrNotFound.
func (s *Store) DeleteToken(ctx context.Context, userID, id int64) error {
	return s.write(ctx, "delete token", func(tx *Tx) error {
		res := tx.db.Where("id = ? AND user_id = ?", id, userID).Delete(&Token{})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		return tx.changed("tokens", "DELETE", id)
	})
}
