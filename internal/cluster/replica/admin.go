package replica

import (
	"context"

	"github.com/modelgate/modelgate/internal/store"
)

// FailedEventInfo is what an operator sees of a peer's event kept in
// cluster_failed_events: its metadata and the database's error, never its
// data (a row may hold password or key hashes, a channel key, payment
// settings).
type FailedEventInfo struct {
	EventID    int64
	NodeID     int
	Table      string
	Operation  string
	Kind       string
	PrimaryKey int64
	RowKey     string
	TimeUS     int64
	Error      string
	CreatedAt  int64
}

// ListFailedEvents lists the kept events, oldest first, and their number.
func (s *Replica) ListFailedEvents(ctx context.Context, p store.Page) ([]FailedEventInfo, int64, error) {
	q := s.st.Read(ctx).Model(&failedEvent{})
	var total int64
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, store.Wrap("count failed cluster events", err)
	}
	var rows []failedEvent
	// Every column but data.
	err := p.Apply(q.Select("event_id, node_id, table_name, operation, kind, primary_key, row_key, time_us, error, created_at").
		Order("event_id")).Find(&rows).Error
	out := make([]FailedEventInfo, len(rows))
	for i, r := range rows {
		out[i] = FailedEventInfo{EventID: r.EventID, NodeID: r.NodeID, Table: r.TableName_, Operation: r.Operation,
			Kind: r.Kind, PrimaryKey: r.PrimaryKey, RowKey: r.RowKey, TimeUS: r.TimeUS, Error: r.Error, CreatedAt: r.CreatedAt}
	}
	return out, total, store.Wrap("list failed cluster events", err)
}

// DismissFailedEvent deletes the kept event id: the operator has dealt
// with its row (written it again on its origin, or accepted the
// difference). Nothing is applied. store.ErrNotFound when there is none.
func (s *Replica) DismissFailedEvent(ctx context.Context, id int64) error {
	return store.Wrap("dismiss failed cluster event", s.inTx(ctx, func(tx *txn) error {
		res := tx.db.Where("event_id = ?", id).Delete(&failedEvent{})
		if res.Error == nil && res.RowsAffected == 0 {
			return store.ErrNotFound
		}
		return res.Error
	}))
}

// ParkedDeltaInfo is what an operator sees of a delta waiting in
// cluster_parked for its row: metadata, not the amounts' data.
type ParkedDeltaInfo struct {
	EventID    int64
	NodeID     int
	Table      string
	PrimaryKey int64
	CreatedAt  int64
}

// ListParkedDeltas lists the deltas waiting for their row, oldest first,
// and their number.
func (s *Replica) ListParkedDeltas(ctx context.Context, p store.Page) ([]ParkedDeltaInfo, int64, error) {
	q := s.st.Read(ctx).Model(&parkedDelta{})
	var total int64
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, store.Wrap("count parked cluster deltas", err)
	}
	var rows []parkedDelta
	err := p.Apply(q.Select("event_id, table_name, primary_key, created_at").Order("event_id")).Find(&rows).Error
	out := make([]ParkedDeltaInfo, len(rows))
	for i, r := range rows {
		out[i] = ParkedDeltaInfo{EventID: r.EventID, NodeID: int(r.EventID % idStride), Table: r.TableName_,
			PrimaryKey: r.PrimaryKey, CreatedAt: r.CreatedAt}
	}
	return out, total, store.Wrap("list parked cluster deltas", err)
}
