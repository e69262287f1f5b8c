package commerce

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/modelgate/modelgate/internal/order"
	"github.com/modelgate/modelgate/internal/payment"
	"github.com/modelgate/modelgate/internal/store"
)

// sweepBatch bounds the orders one sweep expires and the wallet orders it
// looks at for reconciliation; a backlog is worked off over several sweeps.
const sweepBatch = 200

// reconcileState is the reconciler's memory: the QueryStep of each pending
// wallet order's last query. It is per process: a restart queries each
// pending order once more, which is harmless (a query changes nothing).
type reconcileState struct {
	mu   sync.Mutex
	last map[int64]int
}

// closeTrade closes pending order o's trade at its wallet's provider, so
// it can no longer be paid. A trade the provider reports paid is applied
// at once (ApplyPayment: activated, or an exception when o is cancelled
// already) and answers payment.ErrTradePaid. A method without provider
// calls, or a trade the provider does not know, is nil; other errors are
// the provider's (the caller goes on: a late payment becomes an exception
// and is refunded).
func (s *Service) closeTrade(ctx context.Context, o store.Order) error {
	tr, config, ok := s.trades(ctx, o.PayMethod)
	if !ok {
		return nil
	}
	err := tr.Close(ctx, config, o.OrderNo)
	switch {
	case err == nil, errors.Is(err, payment.ErrTradeNotFound):
		return nil
	case errors.Is(err, payment.ErrTradePaid):
		t, qerr := tr.Query(ctx, config, o.OrderNo)
		if qerr != nil {
			return qerr
		}
		if t.State == payment.TradePaid {
			if _, aerr := s.ApplyPayment(ctx, payment.Paid{Method: o.PayMethod, OrderNo: o.OrderNo,
				AmountCents: t.AmountCents, TradeNo: t.TradeNo}); aerr != nil {
				return aerr
			}
		}
		return payment.ErrTradePaid
	}
	return err
}

// closeSuperseded closes the trades of upgrade orders a newer one
// cancelled; a failure is logged (a later payment is an exception).
func (s *Service) closeSuperseded(ctx context.Context, cancelled []store.Order) {
	for _, o := range cancelled {
		if err := s.closeTrade(ctx, o); err != nil && !errors.Is(err, payment.ErrTradePaid) {
			s.log().Warn("close superseded order's trade", "order_no", o.OrderNo, "err", err)
		}
	}
}

// SweepOrders is the order sweeper (issue 26, §2), run every 30 seconds
// in the background on every node; each node works only the orders it
// owns (all of them when cluster mode is off), so two nodes never close
// or query the same order. It expires the pending orders older than
// expiry (closing their trades first: one the provider reports paid is
// applied instead), then queries the pending wallet orders due by
// order.QueryStep and applies what the provider reports paid. It answers
// how many orders it expired and applied.
func (s *Service) SweepOrders(ctx context.Context, expiry time.Duration) (expired, recovered int, err error) {
	now := s.now()
	var olds []store.Order
	if expiry > 0 { // 0: no expiry configured (the option's range starts at 1)
		olds, err = s.Store.PendingOrders(ctx, now.Add(-expiry).Unix(), nil, sweepBatch)
		if err != nil {
			return 0, 0, err
		}
	}
	for _, o := range olds {
		if !s.Owner.Local(o.ID) {
			continue
		}
		cerr := s.closeTrade(ctx, o)
		if errors.Is(cerr, payment.ErrTradePaid) {
			recovered++
			continue
		}
		if cerr != nil {
			s.log().Warn("close expired order's trade", "order_no", o.OrderNo, "err", cerr)
		}
		ok, err := s.Store.ExpireOrder(ctx, o.ID, now.Unix())
		if err != nil {
			return expired, recovered, err
		}
		if ok {
			expired++
		}
	}
	n, err := s.reconcile(ctx, now)
	return expired, recovered + n, err
}

// reconcile queries the pending wallet orders whose QueryStep passed the
// step of their last query and applies the payments the providers report.
func (s *Service) reconcile(ctx context.Context, now time.Time) (int, error) {
	pending, err := s.Store.PendingOrders(ctx, 0, []string{payment.MethodWechat, payment.MethodAlipay}, sweepBatch)
	if err != nil {
		return 0, err
	}
	s.recon.mu.Lock()
	if s.recon.last == nil {
		s.recon.last = map[int64]int{}
	}
	due := make([]store.Order, 0, len(pending))
	next := make(map[int64]int, len(pending))
	for _, o := range pending {
		if !s.Owner.Local(o.ID) {
			continue
		}
		step := order.QueryStep(now.Sub(time.Unix(o.CreateTime, 0)))
		last, seen := s.recon.last[o.ID]
		if !seen {
			last = -1
		}
		next[o.ID] = last
		if step > last {
			next[o.ID] = step
			due = append(due, o)
		}
	}
	s.recon.last = next // orders no longer pending are forgotten
	s.recon.mu.Unlock()
	recovered := 0
	for _, o := range due {
		tr, config, ok := s.trades(ctx, o.PayMethod)
		if !ok {
			continue
		}
		t, err := tr.Query(ctx, config, o.OrderNo)
		if err != nil {
			s.log().Warn("query pending order's trade", "order_no", o.OrderNo, "err", err)
			continue
		}
		if t.State != payment.TradePaid {
			continue
		}
		a, err := s.ApplyPayment(ctx, payment.Paid{Method: o.PayMethod, OrderNo: o.OrderNo, AmountCents: t.AmountCents, TradeNo: t.TradeNo})
		if err != nil {
			s.log().Warn("apply payment found by query", "order_no", o.OrderNo, "err", err)
			continue
		}
		if a.Exception == nil {
			s.log().Info("payment recovered by query", "method", o.PayMethod, "order_no", o.OrderNo)
		}
		recovered++
	}
	return recovered, nil
}
