package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/planlimit"
)

// Plan usage counters (docs/decisions/plan-limits.md).
//
// plan_usage holds, per subscription, model and bucket, the requests and
// tokens used: each use is counted in a 10-minute and in a 3-hour bucket
// (planlimit.FineBucket, planlimit.CoarseBucket; span is the width in
// seconds), so the period window reads few fine buckets and the week and
// month windows few coarse ones; plan_usage_totals
// holds each subscription's lifetime totals. Both change only by
// increments (a reservation adds, a settlement adds the difference, a
// release subtracts), never by writing a whole row, so the cluster can
// replicate them as deltas. plan_usage_holds records each open
// reservation until it is settled or released: deleting it is what makes
// a second settlement or release a no-op.

// ErrUsageLimit is the error of a reservation a plan limit refuses; the
// error is a *UsageLimitError carrying the binding limit.
var ErrUsageLimit = errors.New("plan usage limit reached")

// UsageLimitError is a refused reservation: Limit is the limit that binds,
// with its use and when it frees up (zero for the lifetime allowance).
type UsageLimitError struct {
	Limit planlimit.Status
}

func (e *UsageLimitError) Error() string {
	return fmt.Sprintf("plan usage limit %s reached: %d of %d used", e.Limit.Name, e.Limit.Used, e.Limit.Limit)
}

// Is makes errors.Is(err, ErrUsageLimit) true.
func (e *UsageLimitError) Is(target error) bool { return target == ErrUsageLimit }

// UsageOp asks to reserve one request and an estimate of Tokens of Model
// on a subscription, under Rule, at Now. MinTokens, when above 0, lets the
// call take fewer tokens, down to MinTokens, when the tightest token limit
// has less than Tokens left (planlimit.Fit): an open completion shrinks to
// what the window holds. The reservation's Tokens is what it took.
type UsageOp struct {
	SubscriptionID int64
	Model          string
	Rule           planlimit.Rule
	Tokens         int64
	MinTokens      int64
	Now            time.Time
}

// least is the fewest tokens op accepts.
func (op UsageOp) least() int64 {
	if op.MinTokens > 0 {
		return min(op.MinTokens, op.Tokens)
	}
	return op.Tokens
}

// fit is the tokens op holds with usage u.
func (op UsageOp) fit(u planlimit.Usage) int64 {
	return planlimit.Fit(op.Rule, u, op.least(), op.Tokens)
}

// UsageReservation is a granted reservation. Key identifies it for
// SettleUsage and ReleaseUsage; Decision has the tightest limits counting
// this call (the rate-limit headers).
type UsageReservation struct {
	Key            string
	SubscriptionID int64
	Model          string
	BucketStart    int64
	Tokens         int64
	Decision       planlimit.Decision
}

// maxModelBytes is the size of the model columns (191: MySQL's utf8mb4
// index limit, as in abilities and prices).
const maxModelBytes = 191

func validUsageOp(op UsageOp) error {
	switch {
	case op.SubscriptionID <= 0:
		return fmt.Errorf("%w: subscription id %d", planlimit.ErrInvalid, op.SubscriptionID)
	case op.Model == "" || len(op.Model) > maxModelBytes || !ValidText(op.Model):
		return fmt.Errorf("%w: model name must be 1..%d bytes of UTF-8 without NUL", planlimit.ErrInvalid, maxModelBytes)
	case op.Now.IsZero():
		return fmt.Errorf("%w: no time given", planlimit.ErrInvalid)
	}
	if err := op.Rule.Validate(); err != nil {
		return err
	}
	if err := planlimit.ValidAmount(op.MinTokens); err != nil {
		return err
	}
	return planlimit.ValidAmount(op.Tokens)
}

// errNoTotals: the subscription has no totals row to lock yet.
var errNoTotals = errors.New("no plan usage totals row")

