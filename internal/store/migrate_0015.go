package store

import "gorm.io/gorm"

// migration0015 adds the tables of cluster replication (docs/cluster.md,
// Replication). They are per node and never replicated themselves:
//   - cluster_events: this node's outbox, one row per replicated change,
//     written in the change's transaction; ids are cluster-wide unique
//     (seq × 50 + node) and ascend in commit order.
//   - cluster_cursors: per peer node id, the last outbox event the peer
//     acknowledged.
//   - cluster_applied: per origin node id, the last of its events applied
//     here (each origin's events arrive in id order).
//   - cluster_versions: per replicated row, the version (time in µs, node)
//     of its last write, for last-writer-wins; deleted marks a tombstone.
//   - cluster_parked: delta events for rows that have not arrived yet.
func migration0015(db *gorm.DB) error {
	return db.AutoMigrate(&v15Event{}, &v15Cursor{}, &v15Applied{}, &v15Version{}, &v15Parked{})
}

type v15Event struct {
	ID         int64  `gorm:"primaryKey;autoIncrement:false"`
	TableName_ string `gorm:"column:table_name;size:64;not null"`
	Operation  string `gorm:"size:8;not null"`
	Kind       string `gorm:"size:8;not null;default:''"`
	PrimaryKey int64  `gorm:"not null;default:0"`
	RowKey     string `gorm:"size:191;not null;default:''"`
	Data       string `gorm:"type:text"`
	TimeUS     int64  `gorm:"column:time_us;not null"`
	CreatedAt  int64  `gorm:"not null;index"`
}

func (v15Event) TableName() string { return "cluster_events" }

type v15Cursor struct {
	NodeID    int   `gorm:"primaryKey;autoIncrement:false"`
	EventID   int64 `gorm:"not null;default:0"`
	UpdatedAt int64 `gorm:"not null;default:0"`
}

func (v15Cursor) TableName() string { return "cluster_cursors" }

type v15Applied struct {
	NodeID    int   `gorm:"primaryKey;autoIncrement:false"`
	EventID   int64 `gorm:"not null;default:0"`
	UpdatedAt int64 `gorm:"not null;default:0"`
}

func (v15Applied) TableName() string { return "cluster_applied" }

type v15Version struct {
	TableName_ string `gorm:"column:table_name;primaryKey;size:64"`
	RowKey     string `gorm:"primaryKey;size:191"`
	TimeUS     int64  `gorm:"column:time_us;not null"`
	NodeID     int    `gorm:"not null"`
	Deleted    bool   `gorm:"not null;default:false"`
}

func (v15Version) TableName() string { return "cluster_versions" }

type v15Parked struct {
	EventID    int64  `gorm:"primaryKey;autoIncrement:false"`
	TableName_ string `gorm:"column:table_name;size:64;not null;index:idx_parked_row,priority:1"`
	PrimaryKey int64  `gorm:"not null;index:idx_parked_row,priority:2"`
	Data       string `gorm:"type:text"`
	CreatedAt  int64  `gorm:"not null;default:0"`
}

func (v15Parked) TableName() string { return "cluster_parked" }
