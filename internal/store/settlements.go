package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
)

// SettlementKey records that the settlement with this key was applied. Keys
// are pruned after SettlementKeyRetention, except those of dead letters.
type SettlementKey struct {
	SettleKey string `gorm:"primaryKey;size:64"`
	CreatedAt int64  `gorm:"autoCreateTime:false;not null;index"`
}

func (SettlementKey) TableName() string { return "settlement_keys" }

// SettlementKeyRetention is how long the key of an applied settlement is
// kept: far longer than any retry of a commit.
const SettlementKeyRetention = 24 * time.Hour

// DeadLetter is a settlement the ledger could not commit after its retries,
// parked with its last error until an admin replays it. Op is the whole
// SettleOp as JSON (consume log included), so a replay charges exactly what
// the call would have been charged.
type DeadLetter struct {
	ID        int64  `gorm:"primaryKey;autoIncrement:false"`
	SettleKey string `gorm:"size:64;not null;default:'';index"`
	UserID    int64  `gorm:"not null"`
	TokenID   int64  `gorm:"not null;default:0"`
	ChannelID int64  `gorm:"not null;default:0"`
	Held      int64  `gorm:"not null;default:0"`
	Cost      int64  `gorm:"not null;default:0"`
	Attempts  int    `gorm:"not null;default:0"`
	Error     string `gorm:"type:text"`
	Op        string `gorm:"type:text"`
	CreatedAt int64  `gorm:"autoCreateTime:false;not null;index"`
	UpdatedAt int64  `gorm:"autoUpdateTime:false;not null;default:0"`
}

func (DeadLetter) TableName() string { return "billing_dead_letters" }

// SettleOp decodes the parked settlement.
func (d *DeadLetter) SettleOp() (SettleOp, error) {
	var op SettleOp
	if err := json.Unmarshal([]byte(d.Op), &op); err != nil {
		return SettleOp{}, fmt.Errorf("dead letter %d: decode settlement: %w", d.ID, err)
	}
	return op, nil
}

// charges says whether op moves money or writes a log, i.e. whether
// applying it twice would be wrong. A bare release is idempotent already:
// its reservation row is deleted by the first one (closeReservations).
func charges(op *SettleOp) bool { return op.Key != "" && (op.Cost != 0 || op.Log != nil) }

// skipApplied returns a copy of ops without those whose key was applied
// already (in an earlier transaction or earlier in ops) and records the keys
// of the rest in this transaction: on PostgreSQL one INSERT that returns
// what it recorded, elsewhere one SELECT and one INSERT per batch.
//
// SQLite records no keys: its database lives in this process, so a COMMIT
// either returned success or did not happen, and no acknowledgement can be
// lost between them. The keys guard server databases only, and on SQLite
// they cost as much CPU as the consume log insert itself (docs/performance.md).
func (tx *Tx) skipApplied(ops []SettleOp) ([]SettleOp, error) {
	if tx.s.dialect == SQLite {
		return append([]SettleOp(nil), ops...), nil
	}
	var keys []string
	for i := range ops {
		if charges(&ops[i]) {
			keys = append(keys, ops[i].Key)
		}
	}
	if len(keys) == 0 {
		return append([]SettleOp(nil), ops...), nil
	}
	slices.Sort(keys) // also a fixed order of the key index's locks
	keys = slices.Compact(keys)
	now := time.Now().Unix()
	var fresh map[string]bool // the keys this transaction recorded
	var err error
	if tx.s.dialect == Postgres {
		fresh, err = tx.recordKeysPostgres(keys, now)
	} else {
		fresh, err = tx.recordKeys(keys, now)
	}
	if err != nil {
		return nil, err
	}
	out := make([]SettleOp, 0, len(ops))
	for _, op := range ops {
		if charges(&op) {
			if !fresh[op.Key] {
				continue // applied before, or earlier in ops
			}
			delete(fresh, op.Key)
		}
		out = append(out, op)
	}
	return out, nil
}

// recordKeysPostgres records keys in one statement and returns those it
// recorded: a key recorded already, by an earlier transaction or a
// concurrent one that commits first, conflicts and is left out.
func (tx *Tx) recordKeysPostgres(keys []string, now int64) (map[string]bool, error) {
	rows, err := tx.queryDirect("INSERT INTO settlement_keys (settle_key, created_at) SELECT k, $2 FROM unnest($1::text[]) AS k "+
		"ON CONFLICT (settle_key) DO NOTHING RETURNING settle_key", keys, now)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	fresh := make(map[string]bool, len(keys))
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		fresh[k] = true
	}
	return fresh, rows.Err()
}

// recordKeys finds which of the distinct keys were recorded already and
// records the rest: one SELECT, and one plain multi-row INSERT per 200 keys.
func (tx *Tx) recordKeys(keys []string, now int64) (map[string]bool, error) {
	var applied []string
	if err := tx.db.Model(&SettlementKey{}).Where("settle_key IN ?", keys).Pluck("settle_key", &applied).Error; err != nil {
		return nil, err
	}
	fresh := make(map[string]bool, len(keys))
	for _, k := range keys {
		fresh[k] = true
	}
	for _, k := range applied {
		delete(fresh, k)
	}
	rows := make([]string, 0, len(fresh))
	for _, k := range keys { // distinct already
		if fresh[k] {
			rows = append(rows, k)
		}
	}
	err := tx.execRows("INSERT INTO settlement_keys (settle_key, created_at) VALUES ", 2, len(rows),
		func(args []any, i int) []any { return append(args, rows[i], now) })
	if err != nil {
		return nil, err
	}
	return fresh, nil
}