// ReserveUsage checks every limit of op.Rule against the subscription's
// usage of op.Model and, when one more call with op.Tokens fits, adds one
// request and op.Tokens to the current bucket and to the lifetime totals.
// It is atomic per subscription on every engine: the subscription's totals
// row is locked (SELECT … FOR UPDATE) before the usage is read, so
// parallel reservations are decided one after the other; SQLite runs one
// write transaction at a time anyway. A refusal is a *UsageLimitError and
// changes nothing.
func (s *Store) ReserveUsage(ctx context.Context, op UsageOp) (UsageReservation, error) {
	if err := validUsageOp(op); err != nil {
		return UsageReservation{}, fmt.Errorf("reserve plan usage: %w", err)
	}
	r := UsageReservation{Key: newHoldKey(), SubscriptionID: op.SubscriptionID, Model: op.Model,
		BucketStart: planlimit.BucketStart(op.Now, planlimit.FineBucket), Tokens: op.Tokens}
	err := s.writeUsage(ctx, "reserve plan usage", op.SubscriptionID, func(tx *Tx) error {
		var err error
		r.Decision, r.Tokens, err = tx.reserveUsage(op, r)
		return err
	})
	if err != nil {
		return UsageReservation{}, err
	}
	return r, nil
}

// writeUsage runs fn, a transaction that locks the subscription's totals
// row, and when fn finds no such row (errNoTotals) creates it and runs fn
// again. The row is created in a transaction of its own, so a
// reservation never inserts where another one may insert too: on MySQL
// two such inserts under gap locks deadlock.
func (s *Store) writeUsage(ctx context.Context, op string, subscriptionID int64, fn func(tx *Tx) error) error {
	err := s.write(ctx, op, fn)
	if !errors.Is(err, errNoTotals) {
		return err
	}
	if err := s.write(ctx, "create plan usage totals", func(tx *Tx) error {
		return tx.db.Exec(s.insertIgnore("plan_usage_totals", "subscription_id", "requests", "tokens"), subscriptionID, 0, 0).Error
	}); err != nil {
		return err
	}
	return s.write(ctx, op, fn)
}

// reserveUsage decides op and holds it; it returns the decision and the
// tokens held (op.Tokens, or less for a call that accepts less).
func (tx *Tx) reserveUsage(op UsageOp, r UsageReservation) (planlimit.Decision, int64, error) {
	var totals []struct{ Tokens int64 }
	err := tx.forUpdate().Table("plan_usage_totals").Select("tokens").Where("subscription_id = ?", op.SubscriptionID).Find(&totals).Error
	if err != nil {
		return planlimit.Decision{}, 0, err
	}
	if len(totals) == 0 {
		return planlimit.Decision{}, 0, errNoTotals
	}
	usage, err := tx.windowUsage(op)
	if err != nil {
		return planlimit.Decision{}, 0, err
	}
	usage.LifetimeTokens = totals[0].Tokens
	tokens := op.fit(usage)
	d := planlimit.Check(op.Rule, usage, tokens, op.Now)
	if !d.Fits {
		return d, 0, &UsageLimitError{Limit: d.Binding}
	}
	// A hold: peers get nothing until the call settles (closeUsage).
	if err := tx.addUsage(usageDelta{op.SubscriptionID, op.Model, r.BucketStart, 1, tokens}, usageDelta{}); err != nil {
		return d, 0, err
	}
	hold := planUsageHold{HoldKey: r.Key, SubscriptionID: op.SubscriptionID, Model: op.Model,
		BucketStart: r.BucketStart, Tokens: tokens, CreatedAt: op.Now.Unix(), LeaseID: tx.s.LeaseID(), Requests: 1}
	return d, tokens, tx.db.Create(&hold).Error
}

