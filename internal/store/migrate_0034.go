package store

import "gorm.io/gorm"

// migration0034 adds audit_logs, the trail of admin actions (issue 30 §4):
// who, when, from which address, what, on which target, and a masked
// detail of the request with the row before and after. The table is per
// node and never replicated (docs/cluster.md): each node records what it
// served. created_at is indexed for the list and the retention sweep.
func migration0034(db *gorm.DB) error {
	return db.AutoMigrate(&v34AuditEntry{})
}

// v34AuditEntry is audit_logs as this step creates it.
type v34AuditEntry struct {
	ID        int64  `gorm:"primaryKey;autoIncrement"`
	CreatedAt int64  `gorm:"autoCreateTime:false;not null;index"`
	UserID    int64  `gorm:"not null;default:0;index"`
	Username  string `gorm:"size:64;not null;default:''"`
	IP        string `gorm:"size:64;not null;default:''"`
	Action    string `gorm:"size:128;not null;default:'';index"`
	Target    string `gorm:"size:191;not null;default:''"`
	Detail    string `gorm:"type:text"`
}

func (v34AuditEntry) TableName() string { return "audit_logs" }
