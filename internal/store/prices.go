package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
	InputPrice        *float64
	OutputPrice       *float64
	CachedPrice       *float64
	CacheWritePrice   *float64
	CacheWrite1hPrice *float64
	// Tiers is the encoded tiers (EncodeTiers); "" removes them.
	Tiers           *string
	PerRequestPrice *float64
	BillingType     *string
	Enabled         *bool
	MaxOutputTokens *int64
}

func (p ModelPricePatch) columns() map[string]any {
	set := map[string]any{"updated_at": time.Now().Unix()}
	putPtr(set, "input_price", p.InputPrice)
	putPtr(set, "output_price", p.OutputPrice)
	putPtr(set, "cached_price", p.CachedPrice)
	putPtr(set, "cache_write_price", p.CacheWritePrice)
	putPtr(set, "cache_write_1h_price", p.CacheWrite1hPrice)
	putPtr(set, "tiers", p.Tiers)
	putPtr(set, "max_output_tokens", p.MaxOutputTokens)
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

// Price is the model price in the form pricing.Quota takes. Stored tiers
// that do not decode or validate (a row written by hand or by a peer that
// skipped validation) give an error: the price must not be used, for it
// would bill long prompts at the base price.
func (p ModelPrice) Price() (pricing.Price, error) {
	tiers, err := DecodeTiers(p.Tiers)
	if err != nil {
		return pricing.Price{}, fmt.Errorf("model price %d: %w", p.ID, err)
	}
	return pricing.Price{
		InputPrice: p.InputPrice, OutputPrice: p.OutputPrice, CachedPrice: p.CachedPrice,
		CacheWritePrice: p.CacheWritePrice, CacheWrite1hPrice: p.CacheWrite1hPrice,
		PerRequestPrice: p.PerRequestPrice, BillingType: p.BillingType, Tiers: tiers,
		MaxOutputTokens: p.MaxOutputTokens,
	}, nil
}

// storedTier is one tier as the tiers column holds it.
type storedTier struct {
	Above             int64   `json:"above_prompt_tokens"`
	InputPrice        float64 `json:"input_price"`
	OutputPrice       float64 `json:"output_price"`
	CachedPrice       float64 `json:"cached_price"`
	CacheWritePrice   float64 `json:"cache_write_price"`
	CacheWrite1hPrice float64 `json:"cache_write_1h_price"`
}

// EncodeTiers is the tiers column of tiers: "" for none, else a JSON array.
func EncodeTiers(tiers []pricing.Tier) string {
	if len(tiers) == 0 {
		return ""
	}
	out := make([]storedTier, len(tiers))
	for i, t := range tiers {
		out[i] = storedTier(t)
	}
	b, _ := json.Marshal(out) // finite numbers only (validated): cannot fail
	return string(b)
}

// DecodeTiers reads a tiers column strictly: "" is none; anything else must
// be a JSON array of tiers with no unknown field, valid by
// pricing.ValidateTiers.
func DecodeTiers(s string) ([]pricing.Tier, error) {
	if s == "" {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	var stored []storedTier
	if err := dec.Decode(&stored); err != nil {
		return nil, fmt.Errorf("decode tiers: %w", err)
	}
	if dec.More() {
		return nil, errors.New("decode tiers: trailing data")
	}
	tiers := make([]pricing.Tier, len(stored))
	for i, t := range stored {
		tiers[i] = pricing.Tier(t)
	}
	if msg := pricing.ValidateTiers(tiers); msg != "" {
		return nil, fmt.Errorf("invalid tiers: %s", msg)
	}
	if len(tiers) == 0 {
		return nil, nil
	}
	return tiers, nil
}

// Discounts converts group prices to the form pricing.Discount takes.
func Discounts(prices []GroupPrice) []pricing.GroupPrice {
	out := make([]pricing.GroupPrice, len(prices))
	for i, gp := range prices {
		out[i] = pricing.GroupPrice{Group: gp.GroupName, Model: gp.ModelName, Discount: gp.Discount}
	}
	return out
}
