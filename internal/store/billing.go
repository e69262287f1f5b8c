package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Errors of a refused reservation.
var (
	ErrUserQuota  = errors.New("insufficient user quota")
	ErrTokenQuota = errors.New("insufficient token quota")
	// ErrTokenQuotaShort is an ErrTokenQuota of a key that has quota left,
	// only less than the call's Min: the key is not exhausted.
	ErrTokenQuotaShort = fmt.Errorf("%w: less left than the call needs", ErrTokenQuota)
)

// ReserveOp asks to hold up to Amount of a user's balance and, when
// TokenLimited, of the key's remaining quota, before a call is forwarded.
// Min is the least hold the call accepts: when the balance or the key has
// less than Min (at least 1) left, nothing is held and the reservation is
// refused. Strict billing sets Min to what the call can cost at most when
// that is bounded, so a call the money cannot cover is never forwarded.
//
// A node that leases balance slices (billing's sliceBook) grows one with
// Slice, the reservation row that holds the slice (0: a new one), and asks
// Headroom of its Amount as optional: the headroom is capped at a fair
// share of what is left after the rest (FairShare), so one node never
// takes a balance away from the others.
type ReserveOp struct {
	UserID, TokenID int64
	TokenLimited    bool
	Amount          int64
	Min             int64
	Slice           int64
	Headroom        int64
}

// Need is the least amount a reservation must hold to succeed.
func (op ReserveOp) Need() int64 { return max(op.Min, 1) }

// RefusalOf is why op cannot be held from a user balance of userLeft and a
// key remain_quota of tokenLeft, or nil when it can.
func RefusalOf(op ReserveOp, userLeft, tokenLeft int64) error {
	need := op.Need()
	switch {
	case userLeft < need:
		return ErrUserQuota
	case op.TokenLimited && tokenLeft <= 0:
		return ErrTokenQuota
	case op.TokenLimited && tokenLeft < need:
		return ErrTokenQuotaShort
	case op.Amount < need:
		return ErrUserQuota
	}
	return nil
}

// ReserveResult is what a reservation held: at most the amount asked, capped
// by what was available (so a low balance stays usable), or an error when
// nothing was available.
type ReserveResult struct {
	Held          int64
	ReservationID int64 // the row that records the hold until settlement
	Err           error
}

// SettleOp finishes a call: Held - Cost goes back to the balance (a negative
// difference charges the overrun), the usage counters of user, key and
// channel grow by Cost, and Log, when set, is the consume log. A release is a
// SettleOp with Cost 0 and no Log.
type SettleOp struct {
	UserID, TokenID, ChannelID int64
	TokenLimited               bool
	Held, Cost                 int64
	Log                        *Log
	// ReservationID is the hold being settled. When the janitor already
	// released it (its call outlived the janitor's limit), Held is not
	// returned a second time.
	ReservationID int64
	// Key identifies the settlement of one call (random, made by the
	// relay). A settlement that charges something is applied once per key:
	// a commit retried after its acknowledgement was lost, or a replayed
	// dead letter that had in fact committed, charges nothing more.
	Key string
	// Usage, for a plan-billed call, is its plan usage (the balance part
	// then moves no money: Held and Cost are 0).
	Usage *UsageSettle `json:",omitempty"`
	// Slice says ReservationID is a balance slice leased by this process
	// (billing's sliceBook), not one call's hold: the cost is taken from
	// the slice as far as it holds (Held is set to that in the
	// transaction), the rest from the balance, and the slice stays open.
	// With EndSlice the slice is closed instead: what it still holds goes
	// back to the balance (Held is set to that).
	Slice    bool `json:",omitempty"`
	EndSlice bool `json:",omitempty"`
	// uncovered is the part of Cost no hold covered because the janitor
	// gave the hold back (closeReservations): capUncovered charges it only
	// as far as the balance still has it.
	uncovered int64
}

