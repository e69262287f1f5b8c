package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/modelgate/modelgate/internal/cluster"
)

// Grants: how a user's balance, and a limited key's remain_quota, are spent
// across cluster nodes without a partition spending them twice
// (docs/decisions/cluster-grants.md). The row's owner node (cluster.Owner)
// grants every other node a part of the balance to spend; what it may hold
// itself, or grant, is the balance less every grant (userGrantedSQL,
// tokenGrantedSQL). A grantee's spends reach the owner as ordinary negative
// deltas, and applying one lowers the grantee's grant by as much
// (SpendGrant), so a grant is always what its node may still spend plus
// its spends in flight.

// ErrGrantNotReady is a grantee that restarted asking before the owner
// applied every event it wrote before the restart: its old grants cannot
// be settled yet. The grantee retries.
var ErrGrantNotReady = errors.New("grantee's earlier events not applied yet")

// ErrNotGrantOwner is a grant asked of a node that does not own the row,
// or by the owner itself.
var ErrNotGrantOwner = errors.New("not this node's balance to grant")

// ErrGrantOwnerRemoved is a grant that cannot be asked because root
// disabled the row's owner node in this node's table (the node was
// removed from the cluster): its balances are spent against this node's
// own view, as before grants.
var ErrGrantOwnerRemoved = errors.New("owner node disabled in this node's table")

// GrantOp is one grantee's call to the owner of a user's balance, or with
// TokenID of that limited key's remain_quota (UserID is then the key's
// user). A positive Amount asks a grant of up to Amount and at least Min;
// a negative one gives -Amount back. Key names the call: the owner applies
// one call per key, and answers a key it applied last again with what it
// did then (an answer lost on the way is asked again under the same key).
// Boot names the grantee's process start and Through the last event it
// wrote before it: the first call of a new Boot settles the grants of the
// grantee's earlier processes, once the owner applied its events up to
// Through.
type GrantOp struct {
	UserID  int64  `json:"user_id"`
	TokenID int64  `json:"token_id,omitempty"`
	NodeID  int    `json:"node_id"`
	Key     string `json:"key"`
	Amount  int64  `json:"amount"`
	Min     int64  `json:"min,omitempty"`
	Boot    string `json:"boot"`
	Through int64  `json:"through"`
}

// clusterGrant is a row of cluster_grants (migration 0026): a grant of a
// user's balance (TokenID 0) or of a key's remain_quota (UserID 0), or the
// grantee's settled Boot (both 0).
type clusterGrant struct {
	UserID     int64 `gorm:"primaryKey;autoIncrement:false"`
	TokenID    int64 `gorm:"primaryKey;autoIncrement:false"`
	NodeID     int   `gorm:"primaryKey;autoIncrement:false"`
	Amount     int64
	LastKey    string
	LastAmount int64
	UpdatedAt  int64
}

func (clusterGrant) TableName() string { return "cluster_grants" }

// grantsOn reports whether balances here are shared out by grants: in
// cluster mode only, so a single node and a fleet keep their statements.
func (s *Store) grantsOn() bool { return s.nodeID > 0 }

// What a balance is worth to this node: the column less the grants to
// other nodes (a row this node does not own has none here).
const (
	userGrantedSQL  = "quota - COALESCE((SELECT SUM(g.amount) FROM cluster_grants g WHERE g.user_id = users.id AND g.token_id = 0), 0)"
	tokenGrantedSQL = "remain_quota - COALESCE((SELECT SUM(g.amount) FROM cluster_grants g WHERE g.token_id = tokens.id AND g.user_id = 0), 0)"
)

// userBalanceSQL is the users column billing reads as a balance.
func (s *Store) userBalanceSQL() string {
	if s.grantsOn() {
		return userGrantedSQL
	}
	return "quota"
}

// tokenBalanceSQL is the tokens column billing reads as a key's quota.
func (s *Store) tokenBalanceSQL() string {
	if s.grantsOn() {
		return tokenGrantedSQL
	}
	return "remain_quota"
}

// grantTarget is the balance a grant is of: its table, the SQL of what is
// free of it, its row id and its key in cluster_grants.
type grantTarget struct {
	table, freeSQL string
	id             int64
	key            clusterGrant
}