// windowUsage sums the subscription's buckets of op.Model into the three
// windows: one indexed range read per bucket width.
func (tx *Tx) windowUsage(op UsageOp) (planlimit.Usage, error) {
	var u planlimit.Usage
	for _, width := range []time.Duration{planlimit.FineBucket, planlimit.CoarseBucket} {
		var cols []string
		var args, dest []any
		from := int64(math.MaxInt64)
		for _, w := range planlimit.Windows {
			if op.Rule.Bucket(w) != width {
				continue
			}
			start := op.Rule.WindowStart(w, op.Now)
			from = min(from, start)
			cols = append(cols,
				"COALESCE(SUM(CASE WHEN bucket_start >= ? THEN requests ELSE 0 END), 0)",
				"COALESCE(SUM(CASE WHEN bucket_start >= ? THEN tokens ELSE 0 END), 0)",
				"COALESCE(MIN(CASE WHEN bucket_start >= ? AND requests > 0 THEN bucket_start END), 0)",
				"COALESCE(MIN(CASE WHEN bucket_start >= ? AND tokens > 0 THEN bucket_start END), 0)")
			args = append(args, start, start, start, start)
			c := &u.Windows[w]
			dest = append(dest, &c.Requests, &c.Tokens, &c.OldestRequest, &c.OldestToken)
		}
		if len(cols) == 0 {
			continue
		}
		q := "SELECT " + strings.Join(cols, ", ") + " FROM plan_usage" +
			" WHERE subscription_id = ? AND model = ? AND span = ? AND bucket_start >= ? AND bucket_start <= ?"
		args = append(args, op.SubscriptionID, op.Model, int64(width/time.Second), from, planlimit.BucketStart(op.Now, width))
		if err := tx.db.Raw(q, args...).Row().Scan(dest...); err != nil {
			return planlimit.Usage{}, err
		}
	}
	return u, nil
}

// usageDelta is a change of one subscription's use of one model: fine is
// the start of the fine bucket it lands in.
type usageDelta struct {
	subscriptionID   int64
	model            string
	fine             int64
	requests, tokens int64
}

// addUsage adds requests and tokens (either may be negative) to the fine
// bucket starting at fine, to the coarse bucket holding it, and to the
// subscription's totals, in that lock order (totals first, as
// ReserveUsage locks them). Counters saturate at 0 and planlimit.MaxAmount.
// A delta that only adds creates the rows it lands in (a settlement
// counted in memory on SQLite, whose reservation wrote nothing); one that
// subtracts updates the rows its reservation made (a bucket pruned since
// counts in no window any more).
//
// peers is what the cluster's peers add (docs/cluster.md): the same as d,
// except for holds, which stay on this node (zero: nothing is sent).
func (tx *Tx) addUsage(d, peers usageDelta) error {
	subscriptionID, model, fine, requests, tokens := d.subscriptionID, d.model, d.fine, d.requests, d.tokens
	adds := requests >= 0 && tokens >= 0
	set := "requests = " + clampedAdd("plan_usage_totals.requests") + ", tokens = " + clampedAdd("plan_usage_totals.tokens")
	q := "UPDATE plan_usage_totals SET " + set + " WHERE subscription_id = ?"
	args := []any{requests, requests, requests, tokens, tokens, tokens, subscriptionID}
	if adds {
		q = "INSERT INTO plan_usage_totals (subscription_id, requests, tokens) VALUES (?, ?, ?) " +
			tx.s.onConflictUpdate("subscription_id") + " " + set
		args = append([]any{subscriptionID, requests, tokens}, args[:6]...)
	}
	if err := tx.db.Exec(q, args...).Error; err != nil {
		return err
	}
	// The totals change is told to listeners only: the plan_usage delta
	// below carries both to peers.
	if err := tx.record(Change{Table: "plan_usage_totals", Op: "UPDATE", ID: subscriptionID, Counters: true}); err != nil {
		return err
	}
	fineSpan, coarseSpan := int64(planlimit.FineBucket/time.Second), int64(planlimit.CoarseBucket/time.Second)
	coarse := planlimit.BucketStart(time.Unix(fine, 0), planlimit.CoarseBucket)
	var err error
	if adds {
		q := "INSERT INTO plan_usage (subscription_id, model, span, bucket_start, requests, tokens) VALUES (?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?) " +
			tx.s.onConflictUpdate("subscription_id, model, span, bucket_start") +
			" requests = " + clampedAdd("plan_usage.requests") + ", tokens = " + clampedAdd("plan_usage.tokens")
		err = tx.db.Exec(q, subscriptionID, model, fineSpan, fine, requests, tokens,
			subscriptionID, model, coarseSpan, coarse, requests, tokens,
			requests, requests, requests, tokens, tokens, tokens).Error
	} else {
		err = tx.db.Exec("UPDATE plan_usage SET requests = "+clampedAdd("requests")+", tokens = "+clampedAdd("tokens")+
			" WHERE subscription_id = ? AND model = ? AND ((span = ? AND bucket_start = ?) OR (span = ? AND bucket_start = ?))",
			requests, requests, requests, tokens, tokens, tokens, subscriptionID, model, fineSpan, fine, coarseSpan, coarse).Error
	}
	if err != nil {
		return err
	}
	c := Change{Table: "plan_usage", Op: "UPDATE", ID: subscriptionID, Counters: true}
	if peers.requests != 0 || peers.tokens != 0 {
		c.usage = &peers
	}
	return tx.record(c)
}

