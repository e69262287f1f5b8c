package replica

import (
	"fmt"

	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/user"
)

// errRootGuard is a users event that would change who is root on this
// node: root is per node (docs/cluster.md, Security), so no peer's event
// creates a root, promotes a user to root, or deletes, disables or demotes
// a root of this node. Such an event is skipped; the batch goes on.
var errRootGuard = fmt.Errorf("would change who is root on this node: %w", errSkip)

// guardRoot returns errRootGuard for such an event of t, nil for every
// other. A root row a peer shares with this node (the source's root after
// a join) still takes the peer's other changes: password, name, access
// token.
func (tx *txn) guardRoot(t *replicated, ev Event) error {
	if t.name != "users" {
		return nil
	}
	var cur []store.User
	if err := tx.db.Select("id", "role", "status").Where("id = ?", ev.PK).Limit(1).Find(&cur).Error; err != nil {
		return err
	}
	isRoot := len(cur) == 1 && cur[0].Role >= user.RoleRoot
	if ev.Op == "DELETE" {
		if isRoot {
			return errRootGuard
		}
		return nil
	}
	cols, err := t.decodeRow(ev.Data)
	if err != nil {
		// Refused as bad data where the row is decoded.
		return nil
	}
	role, hasRole := cols["role"].(int)
	status, hasStatus := cols["status"].(int)
	switch {
	case !isRoot && hasRole && role >= user.RoleRoot:
		return errRootGuard
	case isRoot && hasRole && role < user.RoleRoot:
		return errRootGuard
	case isRoot && hasStatus && status != user.StatusEnabled:
		return errRootGuard
	}
	return nil
}
