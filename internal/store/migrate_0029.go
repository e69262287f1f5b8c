package store

import "gorm.io/gorm"

// migration0029 adds channels.other (issue 28 §2): the setting of a channel
// type that one-api keeps in its "other" field — Azure OpenAI's api-version,
// Vertex AI's region. Existing channels get ” (their types have none). The
// table replicates generically, so the column travels with its rows.
func migration0029(db *gorm.DB) error {
	m := db.Migrator()
	if m.HasColumn(&v29Channel{}, "Other") {
		return nil // MySQL commits DDL at once: an interrupted step runs again
	}
	return m.AddColumn(&v29Channel{}, "Other")
}

// v29Channel names the channels column this step adds.
type v29Channel struct {
	Other string `gorm:"column:other;size:512;not null;default:''"`
}

func (v29Channel) TableName() string { return "channels" }