// ApplyBilling applies settlements and then reservations in one
// transaction: the group commit of the billing ledger. Operations on the
// same user, key or channel are summed into one statement each. The result
// has one entry per reservation, in order.
func (s *Store) ApplyBilling(ctx context.Context, reserves []ReserveOp, settles []SettleOp) ([]ReserveResult, error) {
	var results []ReserveResult
	err := s.write(ctx, "apply billing", func(tx *Tx) error {
		if err := tx.settle(settles); err != nil {
			return err
		}
		var err error
		results, err = tx.reserve(reserves)
		return err
	})
	return results, err
}

type accountDelta struct {
	quota, used, requests int64
}

func (tx *Tx) settle(ops []SettleOp) error {
	if len(ops) == 0 {
		return nil
	}
	// A copy: closeReservations adjusts Held, and the caller's ops must stay
	// as they were when this transaction rolls back and they are retried.
	ops, err := tx.skipApplied(ops)
	if err != nil {
		return err
	}
	if err := tx.closeReservations(ops); err != nil {
		return err
	}
	if err := tx.capUncovered(ops); err != nil {
		return err
	}
	users := map[int64]*accountDelta{}
	tokens := map[int64]*accountDelta{}
	limited := map[int64]bool{}
	channels := map[int64]int64{}
	logs := make([]Log, 0, len(ops)) // a log per call as a rule: no regrowth per batch
	for _, op := range ops {
		add(users, op.UserID, op.Held-op.Cost, op.Cost, op.Log != nil)
		if op.TokenID != 0 {
			add(tokens, op.TokenID, op.Held-op.Cost, op.Cost, op.Log != nil)
			limited[op.TokenID] = op.TokenLimited
		}
		if op.ChannelID != 0 && op.Cost != 0 {
			channels[op.ChannelID] += op.Cost
		}
		if op.Log != nil {
			logs = append(logs, *op.Log)
		}
	}
	now := time.Now().Unix()
	for _, id := range sortedKeys(users) {
		d := users[id]
		err := tx.db.Exec("UPDATE users SET quota = quota + ?, used_quota = "+saturatingAdd("used_quota")+", request_count = request_count + ? WHERE id = ?",
			d.quota, d.used, d.used, d.requests, id).Error
		if err != nil {
			return err
		}
		// Peers get the cost only (-used): the hold given back here
		// (d.quota - -used) was taken on this node only (takeBalances).
		if err := tx.billed("users", id, counterDelta{"quota": -d.used, "used_quota": d.used, "request_count": d.requests}); err != nil {
			return err
		}
	}
	for _, id := range sortedKeys(tokens) {
		d := tokens[id]
		q := "UPDATE tokens SET used_quota = " + saturatingAdd("used_quota") + ", accessed_time = ? WHERE id = ?"
		args := []any{d.used, d.used, now, id}
		delta := counterDelta{"used_quota": d.used, "accessed_time": now}
		if limited[id] {
			delta["remain_quota"] = -d.used // the cost, as for users
			q = "UPDATE tokens SET remain_quota = remain_quota + ?, used_quota = " + saturatingAdd("used_quota") + ", accessed_time = ? WHERE id = ?"
			args = []any{d.quota, d.used, d.used, now, id}
		}
		if err := tx.db.Exec(q, args...).Error; err != nil {
			return err
		}
		if err := tx.billed("tokens", id, delta); err != nil {
			return err
		}
		if limited[id] {
			if err := tx.exhaustToken(id); err != nil {
				return err
			}
		}
	}
	for _, id := range sortedKeys(channels) {
		if err := tx.db.Exec("UPDATE channels SET used_quota = "+saturatingAdd("used_quota")+" WHERE id = ?", channels[id], channels[id], id).Error; err != nil {
			return err
		}
		if err := tx.billed("channels", id, counterDelta{"used_quota": channels[id]}); err != nil {
			return err
		}
	}
	if err := tx.settleUsage(ops); err != nil {
		return err
	}
	return tx.InsertLogs(logs)
}

