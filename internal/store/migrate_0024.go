package store

import "gorm.io/gorm"

// migration0024 adds channels.setting (issue 28 §3): a JSON object of
// per-channel options as new-api stores it, of which modelgate reads
// responses_api (channel.NormalizeSetting). Older rows: empty, the
// defaults. channels replicate generically, so the column travels with
// its rows.
func migration0024(db *gorm.DB) error {
	m := db.Migrator()
	if m.HasColumn(&v24Channel{}, "Setting") {
		return nil // MySQL commits DDL at once: a step cut short runs again
	}
	return m.AddColumn(&v24Channel{}, "Setting")
}

// v24Channel names the channels column this step adds.
type v24Channel struct {
	Setting string `gorm:"type:text"`
}

func (v24Channel) TableName() string { return "channels" }
