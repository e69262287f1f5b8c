// Package commerce holds the use-cases of orders and payments: creating
// plan and top-up orders (pricing, upgrades), starting their payment,
// activating a verified payment exactly once (on the order's owner node in
// cluster mode), the admin's mark-paid and refund, and cancelling. The
// pure rules are in internal/order, the SQL in internal/store; the /api
// handlers decode a request, call a Service method and encode its answer,
// and the cluster's owner route calls the same methods
// (docs/decisions/commerce.md).
package commerce

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/modelgate/modelgate/internal/cluster/owner"
	"github.com/modelgate/modelgate/internal/order"
	"github.com/modelgate/modelgate/internal/payment"
	"github.com/modelgate/modelgate/internal/store"
)

// Service runs the commerce use-cases over one store.
type Service struct {
	Store *store.Store
	// Owner routes an activation to the node owning the order; nil is
	// cluster mode off (every order is local).
	Owner *owner.Router
	// Providers are the wallet channels' protocols by method.
	Providers map[string]payment.Provider
	// Topup reads the current top-up settings.
	Topup func() order.Settings
	// MaxPendingOrders reads the per-user limit of pending orders (option
	// MaxPendingOrders); nil or 0 is no limit.
	MaxPendingOrders func() int
	// InviterReward reads the quota an invitee's first paid order credits
	// its inviter (option QuotaForInviter, store.RewardInviter); nil is 0.
	InviterReward func() int64
	Log           *slog.Logger
	// Now is the clock of order times and proration (tests inject one).
	Now func() time.Time

	recon reconcileState
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) inviterReward() int64 {
	if s.InviterReward == nil {
		return 0
	}
	return s.InviterReward()
}

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

// Refusal is a use-case refused with a message for the caller (a format
// and its arguments, so the handler renders it in the caller's language).
type Refusal struct {
	Format string
	Args   []any
}

func (r *Refusal) Error() string {
	if len(r.Args) == 0 {
		return r.Format
	}
	return fmt.Sprintf(r.Format, r.Args...)
}

func refuse(format string, args ...any) *Refusal { return &Refusal{Format: format, Args: args} }

// OwnerDown is an activation whose owner node could not be reached.
type OwnerDown struct{ Node int }

func (e OwnerDown) Error() string { return "owner node unavailable" }

// ChannelSetting reads a channel's stored setting (zero: never saved). It
// is read from the database on every use, so a change applies at once.
func (s *Service) ChannelSetting(ctx context.Context, method string) (payment.ChannelSetting, error) {
	var c payment.ChannelSetting
	v, ok, err := s.Store.OptionValue(ctx, payment.OptionKey(method))
	if err != nil || !ok {
		return c, err
	}
	if json.Unmarshal([]byte(v), &c) != nil {
		return payment.ChannelSetting{}, nil // written by this code: never happens
	}
	return c, nil
}

// AnyChannelEnabled reports whether at least one payment channel is on.
func (s *Service) AnyChannelEnabled(ctx context.Context) (bool, error) {
	for _, m := range payment.Channels {
		c, err := s.ChannelSetting(ctx, m)
		if err != nil {
			return false, err
		}
		if c.Enabled {
			return true, nil
		}
	}
	return false, nil
}