// exhaustToken marks a limited key whose remaining quota reached zero as
// exhausted (status 4). That is a status change, not a counter, and is
// recorded as one: the relay's key cache must drop the key so its next call
// is refused as exhausted, and the cluster must replicate the status.
func (tx *Tx) exhaustToken(id int64) error {
	// Money a slice or a call still holds for the key may come back: the
	// key is exhausted once nothing is left anywhere.
	res := tx.db.Exec("UPDATE tokens SET status = 4 WHERE id = ? AND status = 1 AND remain_quota <= 0"+
		" AND NOT EXISTS (SELECT 1 FROM reservations WHERE token_id = ? AND token_limited = ? AND amount > 0)", id, id, true)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return nil
	}
	return tx.changed("tokens", "UPDATE", id)
}

func add(m map[int64]*accountDelta, id, quota, used int64, request bool) {
	d := m[id]
	if d == nil {
		d = &accountDelta{}
		m[id] = d
	}
	d.quota += quota
	d.used += used
	if request {
		d.requests++
	}
}

func sortedKeys[V any](m map[int64]V) []int64 {
	keys := make([]int64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys) // one lock order for every transaction: no deadlock between nodes
	return keys
}

// reserve reads the balances involved under lock, decides every reservation
// against what is left, and writes each user's and key's total in one
// conditional statement (which cannot fail while the rows are locked, and
// would roll everything back if it did).
func (tx *Tx) reserve(ops []ReserveOp) ([]ReserveResult, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	userLeft := map[int64]int64{}
	tokenLeft := map[int64]int64{}
	for _, op := range ops {
		userLeft[op.UserID] = 0
		if op.TokenLimited {
			tokenLeft[op.TokenID] = 0
		}
	}
	if err := tx.lockBalances("users", tx.s.userBalanceSQL(), userLeft); err != nil {
		return nil, err
	}
	if err := tx.lockBalances("tokens", tx.s.tokenBalanceSQL(), tokenLeft); err != nil {
		return nil, err
	}
	userHeld := map[int64]int64{}
	tokenHeld := map[int64]int64{}
	results := make([]ReserveResult, len(ops))
	share := tx.s.FairShare()
	for i, op := range ops {
		left := userLeft[op.UserID]
		if op.TokenLimited {
			left = min(left, tokenLeft[op.TokenID])
		}
		held := min(sliceAmount(op, left, share), left)
		if err := RefusalOf(op, userLeft[op.UserID], tokenLeft[op.TokenID]); err != nil {
			results[i].Err = err
			continue
		}
		results[i].Held = held
		userLeft[op.UserID] -= held
		userHeld[op.UserID] += held
		if op.TokenLimited {
			tokenLeft[op.TokenID] -= held
			tokenHeld[op.TokenID] += held
		}
	}
	if err := tx.takeBalances("users", "quota", userHeld); err != nil {
		return nil, err
	}
	if err := tx.takeBalances("tokens", "remain_quota", tokenHeld); err != nil {
		return nil, err
	}
	return results, tx.openReservations(ops, results)
}

// sliceAmount is what op asks once its headroom is capped at 1/share of
// what is left (left) after the part it needs.
func sliceAmount(op ReserveOp, left int64, share int64) int64 {
	headroom := min(max(op.Headroom, 0), op.Amount)
	base := op.Amount - headroom
	return base + min(headroom, max(left-base, 0)/max(share, 1))
}

// openReservations records each hold, so a hold whose process dies before
// settling can be given back (ReleaseStaleReservations). A hold that grows
// a slice is added to the slice's row, or opens a new row when that row is
// gone (its lease was released: the process stalled past its TTL).
func (tx *Tx) openReservations(ops []ReserveOp, results []ReserveResult) error {
	var rows []Reservation
	var at []int // the result each new row answers
	for i := range results {
		if results[i].Err != nil {
			continue
		}
		if ops[i].Slice != 0 {
			res := tx.db.Exec("UPDATE reservations SET amount = amount + ? WHERE id = ?", results[i].Held, ops[i].Slice)
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected == 1 {
				results[i].ReservationID = ops[i].Slice
				continue
			}
		}
		rows = append(rows, Reservation{UserID: ops[i].UserID, TokenID: ops[i].TokenID,
			TokenLimited: ops[i].TokenLimited, Amount: results[i].Held, LeaseID: tx.s.LeaseID()})
		at = append(at, i)
	}
	if len(rows) == 0 {
		return nil
	}
	first, err := tx.allocIDs("reservations", len(rows))
	if err != nil {
		return err
	}
	now := time.Now().Unix()
	for k, i := range at {
		rows[k].ID, rows[k].CreatedAt = nthID(first, k), now
		results[i].ReservationID = rows[k].ID
	}
	return tx.db.CreateInBatches(rows, 200).Error
}

