package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// JoinToken is a single-use permission for one peer to pull this node's
// snapshot (migration 0023). Per node, never replicated and never in a
// snapshot; only the SHA-256 of the token is kept.
type JoinToken struct {
	ID        int64  `gorm:"primaryKey;autoIncrement"`
	TokenHash string `gorm:"size:64;not null;uniqueIndex"`
	NodeID    int    `gorm:"not null"`
	ExpiresAt int64  `gorm:"not null"`
	UsedAt    int64  `gorm:"not null;default:0"`
	CreatedAt int64  `gorm:"not null;default:0"`
}

// TableName is the table of JoinToken.
func (JoinToken) TableName() string { return "cluster_join_tokens" }

// hashJoinToken is the stored form of a token.
func hashJoinToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// CreateJoinToken stores token for peer nodeID, valid until expires. Tokens
// expired a day ago are deleted on the way.
func (s *Store) CreateJoinToken(ctx context.Context, token string, nodeID int, expires time.Time) error {
	now := time.Now().Unix()
	return s.write(ctx, "create join token", func(tx *Tx) error {
		if err := tx.db.Where("expires_at < ?", now-86400).Delete(&JoinToken{}).Error; err != nil {
			return err
		}
		return tx.db.Create(&JoinToken{TokenHash: hashJoinToken(token), NodeID: nodeID,
			ExpiresAt: expires.Unix(), CreatedAt: now}).Error
	})
}

// UseJoinToken spends token for peer nodeID at now: it must exist, be bound
// to nodeID, unexpired and unused. One conditional UPDATE marks it used, so
// of two uses at once exactly one succeeds. Any other token is
// ErrNotFound.
func (s *Store) UseJoinToken(ctx context.Context, token string, nodeID int, now time.Time) error {
	if token == "" {
		return wrap("use join token", ErrNotFound)
	}
	return s.write(ctx, "use join token", func(tx *Tx) error {
		res := tx.db.Model(&JoinToken{}).
			Where("token_hash = ? AND node_id = ? AND used_at = 0 AND expires_at > ?", hashJoinToken(token), nodeID, now.Unix()).
			Update("used_at", now.Unix())
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return ErrNotFound
		}
		return nil
	})
}
