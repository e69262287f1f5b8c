package store

import (
	"context"
	"fmt"
	"time"
)

// Sign-in provider columns of users (migration 0031).
const (
	ProviderGitHub = "github_id"
	ProviderOIDC   = "oidc_id"
)

func providerColumn(provider string) (string, error) {
	switch provider {
	case ProviderGitHub, ProviderOIDC:
		return provider, nil
	}
	return "", fmt.Errorf("unknown sign-in provider column %q", provider)
}

// UserByProvider returns the user bound to subject at provider
// (ProviderGitHub, ProviderOIDC), deleted or not.
func (s *Store) UserByProvider(ctx context.Context, provider, subject string) (User, error) {
	col, err := providerColumn(provider)
	if err != nil {
		return User{}, err
	}
	var u User
	err = s.read(ctx).Where(col+" = ?", subject).Take(&u).Error
	return u, wrap("get user by "+col, err)
}

// BindProvider binds subject at provider to user id. A subject bound to
// another user is ErrDuplicate (the unique index decides, also between
// parallel binds).
func (s *Store) BindProvider(ctx context.Context, id int64, provider, subject string) error {
	col, err := providerColumn(provider)
	if err != nil {
		return err
	}
	return s.write(ctx, "bind "+col, func(tx *Tx) error {
		res := tx.db.Model(&User{}).Where("id = ?", id).Updates(map[string]any{col: subject, "updated_at": time.Now().Unix()})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		return tx.changed("users", "UPDATE", id)
	})
}
