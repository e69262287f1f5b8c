package store

import "gorm.io/gorm"

// migration0017 adds exact cache and tier pricing (issue 13 §3,
// docs/decisions/pricing-cache-tiers.md): on model_prices the 5-minute and
// 1-hour cache-write prices (0 = the input price, so older rows keep their
// billing) and the context-length tiers as a JSON array in a text column
// (empty = none); on logs the 5-minute and 1-hour cache-write token counts
// of a call (older rows: 0). Both tables replicate generically, so the new
// columns travel with their rows.
func migration0017(db *gorm.DB) error {
	m := db.Migrator()
	// Column by column and only when missing: MySQL commits DDL at once,
	// so a step interrupted there must be able to run again.
	for _, step := range []struct {
		model any
		field string
	}{
		{&v17ModelPrice{}, "CacheWritePrice"},
		{&v17ModelPrice{}, "CacheWrite1hPrice"},
		{&v17ModelPrice{}, "Tiers"},
		{&v17Log{}, "CacheWriteTokens"},
		{&v17Log{}, "CacheWrite1hTokens"},
	} {
		if m.HasColumn(step.model, step.field) {
			continue
		}
		if err := m.AddColumn(step.model, step.field); err != nil {
			return err
		}
	}
	return nil
}

// v17ModelPrice names the model_prices columns this step adds.
type v17ModelPrice struct {
	CacheWritePrice   float64 `gorm:"not null;default:0"`
	CacheWrite1hPrice float64 `gorm:"column:cache_write_1h_price;not null;default:0"`
	Tiers             string  `gorm:"type:text"`
}

func (v17ModelPrice) TableName() string { return "model_prices" }

// v17Log names the logs columns this step adds.
type v17Log struct {
	CacheWriteTokens   int64 `gorm:"not null;default:0"`
	CacheWrite1hTokens int64 `gorm:"column:cache_write_1h_tokens;not null;default:0"`
}

func (v17Log) TableName() string { return "logs" }
