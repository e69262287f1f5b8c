package store

import "gorm.io/gorm"

// migration0030 adds key pools and per-model output limits (issue 28 §4,
// docs/decisions/channels.md): on channels the keys of the pool taken out
// after a refusal, as a JSON array of {id, reason, time} in a text column
// (empty = none); on model_prices the model's output limit in tokens (0 =
// unknown: the DefaultCompletionSize option applies). Both tables replicate
// generically, so the new columns travel with their rows.
func migration0030(db *gorm.DB) error {
	m := db.Migrator()
	// Column by column and only when missing: MySQL commits DDL at once.
	for _, step := range []struct {
		model any
		field string
	}{
		{&v27Channel{}, "DisabledKeys"},
		{&v27ModelPrice{}, "MaxOutputTokens"},
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

type v27Channel struct {
	DisabledKeys string `gorm:"type:text"`
}

func (v27Channel) TableName() string { return "channels" }

type v27ModelPrice struct {
	MaxOutputTokens int64 `gorm:"not null;default:0"`
}

func (v27ModelPrice) TableName() string { return "model_prices" }