// PruneSettlementKeys deletes the keys of settlements applied before cutoff
// (unix seconds), keeping those of parked settlements: their replay must
// stay idempotent however late it comes.
func (s *Store) PruneSettlementKeys(ctx context.Context, cutoff int64) (int64, error) {
	var n int64
	err := s.write(ctx, "prune settlement keys", func(tx *Tx) error {
		res := tx.db.Exec("DELETE FROM settlement_keys WHERE created_at < ? AND settle_key NOT IN (SELECT settle_key FROM billing_dead_letters)", cutoff)
		n = res.RowsAffected
		return res.Error
	})
	return n, err
}

// ParkSettlement stores op as a dead letter with the error that kept it from
// committing and returns its id. In the same transaction the hold of op is
// given back (the parked op then holds nothing), so a user is not kept
// short while the settlement waits; when even that fails, op is parked as
// it is, hold included.
func (s *Store) ParkSettlement(ctx context.Context, op SettleOp, attempts int, cause string) (int64, error) {
	var id int64
	cause = storableText(cause)
	park := func(release bool) error {
		return s.write(ctx, "park settlement", func(tx *Tx) error {
			op := op // a retried transaction starts again from the caller's op
			if op.Slice && !op.EndSlice {
				// The slice serves other calls and is not this op's to
				// give back: a replay charges the balance itself.
				op.Held, op.ReservationID, op.Slice = 0, 0, false
			}
			if release && (op.Held != 0 || op.ReservationID != 0) {
				if err := tx.settle([]SettleOp{{UserID: op.UserID, TokenID: op.TokenID, TokenLimited: op.TokenLimited,
					Held: op.Held, ReservationID: op.ReservationID, Slice: op.Slice, EndSlice: op.EndSlice}}); err != nil {
					return err
				}
				op.Held, op.ReservationID, op.Slice, op.EndSlice = 0, 0, false, false
			}
			if op.Usage != nil && op.Usage.Slice && !op.Usage.Release {
				// Its slice serves other calls: a replay counts a whole use.
				u := *op.Usage
				u.HoldKey, u.Slice = "", false
				op.Usage = &u
			}
			if release && op.Usage != nil && op.Usage.HoldKey != "" {
				// The plan usage hold goes back too; a replay then adds the
				// whole use (UsageSettle without a hold).
				if _, err := tx.closeUsage(op.Usage.HoldKey, true, 0); err != nil {
					return err
				}
				u := *op.Usage
				u.HoldKey = ""
				op.Usage = &u
			}
			buf, err := json.Marshal(op)
			if err != nil {
				return err
			}
			id, err = tx.allocIDs("billing_dead_letters", 1)
			if err != nil {
				return err
			}
			now := time.Now().Unix()
			return tx.db.Create(&DeadLetter{ID: id, SettleKey: op.Key, UserID: op.UserID, TokenID: op.TokenID,
				ChannelID: op.ChannelID, Held: op.Held, Cost: op.Cost, Attempts: attempts, Error: cause,
				Op: string(buf), CreatedAt: now, UpdatedAt: now}).Error
		})
	}
	if err := park(true); err != nil {
		if err2 := park(false); err2 != nil {
			return 0, errors.Join(err, err2)
		}
	}
	return id, nil
}

// storableText makes an error text safe for every engine's text column: it
// may quote the bad bytes that broke the settlement (invalid UTF-8, NUL),
// and a dead letter must not fail to be written for the same reason.
func storableText(s string) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
	if len(s) > 4000 {
		s = strings.ToValidUTF8(s[:4000], "")
	}
	return s
}

// ListDeadLetters returns parked settlements, oldest first, and their count.
func (s *Store) ListDeadLetters(ctx context.Context, p Page) ([]DeadLetter, int64, error) {
	q := s.read(ctx).Model(&DeadLetter{})
	var total int64
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, wrap("count dead letters", err)
	}
	var rows []DeadLetter
	err := p.apply(q.Order("id")).Find(&rows).Error
	return rows, total, wrap("list dead letters", err)
}

// ReplayDeadLetter applies the parked settlement id and deletes it in one
// transaction. Its key makes this idempotent: a settlement that had in fact
// committed charges nothing more. When it fails again, the row stays with
// the new error and one more attempt, and the error is returned.
// ErrNotFound when there is no such dead letter.
func (s *Store) ReplayDeadLetter(ctx context.Context, id int64) error {
	err := s.InTx(ctx, func(tx *Tx) error {
		var row DeadLetter
		if err := tx.forUpdate().Where("id = ?", id).Take(&row).Error; err != nil {
			return err
		}
		op, err := row.SettleOp()
		if err != nil {
			return err
		}
		tx.outsideLedger = true
		if err := tx.settle([]SettleOp{op}); err != nil {
			return err
		}
		return tx.db.Delete(&DeadLetter{}, id).Error
	})
	if err == nil {
		return nil
	}
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return fmt.Errorf("replay dead letter %d: %w", id, ErrNotFound)
	}
	update := s.write(ctx, "record replay failure", func(tx *Tx) error {
		return tx.db.Model(&DeadLetter{}).Where("id = ?", id).Updates(map[string]any{
			"attempts": gorm.Expr("attempts + 1"), "error": storableText(err.Error()), "updated_at": time.Now().Unix()}).Error
	})
	return errors.Join(wrap("replay dead letter", err), update)
}