func targetOf(op GrantOp) grantTarget {
	if op.TokenID != 0 {
		return grantTarget{table: "tokens", freeSQL: tokenGrantedSQL, id: op.TokenID,
			key: clusterGrant{TokenID: op.TokenID, NodeID: op.NodeID}}
	}
	return grantTarget{table: "users", freeSQL: userGrantedSQL, id: op.UserID,
		key: clusterGrant{UserID: op.UserID, NodeID: op.NodeID}}
}

// refusal is why a grant is refused when only left is free: a key with
// something left is short, not exhausted.
func (t grantTarget) refusal(left int64) error {
	switch {
	case t.table == "users":
		return ErrUserQuota
	case left > 0:
		return ErrTokenQuotaShort
	}
	return ErrTokenQuota
}

// Grant applies op on the row's owner (this node) and returns what it
// granted, or for a give-back what it took back. A grant is at most what
// the balance has beyond every grant: Min, plus 1/(2n) of the rest, n being
// the nodes of the cluster (this one and its enabled peers), so however
// many nodes grow at once at least half of the balance beyond their needs
// stays for the others (the fair share of fleet slices, FairShare). Below
// Min it is refused with ErrUserQuota, or for a key ErrTokenQuota or
// ErrTokenQuotaShort.
func (s *Store) Grant(ctx context.Context, op GrantOp) (int64, error) {
	t := targetOf(op)
	if !s.grantsOn() || t.id <= 0 || cluster.Owner(t.id) != int(s.nodeID) || op.NodeID == int(s.nodeID) {
		return 0, ErrNotGrantOwner
	}
	var got int64
	err := s.write(ctx, "grant balance", func(tx *Tx) error {
		if err := tx.settleBoot(op); err != nil {
			return err
		}
		var left []struct{ Balance int64 }
		if err := tx.forUpdate().Table(t.table).Select(t.freeSQL+" AS balance").Where("id = ?", t.id).Find(&left).Error; err != nil {
			return err
		}
		var rows []clusterGrant
		if err := tx.db.Where("user_id = ? AND token_id = ? AND node_id = ?", t.key.UserID, t.key.TokenID, t.key.NodeID).Find(&rows).Error; err != nil {
			return err
		}
		g := t.key
		if len(rows) == 1 {
			if g = rows[0]; g.LastKey == op.Key {
				got = g.LastAmount // the same call again: its answer was lost
				return nil
			}
		}
		if op.Amount < 0 {
			got = -min(-op.Amount, g.Amount)
		} else {
			if len(left) == 0 {
				return t.refusal(0)
			}
			var peers int64
			if err := tx.db.Model(&ClusterNode{}).Where("disabled = ?", false).Count(&peers).Error; err != nil {
				return err
			}
			if got = grantAmount(op, left[0].Balance, 1+peers); got == 0 {
				return t.refusal(left[0].Balance)
			}
		}
		g.Amount += got
		g.LastKey, g.LastAmount, g.UpdatedAt = op.Key, got, time.Now().Unix()
		return tx.db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&g).Error
	})
	return got, err
}

// grantAmount is what a grant of op takes from left, the balance beyond
// every grant: 0 when left is less than op needs.
func grantAmount(op GrantOp, left, nodes int64) int64 {
	need := max(op.Min, 1)
	if left < need {
		return 0
	}
	return min(op.Amount, need+(left-need)/(2*max(nodes, 1)))
}

// settleBoot settles, at the first call of a grantee's new process, the
// grants of its earlier processes: once every event they wrote (up to
// op.Through) is applied here, what is left of those grants was never
// spent, and goes back. The row of user 0 and key 0 remembers the settled
// Boot.
func (tx *Tx) settleBoot(op GrantOp) error {
	var b clusterGrant
	err := tx.forUpdate().Where("user_id = 0 AND token_id = 0 AND node_id = ?", op.NodeID).Take(&b).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
	case err != nil:
		return err
	case b.LastKey == op.Boot:
		return nil
	}
	// The applied mark of the grantee (cluster_applied, which replication
	// keeps): its events up to Through must have been applied here.
	var mark []int64
	if err := tx.db.Raw("SELECT event_id FROM cluster_applied WHERE node_id = ?", op.NodeID).Scan(&mark).Error; err != nil {
		return err
	}
	if op.Through > 0 && (len(mark) == 0 || mark[0] < op.Through) {
		return ErrGrantNotReady
	}
	if err := tx.db.Where("node_id = ?", op.NodeID).Delete(&clusterGrant{}).Error; err != nil {
		return err
	}
	b = clusterGrant{NodeID: op.NodeID, LastKey: op.Boot, UpdatedAt: time.Now().Unix()}
	return tx.db.Create(&b).Error
}

