package store

import (
	"context"
	"errors"
	"time"
)

// IdempotencyWindow is how long the first answer to an idempotency key is
// kept: a retry within it gets that answer and changes nothing.
const IdempotencyWindow = 24 * time.Hour

// ErrIdempotencyMismatch refuses a key that was first used with a different
// request.
var ErrIdempotencyMismatch = errors.New("idempotency key used with a different request")

// IdempotencyKey names one request a client may retry: the key the client
// chose, scoped to the caller and the route, with a hash of the request so a
// reuse for something else is refused rather than answered.
type IdempotencyKey struct {
	CallerID    int64
	Route       string
	Key         string
	RequestHash string
}

// Answer is a stored HTTP answer.
type Answer struct {
	Status int
	Body   []byte
}

// idempotencyRecord is a row of idempotency_keys (migration 0005).
type idempotencyRecord struct {
	CallerID    int64  `gorm:"primaryKey;autoIncrement:false"`
	Route       string `gorm:"primaryKey"`
	IdemKey     string `gorm:"primaryKey"`
	RequestHash string
	Status      int
	Response    string
	CreatedAt   int64 `gorm:"autoCreateTime:false"`
}

func (idempotencyRecord) TableName() string { return "idempotency_keys" }

// errKeyTaken: another request recorded the key first.
var errKeyTaken = errors.New("idempotency key taken")

// RunIdempotent runs fn once per key: the key is recorded in fn's
// transaction, with the answer fn returns, so the key and what fn wrote
// commit together or not at all. A key already recorded within
// IdempotencyWindow returns its first answer with replayed set and fn is not
// run; concurrent requests with one key wait for the first (the key's row is
// unique) and then get its answer. When fn fails nothing is recorded, so the
// request may be retried with the same key.
func (s *Store) RunIdempotent(ctx context.Context, k IdempotencyKey, fn func(tx *Tx) (Answer, error)) (ans Answer, replayed bool, err error) {
	if ans, ok, err := s.storedAnswer(ctx, k); err != nil || ok {
		return ans, ok, err
	}
	err = s.InTx(ctx, func(tx *Tx) error {
		row := idempotencyRecord{CallerID: k.CallerID, Route: k.Route, IdemKey: k.Key, RequestHash: k.RequestHash, CreatedAt: time.Now().Unix()}
		if err := tx.db.Create(&row).Error; err != nil {
			if isUniqueViolation(err) {
				return errKeyTaken
			}
			return err
		}
		if ans, err = fn(tx); err != nil {
			return err
		}
		return tx.db.Model(&idempotencyRecord{}).
			Where("caller_id = ? AND route = ? AND idem_key = ?", k.CallerID, k.Route, k.Key).
			Updates(map[string]any{"status": ans.Status, "response": string(ans.Body)}).Error
	})
	if errors.Is(err, errKeyTaken) {
		ans, ok, err := s.storedAnswer(ctx, k)
		if err == nil && !ok {
			err = wrap("idempotent request", errKeyTaken) // gone again: pruned between the two reads
		}
		return ans, true, err
	}
	return ans, false, err
}

// storedAnswer returns the answer recorded for k within the window. A key
// past its window (the prune has not run yet) is deleted, so it can be used
// again. That is a statement of its own, not part of the credit's
// transaction: on MySQL a DELETE that matches nothing takes a gap lock,
// which would make concurrent inserts of other keys deadlock.
func (s *Store) storedAnswer(ctx context.Context, k IdempotencyKey) (Answer, bool, error) {
	var rows []idempotencyRecord
	err := s.read(ctx).Where("caller_id = ? AND route = ? AND idem_key = ?", k.CallerID, k.Route, k.Key).
		Limit(1).Find(&rows).Error
	if err != nil || len(rows) == 0 {
		return Answer{}, false, wrap("read idempotency key", err)
	}
	if cutoff := time.Now().Add(-IdempotencyWindow).Unix(); rows[0].CreatedAt < cutoff {
		err := s.write(ctx, "expire idempotency key", func(tx *Tx) error {
			return tx.db.Where("caller_id = ? AND route = ? AND idem_key = ? AND created_at < ?",
				k.CallerID, k.Route, k.Key, cutoff).Delete(&idempotencyRecord{}).Error
		})
		return Answer{}, false, err
	}
	if rows[0].RequestHash != k.RequestHash {
		return Answer{}, false, ErrIdempotencyMismatch
	}
	return Answer{Status: rows[0].Status, Body: []byte(rows[0].Response)}, true, nil
}

// PruneIdempotencyKeys deletes keys older than IdempotencyWindow and
// returns how many.
func (s *Store) PruneIdempotencyKeys(ctx context.Context) (int64, error) {
	var n int64
	err := s.write(ctx, "prune idempotency keys", func(tx *Tx) error {
		res := tx.db.Where("created_at < ?", time.Now().Add(-IdempotencyWindow).Unix()).Delete(&idempotencyRecord{})
		n = res.RowsAffected
		return res.Error
	})
	return n, err
}
