package store

import "gorm.io/gorm"

// migration0007 lets logs carry failed relay calls (LogError): the HTTP
// status and the relay's error code as columns, so admins filter on them,
// and the upstream's message (secrets removed) apart from content, which
// is the message the client got, so a user's view can leave it out. The
// (type, created_at) index serves the admin's type=5 lists and the
// retention sweep, which deletes old error rows only. Older rows keep
// status 0 and an empty code.
func migration0007(db *gorm.DB) error {
	m := db.Migrator()
	// Column by column and only when missing: MySQL commits DDL at once,
	// so a step interrupted there must be able to run again.
	for _, col := range []string{"Status", "ErrorCode", "UpstreamMessage"} {
		if m.HasColumn(&v7Log{}, col) {
			continue
		}
		if err := m.AddColumn(&v7Log{}, col); err != nil {
			return err
		}
	}
	if m.HasIndex(&v7Log{}, "idx_log_type_time") {
		return nil
	}
	return m.CreateIndex(&v7Log{}, "idx_log_type_time")
}

// v7Log names the logs columns this step adds or indexes; the others are
// untouched.
type v7Log struct {
	Type            int    `gorm:"not null;index:idx_log_type_time,priority:1"`
	CreatedAt       int64  `gorm:"autoCreateTime:false;not null;index:idx_log_type_time,priority:2"`
	Status          int    `gorm:"not null;default:0"`
	ErrorCode       string `gorm:"size:64;not null;default:''"`
	UpstreamMessage string `gorm:"type:text"`
}

func (v7Log) TableName() string { return "logs" }
