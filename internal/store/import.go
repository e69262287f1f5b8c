package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ImportData is a deployment brought over from another gateway (one-api,
// new-api; package importer): rows with their ids set. Users, keys,
// channels and codes keep the source's ids (a client pinning a channel with
// sk-KEY-<id> keeps working); prices get new ones.
type ImportData struct {
	Users       []User
	Tokens      []Token
	Channels    []Channel
	ModelPrices []ModelPrice
	GroupPrices []GroupPrice
	Redemptions []Redemption
	Options     map[string]string
}

// ErrNotFresh is returned by Import when the target already holds data.
var ErrNotFresh = errors.New("the target database is not empty")

// importTables are the tables that must be empty for an import: a fresh
// database has none of their rows (migrations seed only group prices).
var importTables = []string{"users", "tokens", "channels", "redemptions", "logs", "model_prices", "orders", "user_plans"}

// LogSink takes one batch of imported logs (CreatedAt ascending across
// batches) inside the import's transaction.
type LogSink func(rows []Log) error

// Import writes d into an empty database in one transaction, then, when
// logs is set, calls it with a sink that adds logs batch by batch to the
// same transaction: nothing is written unless everything is.
func (s *Store) Import(ctx context.Context, d *ImportData, logs func(put LogSink) error) error {
	return s.InTx(ctx, func(tx *Tx) error {
		if err := tx.checkFresh(); err != nil {
			return err
		}
		if err := tx.importRows(d); err != nil {
			return err
		}
		if logs == nil {
			return nil
		}
		l := &LogLoader{s: s, cubes: newCubeSet(usageCubes), r: newRollup(), day: -1}
		if err := logs(func(rows []Log) error { return l.loadIn(tx, rows) }); err != nil {
			return err
		}
		return l.flush(tx)
	})
}

// CheckFresh reports ErrNotFresh (naming the first table with rows) when
// the database holds data an import would mix with.
func (s *Store) CheckFresh(ctx context.Context) error {
	return s.InTx(ctx, func(tx *Tx) error { return tx.checkFresh() })
}

func (tx *Tx) checkFresh() error {
	for _, t := range importTables {
		var n int64
		if err := tx.db.Table(t).Count(&n).Error; err != nil {
			return fmt.Errorf("count %s: %w", t, err)
		}
		if n > 0 {
			return fmt.Errorf("%w: table %s has %d rows", ErrNotFresh, t, n)
		}
	}
	return nil
}

func (tx *Tx) importRows(d *ImportData) error {
	now := time.Now().Unix()
	for i := range d.Users {
		d.Users[i].CreatedAt, d.Users[i].UpdatedAt = now, now
		if d.Users[i].SessionVersion == 0 {
			d.Users[i].SessionVersion = 1
		}
	}
	if err := insertKept(tx, "users", d.Users, func(u *User) int64 { return u.ID }); err != nil {
		return err
	}
	if err := insertKept(tx, "tokens", d.Tokens, func(t *Token) int64 { return t.ID }); err != nil {
		return err
	}
	for i := range d.Channels {
		c := &d.Channels[i]
		weight := c.Weight
		if err := tx.db.Create(c).Error; err != nil {
			return fmt.Errorf("insert channel %d: %w", c.ID, err)
		}
		if err := tx.keepZeroWeight(&Channel{}, "id", c.ID, weight); err != nil {
			return err
		}
		c.Weight = weight
		if err := tx.changed("channels", "INSERT", c.ID); err != nil {
			return err
		}
		if err := tx.rebuildAbilities(c); err != nil {
			return fmt.Errorf("abilities of channel %d: %w", c.ID, err)
		}
	}
	if err := raiseTo(tx, "channels", d.Channels, func(c *Channel) int64 { return c.ID }); err != nil {
		return err
	}
	if err := insertKept(tx, "redemptions", d.Redemptions, func(r *Redemption) int64 { return r.ID }); err != nil {
		return err
	}
	for i := range d.ModelPrices {
		p := &d.ModelPrices[i]
		if err := insertRow(tx, "model_prices", p, func(id, now int64) { p.ID, p.CreatedAt, p.UpdatedAt = id, now, now }); err != nil {
			return fmt.Errorf("insert price of %s: %w", p.ModelName, err)
		}
	}
	for i := range d.GroupPrices {
		p := &d.GroupPrices[i]
		// The seeded 1.0 discounts (migration 0002) give way to the source's.
		if err := tx.db.Where("group_name = ? AND model_name = ?", p.GroupName, p.ModelName).Delete(&GroupPrice{}).Error; err != nil {
			return err
		}
		if err := insertRow(tx, "group_prices", p, func(id, now int64) { p.ID, p.CreatedAt, p.UpdatedAt = id, now, now }); err != nil {
			return fmt.Errorf("insert group price of %s: %w", p.GroupName, err)
		}
	}
	for k, v := range d.Options {
		if err := tx.db.Create(&Option{Key: k, Value: v, UpdatedAt: now}).Error; err != nil {
			return fmt.Errorf("insert option %s: %w", k, err)
		}
		if err := tx.changedKey("options", "UPDATE", k); err != nil {
			return err
		}
	}
	return nil
}

// insertKept inserts rows with the ids they carry, in batches, and raises
// the table's id counter past the largest, so later rows never collide.
func insertKept[T any](tx *Tx, table string, rows []T, id func(*T) int64) error {
	if len(rows) == 0 {
		return nil
	}
	if err := tx.db.CreateInBatches(rows, 200).Error; err != nil {
		return fmt.Errorf("insert %s: %w", table, err)
	}
	for i := range rows {
		if err := tx.changed(table, "INSERT", id(&rows[i])); err != nil {
			return err
		}
	}
	return raiseTo(tx, table, rows, id)
}

// raiseTo sets table's counter so the next allocated id is above every id
// of rows, whatever the node (an id is seq×idStride + node).
func raiseTo[T any](tx *Tx, table string, rows []T, id func(*T) int64) error {
	var most int64
	for i := range rows {
		most = max(most, id(&rows[i]))
	}
	return tx.raiseSequence(table, most/idStride+1)
}

// loadIn is Load inside the caller's transaction, with each row's content
// (an imported top-up or admin log has its text there) and its own id.
func (l *LogLoader) loadIn(tx *Tx, rows []Log) error {
	if len(rows) == 0 {
		return nil
	}
	if err := l.insert(tx, rows, true); err != nil {
		return err
	}
	return raiseTo(tx, "logs", rows, func(r *Log) int64 { return r.ID })
}
