package store_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/planlimit"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/store/storetest"
)

// BenchmarkReserveUsage measures one reservation (and a reservation with
// its settlement) on each engine configured, so the relay integration can
// plan batching (docs/decisions/plan-limits.md, Costs). Run by hand:
//
//	go test ./internal/store -run '^$' -bench ReserveUsage -benchtime 2000x
func BenchmarkReserveUsage(b *testing.B) {
	ctx := context.Background()
	rule := planlimit.Rule{RequestPeriod: planlimit.MaxAmount, TokenWeek: planlimit.MaxAmount, TokenMonth: planlimit.MaxAmount}
	for _, eng := range storetest.Engines() {
		b.Run(eng.Name, func(b *testing.B) {
			s, err := store.Open(ctx, store.Options{DSN: eng.FreshDSN(b), SQLitePath: filepath.Join(b.TempDir(), "bench.db")})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			op := func(sub int64, at time.Time) store.UsageOp {
				return store.UsageOp{SubscriptionID: sub, Model: "gpt-4o", Rule: rule, Tokens: 1000, Now: at}
			}
			b.Run("reserve", func(b *testing.B) {
				for b.Loop() {
					if _, err := s.ReserveUsage(ctx, op(1, usageNow)); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("reserve+settle", func(b *testing.B) {
				for b.Loop() {
					r, err := s.ReserveUsage(ctx, op(2, usageNow))
					if err == nil {
						_, err = s.SettleUsage(ctx, r, 800)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
			// The worst read: a month of full buckets to sum.
			b.Run("reserve-full-month", func(b *testing.B) {
				start := usageNow.Add(-planlimit.MonthLength)
				for at := start; at.Before(usageNow); at = at.Add(planlimit.FineBucket) {
					if _, err := s.ReserveUsage(ctx, op(3, at)); err != nil {
						b.Fatal(err)
					}
				}
				for b.Loop() {
					if _, err := s.ReserveUsage(ctx, op(3, usageNow)); err != nil {
						b.Fatal(err)
					}
				}
			})
			// Eight callers on eight subscriptions: what serialisation costs.
			b.Run("reserve-parallel-8", func(b *testing.B) {
				var next atomic.Int64
				b.SetParallelism(4) // × GOMAXPROCS 2 = 8 goroutines
				b.RunParallel(func(pb *testing.PB) {
					sub := 100 + next.Add(1)
					for pb.Next() {
						if _, err := s.ReserveUsage(ctx, op(sub, usageNow)); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		})
	}
}
