package store

import (
	"context"
	"time"

	"github.com/modelgate/modelgate/internal/pricing"
)

// ModelPrices returns every model price, newest first.
func (s *Store) ModelPrices(ctx context.Context) ([]ModelPrice, error) {
	var prices []ModelPrice
	err := s.read(ctx).Order("id DESC").Find(&prices).Error
	return prices, wrap("list model prices", err)
}

// ModelPriceByName returns the price of model, enabled or not (the relay
// decides what a disabled price means). The name must match exactly: MySQL's
// default collation compares case- and trailing-space-insensitively, and a
// price must not apply to a model it was not set for.
func (s *Store) ModelPriceByName(ctx context.Context, name string) (ModelPrice, error) {
	var prices []ModelPrice
	if err := s.read(ctx).Where("model_name = ?", name).Find(&prices).Error; err != nil {
		return ModelPrice{}, wrap("get model price", err)
	}
	for _, p := range prices {
		if p.ModelName == name {
			return p, nil
		}
	}
	return ModelPrice{}, wrap("get model price", ErrNotFound)
}

// CreateModelPrice inserts p, allocating its id and timestamps. A taken
// model name gives a *DuplicateError carrying the database's text.
func (s *Store) CreateModelPrice(ctx context.Context, p *ModelPrice) error {
	return s.write(ctx, "create model price", func(tx *Tx) error {
		return insertRow(tx, "model_prices", p, func(id, now int64) { p.ID, p.CreatedAt, p.UpdatedAt = id, now, now })
	})
}

// ModelPricePatch lists the model price fields an update may change; nil
// means unchanged. The model name is not among them: it identifies the price.
type ModelPricePatch struct {
	InputPrice      *float64
	OutputPrice     *float64
	CachedPrice     *float64
	PerRequestPrice *float64
	BillingType     *string
	Enabled         *bool
}

func (p ModelPricePatch) columns() map[string]any {
	set := map[string]any{"updated_at": time.Now().Unix()}
	putPtr(set, "input_price", p.InputPrice)
	putPtr(set, "output_price", p.OutputPrice)
	putPtr(set, "cached_price", p.CachedPrice)
	putPtr(set, "per_request_price", p.PerRequestPrice)
	putPtr(set, "billing_type", p.BillingType)
	putPtr(set, "enabled", p.Enabled)
	return set
}

// UpdateModelPrice applies p to model price id and returns the row as
// updated; an unknown id gives ErrNotFound.
func (s *Store) UpdateModelPrice(ctx context.Context, id int64, p ModelPricePatch) (ModelPrice, error) {
	var mp ModelPrice
	err := s.write(ctx, "update model price", func(tx *Tx) error {
		return tx.updateRow(&mp, "model_prices", id, p.columns())
	})
	return mp, err
}

// DeleteModelPrice removes model price id; an unknown id gives ErrNotFound.
func (s *Store) DeleteModelPrice(ctx context.Context, id int64) error {
	return s.write(ctx, "delete model price", func(tx *Tx) error {
		return tx.deleteRow(&ModelPrice{}, "model_prices", id)
	})
}

// GroupPrices returns every group price, newest first.
func (s *Store) GroupPrices(ctx context.Context) ([]GroupPrice, error) {
	var prices []GroupPrice
	err := s.read(ctx).Order("id DESC").Find(&prices).Error
	return prices, wrap("list group prices", err)
}

// CreateGroupPrice inserts p, allocating its id and timestamps. A taken
// (group, model) pair gives a *DuplicateError carrying the database's text.
func (s *Store) CreateGroupPrice(ctx context.Context, p *GroupPrice) error {
	return s.write(ctx, "create group price", func(tx *Tx) error {
		return insertRow(tx, "group_prices", p, func(id, now int64) { p.ID, p.CreatedAt, p.UpdatedAt = id, now, now })
	})
}

// GroupPricePatch lists the group price fields an update may change; nil
// means unchanged.
type GroupPricePatch struct {
	GroupName *string
	ModelName *string
	Discount  *float64
}

// UpdateGroupPrice applies p to group price id and returns the row as
// updated; an unknown id gives ErrNotFound, a taken (group, model) pair a
// *DuplicateError.
func (s *Store) UpdateGroupPrice(ctx context.Context, id int64, p GroupPricePatch) (GroupPrice, error) {
	set := map[string]any{"updated_at": time.Now().Unix()}
	putPtr(set, "group_name", p.GroupName)
	putPtr(set, "model_name", p.ModelName)
	putPtr(set, "discount", p.Discount)
	var gp GroupPrice
	err := s.write(ctx, "update group price", func(tx *Tx) error {
		return tx.updateRow(&gp, "group_prices", id, set)
	})
	return gp, err
}

// DeleteGroupPrice removes group price id; an unknown id gives ErrNotFound.
func (s *Store) DeleteGroupPrice(ctx context.Context, id int64) error {
	return s.write(ctx, "delete group price", func(tx *Tx) error {
		return tx.deleteRow(&GroupPrice{}, "group_prices", id)
	})
}

// updateRow locks row id of table, applies set and reads the row back into
// dst. The row is read first because MySQL reports matched-but-unchanged
// rows as not affected, which must not look like a missing row.
func (tx *Tx) updateRow(dst any, table string, id int64, set map[string]any) error {
	if err := tx.forUpdate().Where("id = ?", id).Take(dst).Error; err != nil {
		return err
	}
	if err := tx.db.Model(dst).Where("id = ?", id).Updates(set).Error; err != nil {
		return err
	}
	if err := tx.db.Where("id = ?", id).Take(dst).Error; err != nil {
		return err
	}
	return tx.changed(table, "UPDATE", id)
}

// deleteRow deletes row id of table; none gives ErrNotFound.
func (tx *Tx) deleteRow(model any, table string, id int64) error {
	res := tx.db.Where("id = ?", id).Delete(model)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return tx.changed(table, "DELETE", id)
}

// putPtr sets column col to *v when v is not nil.
func putPtr[T any](set map[string]any, col string, v *T) {
	if v != nil {
		set[col] = *v
	}
}

// Price is the model price in the form pricing.Quota takes.
func (p ModelPrice) Price() pricing.Price {
	return pricing.Price{
		InputPrice: p.InputPrice, OutputPrice: p.OutputPrice, CachedPrice: p.CachedPrice,
		PerRequestPrice: p.PerRequestPrice, BillingType: p.BillingType,
	}
}

// Discounts converts group prices to the form pricing.Discount takes.
func Discounts(prices []GroupPrice) []pricing.GroupPrice {
	out := make([]pricing.GroupPrice, len(prices))
	for i, gp := range prices {
		out[i] = pricing.GroupPrice{Group: gp.GroupName, Model: gp.ModelName, Discount: gp.Discount}
	}
	return out
}
