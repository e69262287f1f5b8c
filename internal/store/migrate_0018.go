package store

import "gorm.io/gorm"

// migration0018 adds a key's rate limits (issue 13 §1,
// docs/decisions/rate-limits.md): requests per minute, tokens per minute
// and calls in flight, 0 = none, so existing keys stay unlimited. The
// tokens table replicates generically, so the columns travel with it.
func migration0018(db *gorm.DB) error {
	m := db.Migrator()
	// Column by column and only when missing: MySQL commits DDL at once,
	// so a step interrupted there must be able to run again.
	for _, field := range []string{"RPMLimit", "TPMLimit", "ConcurrencyLimit"} {
		if m.HasColumn(&v18Token{}, field) {
			continue
		}
		if err := m.AddColumn(&v18Token{}, field); err != nil {
			return err
		}
	}
	return nil
}

// v18Token names the tokens columns this step adds.
type v18Token struct {
	RPMLimit         int64 `gorm:"column:rpm_limit;not null;default:0"`
	TPMLimit         int64 `gorm:"column:tpm_limit;not null;default:0"`
	ConcurrencyLimit int64 `gorm:"column:concurrency_limit;not null;default:0"`
}

func (v18Token) TableName() string { return "tokens" }
