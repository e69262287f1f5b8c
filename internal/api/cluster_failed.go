package api

import (
	"errors"
	"net/http"

	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/store"
)

// failedEventView is a peer's event kept because the database refused it
// (docs/cluster.md, Receiving): metadata only, never the event's data.
type failedEventView struct {
	ID         int64  `json:"id"`
	NodeID     int    `json:"node_id"`
	Table      string `json:"table"`
	Operation  string `json:"operation"`
	Kind       string `json:"kind"`
	PrimaryKey int64  `json:"primary_key"`
	RowKey     string `json:"row_key"`
	EventTime  int64  `json:"event_time_us"`
	Error      string `json:"error"`
	CreatedAt  int64  `json:"created_at"`
}

// parkedView is a delta waiting for its row (docs/cluster.md, Conflicts).
type parkedView struct {
	ID         int64  `json:"id"`
	NodeID     int    `json:"node_id"`
	Table      string `json:"table"`
	PrimaryKey int64  `json:"primary_key"`
	CreatedAt  int64  `json:"created_at"`
}

// listFailedEvents answers GET /api/cluster/failed_events?p=.
func (s *Server) listFailedEvents(w http.ResponseWriter, r *http.Request) error {
	pg, err := page(r)
	if err != nil {
		return err
	}
	rows, total, err := s.Replica.ListFailedEvents(r.Context(), pg)
	if err != nil {
		return err
	}
	views := make([]failedEventView, len(rows))
	for i, e := range rows {
		views[i] = failedEventView{ID: e.EventID, NodeID: e.NodeID, Table: e.Table, Operation: e.Operation, Kind: e.Kind,
			PrimaryKey: e.PrimaryKey, RowKey: e.RowKey, EventTime: e.TimeUS, Error: e.Error, CreatedAt: e.CreatedAt}
	}
	return httpx.OKList(w, views, total)
}

// dismissFailedEvent answers DELETE /api/cluster/failed_events/{id}: the
// kept event is deleted, nothing is applied.
func (s *Server) dismissFailedEvent(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r)
	if err != nil {
		return err
	}
	switch err := s.Replica.DismissFailedEvent(r.Context(), id); {
	case errors.Is(err, store.ErrNotFound):
		return httpx.Fail(MsgFailedEventNotFound)
	case err != nil:
		return err
	}
	s.Log.Info("failed cluster event dismissed", "event_id", id)
	return httpx.OK(w, nil)
}

// listParkedEvents answers GET /api/cluster/parked_events?p=.
func (s *Server) listParkedEvents(w http.ResponseWriter, r *http.Request) error {
	pg, err := page(r)
	if err != nil {
		return err
	}
	rows, total, err := s.Replica.ListParkedDeltas(r.Context(), pg)
	if err != nil {
		return err
	}
	views := make([]parkedView, len(rows))
	for i, d := range rows {
		views[i] = parkedView{ID: d.EventID, NodeID: d.NodeID, Table: d.Table, PrimaryKey: d.PrimaryKey, CreatedAt: d.CreatedAt}
	}
	return httpx.OKList(w, views, total)
}