// clampedAdd is the SQL of col + ? kept within 0..planlimit.MaxAmount; it
// takes the added amount three times. Neither comparison can overflow: the
// column and the amount are both within ±MaxAmount.
func clampedAdd(col string) string {
	return fmt.Sprintf("CASE WHEN %[1]s + ? < 0 THEN 0 WHEN %[1]s > %[2]d - ? THEN %[2]d ELSE %[1]s + ? END", col, planlimit.MaxAmount)
}

// onConflictUpdate starts the update clause of an upsert on the unique
// columns cols.
func (s *Store) onConflictUpdate(cols string) string {
	if s.dialect == MySQL {
		return "ON DUPLICATE KEY UPDATE"
	}
	return "ON CONFLICT (" + cols + ") DO UPDATE SET"
}

// insertIgnore is an INSERT of one row that does nothing when the first
// column's key exists.
func (s *Store) insertIgnore(table string, cols ...string) string {
	q := "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES (?" + strings.Repeat(", ?", len(cols)-1) + ")"
	if s.dialect == MySQL {
		return q + " ON DUPLICATE KEY UPDATE " + cols[0] + " = " + cols[0]
	}
	return q + " ON CONFLICT (" + cols[0] + ") DO NOTHING"
}

func newHoldKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// SettleUsage replaces a reservation's token estimate by the real count
// (tokens = prompt + completion): the difference is added, so usage may
// grow beyond a limit by what the estimate missed. It applies once per
// reservation: the reservation's hold row is deleted in the same
// transaction, so a second settlement or release, or one after the
// janitor released the hold, changes nothing (applied reports whether it
// did). The relay settles through the billing ledger instead (SettleOp
// Usage), in the group commit of the call's consume log.
func (s *Store) SettleUsage(ctx context.Context, r UsageReservation, realTokens int64) (applied bool, err error) {
	if err := planlimit.ValidAmount(realTokens); err != nil {
		return false, fmt.Errorf("settle plan usage: %w", err)
	}
	err = s.write(ctx, "settle plan usage", func(tx *Tx) error {
		var err error
		applied, err = tx.closeUsage(r.Key, false, realTokens)
		return err
	})
	return applied, err
}

// ReleaseUsage gives a reservation back whole (the call failed upstream):
// its request and its token estimate. Like SettleUsage it applies once.
func (s *Store) ReleaseUsage(ctx context.Context, r UsageReservation) (applied bool, err error) {
	err = s.write(ctx, "release plan usage", func(tx *Tx) error {
		var err error
		applied, err = tx.closeUsage(r.Key, true, 0)
		return err
	})
	return applied, err
}

