package store_test

import (
	"context"
	"testing"

	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/store/storetest"
)

// The retest's queries: only status 3 channels that are due, oldest test
// first; re-enabling is conditional on status 3 and restores abilities.
func TestAutoDisabledChannelsDueAndReEnable(t *testing.T) {
	for _, e := range storetest.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			ctx := context.Background()
			s := openStore(t, e)
			mk := func(name string, status int, testTime int64) int64 {
				c := store.Channel{Type: 1, Name: name, Models: "m", Groups: "g", Weight: 1, Status: status, TestTime: testTime}
				if err := s.CreateChannel(ctx, &c); err != nil {
					t.Fatal(err)
				}
				return c.ID
			}
			late := mk("late", 3, 200)
			early := mk("early", 3, 100)
			mk("recent", 3, 900)
			byHand := mk("by hand", 2, 100)
			mk("enabled", 1, 100)

			due, err := s.AutoDisabledChannelsDue(ctx, 500, 10)
			if err != nil || len(due) != 2 || due[0].ID != early || due[1].ID != late {
				t.Fatalf("due = %+v, %v; want channels %d then %d", due, err, early, late)
			}
			if due, _ := s.AutoDisabledChannelsDue(ctx, 500, 1); len(due) != 1 {
				t.Fatalf("limit 1 gave %d channels", len(due))
			}
			if ok, err := s.ReEnableChannel(ctx, byHand, store.ChannelTest{Time: 1000, OK: true}); ok || err != nil {
				t.Fatalf("re-enabling a channel disabled by hand: %v, %v", ok, err)
			}
			if c, _ := s.ChannelByID(ctx, byHand); c.Status != 2 {
				t.Fatalf("channel disabled by hand now has status %d", c.Status)
			}
			if ok, err := s.ReEnableChannel(ctx, early, store.ChannelTest{Time: 1000, ResponseTime: 42, OK: true}); !ok || err != nil {
				t.Fatalf("re-enable: %v, %v", ok, err)
			}
			c, _ := s.ChannelByID(ctx, early)
			if c.Status != 1 || c.TestTime != 1000 || c.ResponseTime != 42 || c.LastError != "" {
				t.Fatalf("re-enabled channel = %+v", c)
			}
			if abilities, _ := s.AbilitiesFor(ctx, "g", "m"); len(abilities) != 2 { // "enabled" and "early"
				t.Fatalf("abilities after re-enabling: %+v", abilities)
			}
			if ok, _ := s.ReEnableChannel(ctx, early, store.ChannelTest{Time: 1001, OK: true}); ok {
				t.Fatal("re-enabled an enabled channel twice")
			}
		})
	}
}