// SpendGrant lowers node's grant of row id of table (users, tokens) by
// what a spend of node, applied here, took: the grant is what node may
// still spend plus its spends in flight. Only the owner keeps grants.
// Replication calls it as it applies a peer's charge.
func (tx *Tx) SpendGrant(table string, id int64, node int, spent int64) error {
	if !tx.s.grantsOn() || spent <= 0 || node == int(tx.s.nodeID) || cluster.Owner(id) != int(tx.s.nodeID) {
		return nil
	}
	key := "user_id = ? AND token_id = 0"
	if table == "tokens" {
		key = "token_id = ? AND user_id = 0"
	}
	return tx.db.Exec("UPDATE cluster_grants SET amount = CASE WHEN amount > ? THEN amount - ? ELSE 0 END WHERE "+key+" AND node_id = ?",
		spent, spent, id, node).Error
}

// keepGranted refuses to take row id of table (users, tokens) below what
// this node granted other nodes of it: they may spend that still, so a
// lower balance could end below zero. The edit waits (ErrBalanceMoved)
// until the grants went back or were spent. The row is locked.
func (tx *Tx) keepGranted(table string, id, after int64) error {
	if !tx.s.grantsOn() || cluster.Owner(id) != int(tx.s.nodeID) {
		return nil
	}
	key := "user_id = ? AND token_id = 0"
	if table == "tokens" {
		key = "token_id = ? AND user_id = 0"
	}
	var granted []int64
	if err := tx.db.Model(&clusterGrant{}).Where(key, id).Pluck("amount", &granted).Error; err != nil {
		return err
	}
	var sum int64
	for _, g := range granted {
		sum += g
	}
	if after < sum {
		return fmt.Errorf("%s %d: %d granted to other nodes: %w", table, id, sum, ErrBalanceMoved)
	}
	return nil
}

// GrantedTo is what this node has granted of user's balance to each other
// node (the owner's view; empty elsewhere).
func (s *Store) GrantedTo(ctx context.Context, userID int64) (map[int]int64, error) {
	return s.granted(ctx, "user_id = ? AND token_id = 0", userID)
}

// GrantedOfToken is what this node has granted of key tokenID's
// remain_quota to each other node.
func (s *Store) GrantedOfToken(ctx context.Context, tokenID int64) (map[int]int64, error) {
	return s.granted(ctx, "token_id = ? AND user_id = 0", tokenID)
}

func (s *Store) granted(ctx context.Context, key string, id int64) (map[int]int64, error) {
	var rows []clusterGrant
	if err := s.read(ctx).Where(key+" AND amount > 0", id).Find(&rows).Error; err != nil {
		return nil, wrap("read grants", err)
	}
	out := make(map[int]int64, len(rows))
	for _, r := range rows {
		out[r.NodeID] = r.Amount
	}
	return out, nil
}

// ReleaseGrants drops every grant this node gave node nodeID (root's
// last resort for a node gone for good: what it held but did not spend
// comes back to the balances; if the node was alive after all, it can
// still spend what it held, so the balances can lose up to that much). It
// returns the users and keys whose balances grew and the amount released.
func (s *Store) ReleaseGrants(ctx context.Context, nodeID int) (users, tokens []int64, amount int64, err error) {
	const granted = "node_id = ? AND (user_id > 0 OR token_id > 0)"
	err = s.write(ctx, "release grants", func(tx *Tx) error {
		var rows []clusterGrant
		if err := tx.forUpdate().Where(granted, nodeID).Find(&rows).Error; err != nil {
			return err
		}
		users, tokens, amount = nil, nil, 0
		for _, r := range rows {
			if r.TokenID > 0 {
				tokens = append(tokens, r.TokenID)
			} else {
				users = append(users, r.UserID)
			}
			amount += r.Amount
		}
		return tx.db.Where(granted, nodeID).Delete(&clusterGrant{}).Error
	})
	return users, tokens, amount, err
}
