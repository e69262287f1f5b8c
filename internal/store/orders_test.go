package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/modelgate/modelgate/internal/order"
	"github.com/modelgate/modelgate/internal/payment"
	"github.com/modelgate/modelgate/internal/store"
)

// TestCreateOrderRetriesTakenNumbers: a taken order number is retried with
// the next one; when every attempt collides nothing is written and
// ErrOrderNoExhausted tells the caller, on every engine.
func TestCreateOrderRetriesTakenNumbers(t *testing.T) {
	eachEngine(t, func(t *testing.T, db database) {
		ctx := context.Background()
		s := db.open(t, 0)
		u := newUser("orders")
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		fixed := func() string { return "TP20260101000000000001" }
		first := store.Order{Type: order.TypeTopup, UserID: u.ID, AmountCents: 100, BonusQuota: 5}
		if err := s.CreateOrder(ctx, &first, fixed); err != nil {
			t.Fatal(err)
		}
		calls := 0
		second := store.Order{Type: order.TypeTopup, UserID: u.ID, AmountCents: 100}
		err := s.CreateOrder(ctx, &second, func() string {
			calls++
			if calls < 3 {
				return fixed()
			}
			return "TP20260101000000000002"
		})
		if err != nil || calls != 3 || second.OrderNo != "TP20260101000000000002" {
			t.Fatalf("retry: %v after %d calls, %q", err, calls, second.OrderNo)
		}
		third := store.Order{Type: order.TypeTopup, UserID: u.ID}
		if err := s.CreateOrder(ctx, &third, fixed); !errors.Is(err, store.ErrOrderNoExhausted) {
			t.Fatalf("all taken: %v", err)
		}
		if _, n, _ := s.ListOrders(ctx, store.OrderFilter{UserID: u.ID}, store.Page{Limit: 10}); n != 2 {
			t.Fatalf("%d orders", n)
		}
		// Activation: wrong amount, unknown order, then once.
		act := store.Activation{OrderNo: first.OrderNo, Method: payment.MethodBank, AmountCents: 99, CheckAmount: true, Now: 1}
		if _, _, err := s.ActivateOrder(ctx, act); !errors.Is(err, payment.ErrAmountMismatch) {
			t.Fatalf("wrong amount: %v", err)
		}
		act.AmountCents = 100
		if _, _, err := s.ActivateOrder(ctx, store.Activation{OrderNo: "nope", CheckAmount: true}); !errors.Is(err, payment.ErrUnknownOrder) {
			t.Fatalf("unknown: %v", err)
		}
		for i, want := range []bool{true, false} {
			o, activated, err := s.ActivateOrder(ctx, act)
			if err != nil || activated != want || o.Status != order.StatusPaid {
				t.Fatalf("activation %d: %v %v %+v", i, activated, err, o)
			}
		}
		if got, _ := s.UserByID(ctx, u.ID); got.Quota != u.Quota+5 {
			t.Fatalf("quota %d", got.Quota)
		}
	})
}
