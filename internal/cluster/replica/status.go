package replica

import (
	"encoding/json"

	"github.com/modelgate/modelgate/internal/order"
	"github.com/modelgate/modelgate/internal/redemption"
)

// statusRank orders the states of a code or an order that only move
// forward: a used code is never unused again, a paid order never pending
// again (docs/cluster.md, Credits: owner node). ok is false for other
// tables.
func statusRank(table string, status int) (rank int, ok bool) {
	switch table {
	case "redemptions":
		if status == redemption.StatusUsed {
			return 1, true
		}
		return 0, true
	case "orders":
		switch status {
		case order.StatusCancelled:
			return 1, true
		case order.StatusPaid:
			return 2, true
		case order.StatusRefunded:
			return 3, true
		}
		return 0, true
	}
	return 0, false
}

// statusOrder compares the state a row event carries with the row here,
// for the tables of statusRank: +1 when the event's is further along, -1
// when it is behind, 0 when equal or not ranked. Last-writer-wins alone
// would let a write made on a node that had not yet heard of a
// redemption (an admin renaming the code, a user choosing how to pay)
// carry the old status back to the owner, which could then credit the
// code or order a second time; with this rule a state further along wins
// whatever the versions, so the owner's credit is final everywhere.
func (tx *txn) statusOrder(t *replicated, ev Event) (int, error) {
	if ev.Op == "DELETE" || ev.Kind != "" {
		return 0, nil
	}
	if _, ok := statusRank(t.name, 0); !ok {
		return 0, nil
	}
	var incoming struct {
		Status int `json:"status"`
	}
	if err := json.Unmarshal(ev.Data, &incoming); err != nil {
		return 0, nil // the row's own decoding reports it
	}
	var local []int
	if err := tx.db.Table(t.name).Where("id = ?", ev.PK).Limit(1).Pluck("status", &local).Error; err != nil {
		return 0, err
	}
	if len(local) == 0 {
		return 0, nil
	}
	in, _ := statusRank(t.name, incoming.Status)
	here, _ := statusRank(t.name, local[0])
	switch {
	case in > here:
		return 1, nil
	case in < here:
		return -1, nil
	}
	return 0, nil
}