// closeReservations deletes the reservations the settlements close. A
// settlement whose reservation is already gone (released by the janitor)
// returns nothing: its hold was given back once already.
//
// A settlement against a slice (op.Slice) takes its cost from the slice as
// far as the slice holds, in the order of ops, and leaves it open; the end
// of a slice (op.EndSlice) gives back what is left of it. Either way Held
// becomes what the row gave, so settle's balance arithmetic is the same for
// both.
func (tx *Tx) closeReservations(ops []SettleOp) error {
	var ids []int64
	for _, op := range ops {
		if op.ReservationID != 0 {
			ids = append(ids, op.ReservationID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	var open []struct{ ID, Amount int64 }
	err := tx.forUpdate().Model(&Reservation{}).Select("id, amount").Where("id IN ?", ids).Order("id").Find(&open).Error
	if err != nil {
		return err
	}
	left := make(map[int64]int64, len(open))
	for _, r := range open {
		left[r.ID] = r.Amount
	}
	taken := map[int64]int64{}
	var closed []int64
	for i := range ops {
		op := &ops[i]
		if op.ReservationID == 0 {
			continue
		}
		rest, ok := left[op.ReservationID]
		switch {
		case !ok:
			op.Held = 0
			op.uncovered = max(op.Cost, 0)
		case op.Slice && !op.EndSlice:
			// A cost beyond the slice (overrun allowed) is charged to the
			// balance, as beyond a call's own hold.
			op.Held = min(rest, max(op.Cost, 0))
			left[op.ReservationID] = rest - op.Held
			taken[op.ReservationID] += op.Held
		default:
			if op.Slice {
				op.Held = rest
			}
			delete(left, op.ReservationID)
			closed = append(closed, op.ReservationID)
		}
	}
	for _, id := range sortedKeys(taken) {
		if _, open := left[id]; !open || taken[id] == 0 {
			continue
		}
		if err := tx.db.Exec("UPDATE reservations SET amount = amount - ? WHERE id = ?", taken[id], id).Error; err != nil {
			return err
		}
	}
	if len(closed) == 0 {
		return nil
	}
	return tx.db.Where("id IN ?", closed).Delete(&Reservation{}).Error
}

// capUncovered charges the part of a cost that no hold covered (the
// process that made the hold stalled past its billing lease, and the
// janitor gave the hold back, to be spent elsewhere) only as far as the
// balance, and a limited key, still have it: charging all of it could take
// a balance below zero, which strict billing promises never happens. What
// is not charged is noted in the consume log, whose quota is what was.
func (tx *Tx) capUncovered(ops []SettleOp) error {
	var late []int
	users, tokens := map[int64]int64{}, map[int64]int64{}
	for i := range ops {
		if ops[i].uncovered > 0 {
			late = append(late, i)
			users[ops[i].UserID] = 0
			if ops[i].TokenLimited {
				tokens[ops[i].TokenID] = 0
			}
		}
	}
	if len(late) == 0 {
		return nil
	}
	if err := tx.lockBalances("users", tx.s.userBalanceSQL(), users); err != nil {
		return err
	}
	if err := tx.lockBalances("tokens", tx.s.tokenBalanceSQL(), tokens); err != nil {
		return err
	}
	for _, i := range late {
		op := &ops[i]
		left := max(users[op.UserID], 0)
		if op.TokenLimited {
			left = min(left, max(tokens[op.TokenID], 0))
		}
		charged := min(op.uncovered, left)
		users[op.UserID] -= charged
		if op.TokenLimited {
			tokens[op.TokenID] -= charged
		}
		lost := op.uncovered - charged
		if lost == 0 {
			continue
		}
		op.Cost -= lost
		if op.Log != nil { // a copy: a rolled-back batch is retried with the caller's op
			l := *op.Log
			l.Quota = op.Cost
			content := fmt.Sprintf(" (预扣已在进程失联后退回, %d 额度未收取)", lost)
			l.Content += content
			op.Log = &l
		}
		tx.s.log.Warn("a call settled after its hold was given back cost more than the balance has left; charged what is left",
			"user_id", op.UserID, "uncollected", lost)
	}
	return nil
}

// ReleaseStaleReservations gives back every hold created before cutoff (unix
// seconds) that no billing lease covers: holds made before leases existed,
// or on SQLite. Holds under a lease are returned when the lease expires
// (ReleaseExpiredLeases). It returns how many it released.
func (s *Store) ReleaseStaleReservations(ctx context.Context, cutoff int64) (int, error) {
	var n int
	err := s.write(ctx, "release stale reservations", func(tx *Tx) error {
		var rows []Reservation
		if err := tx.forUpdate().Where("created_at < ? AND lease_id = 0", cutoff).Find(&rows).Error; err != nil {
			return err
		}
		ops := make([]SettleOp, len(rows))
		for i, r := range rows {
			ops[i] = SettleOp{UserID: r.UserID, TokenID: r.TokenID, TokenLimited: r.TokenLimited, Held: r.Amount, ReservationID: r.ID}
		}
		n = len(rows)
		return tx.settle(ops)
	})
	return n, err
}

// lockBalances reads col of the rows whose ids are the keys of left, locking
// them for the rest of the transaction. A missing row keeps 0: nothing to
// spend.
func (tx *Tx) lockBalances(table, col string, left map[int64]int64) error {
	if len(left) == 0 {
		return nil
	}
	var rows []struct {
		ID      int64
		Balance int64
	}
	err := tx.forUpdate().Table(table).Select("id, "+col+" AS balance").Where("id IN ?", sortedKeys(left)).Order("id").Find(&rows).Error
	if err != nil {
		return err
	}
	for _, r := range rows {
		left[r.ID] = r.Balance
	}
	return nil
}

func (tx *Tx) takeBalances(table, col string, held map[int64]int64) error {
	for _, id := range sortedKeys(held) {
		res := tx.db.Exec("UPDATE "+table+" SET "+col+" = "+col+" - ? WHERE id = ? AND "+col+" >= ?", held[id], id, held[id])
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return ErrConflict // the locked balance moved: roll the batch back
		}
		// A hold stays on this node (no delta for peers): only the settled
		// cost replicates, so a node that dies holding money strands
		// nothing on the others (docs/cluster.md, What replicates).
		if err := tx.billed(table, id, counterDelta{}); err != nil {
			return err
		}
	}
	return nil
}

// Balances returns the quota of users and the remaining quota of tokens by
// id (absent ids are left out): what the local billing ledger starts from.
// In cluster mode each is less what this node granted other nodes of it
// (grants.go).
func (s *Store) Balances(ctx context.Context, userIDs, tokenIDs []int64) (users, tokens map[int64]int64, err error) {
	users, tokens = map[int64]int64{}, map[int64]int64{}
	load := func(table, col string, ids []int64, out map[int64]int64) error {
		if len(ids) == 0 {
			return nil
		}
		var rows []struct{ ID, Balance int64 }
		if err := s.read(ctx).Table(table).Select("id, "+col+" AS balance").Where("id IN ?", ids).Find(&rows).Error; err != nil {
			return err
		}
		for _, r := range rows {
			out[r.ID] = r.Balance
		}
		return nil
	}
	if err := load("users", s.userBalanceSQL(), userIDs, users); err != nil {
		return nil, nil, wrap("load balances", err)
	}
	if err := load("tokens", s.tokenBalanceSQL(), tokenIDs, tokens); err != nil {
		return nil, nil, wrap("load balances", err)
	}
	return users, tokens, nil
}