// closeUsage closes the open hold key: a release subtracts its request and
// estimate, a settlement adds realTokens minus the estimate. applied is
// false when the hold is not open.
func (tx *Tx) closeUsage(key string, release bool, realTokens int64) (applied bool, err error) {
	h, ok, err := tx.closeUsageHold(key)
	if err != nil || !ok {
		return false, err
	}
	d := usageDelta{h.SubscriptionID, h.Model, h.BucketStart, 0, realTokens - h.Tokens}
	// Peers never saw the hold: they get the call's real use, or nothing
	// for a release (a slice told them its calls' uses as they settled).
	peers := usageDelta{h.SubscriptionID, h.Model, h.BucketStart, 1, realTokens}
	if release {
		// What the hold counted beyond what its calls used goes back; a
		// slice whose calls used more tokens than it held adds the rest.
		d.requests, d.tokens = h.UsedRequests-h.Requests, h.UsedTokens-h.Tokens
		peers = usageDelta{}
	}
	return true, tx.addUsage(d, peers)
}

// closeUsageHold deletes an open hold and returns it; ok is false when it
// is not open (settled, released, or never made).
func (tx *Tx) closeUsageHold(key string) (h planUsageHold, ok bool, err error) {
	var rows []planUsageHold
	if err := tx.forUpdate().Where("hold_key = ?", key).Limit(1).Find(&rows).Error; err != nil {
		return h, false, err
	}
	if len(rows) == 0 {
		return h, false, nil
	}
	// The delete is the guard: of two settlements racing, only the one
	// that deleted the row applies (the locking read makes the other wait
	// and find nothing).
	res := tx.db.Where("hold_key = ?", key).Delete(&planUsageHold{})
	if res.Error != nil || res.RowsAffected != 1 {
		return h, false, res.Error
	}
	return rows[0], true, nil
}

// ReleaseStaleUsageHolds releases up to limit holds created before cutoff
// that no live billing lease covers: reservations whose process died before
// settling, on SQLite or before leases (holds under a lease come back with
// it: releaseHolds). Until then their
// estimate counts, which errs on the operator's side. It returns how many
// it released.
func (s *Store) ReleaseStaleUsageHolds(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	var keys []string
	if err := s.read(ctx).Model(&planUsageHold{}).
		Where("created_at < ? AND (lease_id = 0 OR lease_id NOT IN (SELECT id FROM billing_leases))", cutoff.Unix()).
		Order("created_at").Limit(limit).Pluck("hold_key", &keys).Error; err != nil {
		return 0, wrap("list stale plan usage holds", err)
	}
	n := 0
	for _, k := range keys {
		applied, err := s.ReleaseUsage(ctx, UsageReservation{Key: k})
		if err != nil {
			return n, err
		}
		if applied {
			n++
		}
	}
	return n, nil
}

// planUsageHold is an open usage reservation (plan_usage_holds; migrations
// 0009 and 0010). LeaseID is the billing lease of the process that made it
// (0: none, SQLite).
type planUsageHold struct {
	HoldKey        string `gorm:"primaryKey;size:32"`
	SubscriptionID int64  `gorm:"not null"`
	Model          string `gorm:"size:191;not null"`
	BucketStart    int64  `gorm:"not null"`
	Tokens         int64  `gorm:"not null"`
	CreatedAt      int64  `gorm:"autoCreateTime:false;not null;index"`
	LeaseID        int64  `gorm:"not null;default:0"`
	// A slice (GrowUsageSlice) holds Requests and Tokens for many calls
	// and counts what they used; a call's own hold has Requests 1.
	Requests     int64 `gorm:"not null;default:1"`
	UsedRequests int64 `gorm:"not null;default:0"`
	UsedTokens   int64 `gorm:"not null;default:0"`
}

func (planUsageHold) TableName() string { return "plan_usage_holds" }

// releaseUsageHolds gives back the usage reservations made under leaseIDs
// (processes that died or ended) and returns how many.
func (tx *Tx) releaseUsageHolds(leaseIDs []int64) (int, error) {
	if len(leaseIDs) == 0 {
		return 0, nil
	}
	var keys []string
	if err := tx.db.Model(&planUsageHold{}).Where("lease_id IN ?", leaseIDs).Order("subscription_id").Pluck("hold_key", &keys).Error; err != nil {
		return 0, err
	}
	n := 0
	for _, k := range keys {
		applied, err := tx.closeUsage(k, true, 0)
		if err != nil {
			return n, err
		}
		if applied {
			n++
		}
	}
	return n, nil
}
