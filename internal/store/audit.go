package store

import (
	"context"
	"time"
)

// AuditEntry is one admin action in the audit trail (migration 0034): the
// caller, the address, the action (method and route), its target and a
// JSON detail whose secrets the recorder masked before it got here.
type AuditEntry struct {
	ID        int64 `gorm:"primaryKey;autoIncrement"`
	CreatedAt int64 `gorm:"autoCreateTime:false"`
	UserID    int64
	Username  string
	IP        string
	Action    string
	Target    string
	Detail    string
}

func (AuditEntry) TableName() string { return "audit_logs" }

// AuditFilter narrows the audit list; zero values match everything. Start
// and End are inclusive Unix seconds.
type AuditFilter struct {
	UserID     int64
	Username   string
	Action     string // a substring of the action ("PUT /api/channel/", "channel")
	Target     string // exact
	Start, End int64
}

// InsertAudit appends e to the trail. The table is local to the node: no
// change event is recorded.
func (s *Store) InsertAudit(ctx context.Context, e *AuditEntry) error {
	return s.write(ctx, "insert audit entry", func(tx *Tx) error { return tx.db.Create(e).Error })
}

// ListAudit answers a page of the trail, newest first, and the count of
// entries the filter matches.
func (s *Store) ListAudit(ctx context.Context, f AuditFilter, p Page) ([]AuditEntry, int64, error) {
	q := s.read(ctx).Model(&AuditEntry{})
	if f.UserID != 0 {
		q = q.Where("user_id = ?", f.UserID)
	}
	if f.Username != "" {
		q = q.Where("username = ?", f.Username)
	}
	if f.Target != "" {
		q = q.Where("target = ?", f.Target)
	}
	if f.Action != "" {
		q = whereLike(q, f.Action, "action")
	}
	if f.Start > 0 {
		q = q.Where("created_at >= ?", f.Start)
	}
	if f.End > 0 {
		q = q.Where("created_at <= ?", f.End)
	}
	var total int64
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, wrap("count audit entries", err)
	}
	var rows []AuditEntry
	err := p.apply(q.Order("id DESC")).Find(&rows).Error
	return rows, total, wrap("list audit entries", err)
}

// DeleteAuditForRetention deletes the entries created before ts in
// batches of batch rows with pause between them (the log retention's
// pace), and returns how many went.
func (s *Store) DeleteAuditForRetention(ctx context.Context, ts int64, batch int, pause time.Duration) (int64, error) {
	if batch <= 0 {
		batch = 2000
	}
	var total int64
	for {
		var ids []int64
		if err := s.read(ctx).Model(&AuditEntry{}).Where("created_at < ?", ts).Order("id").Limit(batch).Pluck("id", &ids).Error; err != nil {
			return total, wrap("list old audit entries", err)
		}
		if len(ids) == 0 {
			return total, nil
		}
		var n int64
		err := s.write(ctx, "delete old audit entries", func(tx *Tx) error {
			res := tx.db.Where("id IN ? AND created_at < ?", ids, ts).Delete(&AuditEntry{})
			n = res.RowsAffected
			return res.Error
		})
		if err != nil {
			return total, err
		}
		total += n
		if len(ids) < batch {
			return total, nil
		}
		select {
		case <-ctx.Done():
			return total, ctx.Err()
		case <-time.After(pause):
		}
	}
}
