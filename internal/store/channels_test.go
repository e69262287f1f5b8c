package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/store/storetest"
)

func openStore(t *testing.T, e storetest.Engine) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), store.Options{
		DSN: e.FreshDSN(t), SQLitePath: filepath.Join(t.TempDir(), "modelgate.db"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestAbilitiesFor(t *testing.T) {
	for _, e := range storetest.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			ctx := context.Background()
			s := openStore(t, e)
			mk := func(name string, priority, weight int64, status int, groups string) int64 {
				c := store.Channel{Type: 1, Name: name, Models: "m,other", Groups: groups,
					Priority: priority, Weight: weight, Status: status}
				if err := s.CreateChannel(ctx, &c); err != nil {
					t.Fatal(err)
				}
				return c.ID
			}
			low := mk("low", 0, 3, 1, "g")
			high := mk("high", 10, 0, 1, "g,h")
			mid := mk("mid", 5, 2, 1, "g")
			mk("disabled", 20, 1, 2, "g")
			mk("auto-disabled", 20, 1, 3, "g")
			mk("elsewhere", 30, 1, 1, "h")

			got, err := s.AbilitiesFor(ctx, "g", "m")
			if err != nil {
				t.Fatal(err)
			}
			type row struct{ channel, priority, weight int64 }
			want := []row{{high, 10, 0}, {mid, 5, 2}, {low, 0, 3}}
			if len(got) != len(want) {
				t.Fatalf("abilities = %+v, want channels %v", got, want)
			}
			for i, a := range got {
				if (row{a.ChannelID, a.Priority, a.Weight}) != want[i] || !a.Enabled || a.Group != "g" || a.Model != "m" {
					t.Errorf("ability %d = %+v, want %+v", i, a, want[i])
				}
			}
			if got, _ := s.AbilitiesFor(ctx, "g", "unknown"); len(got) != 0 {
				t.Errorf("unknown model has abilities %+v", got)
			}
			c, err := s.ChannelByID(ctx, high)
			if err != nil || c.Weight != 0 || c.Name != "high" {
				t.Fatalf("ChannelByID = %+v, %v", c, err)
			}
			if _, err := s.ChannelByID(ctx, 999999); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("ChannelByID(unknown) err = %v", err)
			}
		})
	}
}

// TestAbilitiesShareTheChannelTransaction pins that abilities change in the
// channel's transaction: each row is announced, and a failure while writing
// them leaves the channel as it was.
func TestAbilitiesShareTheChannelTransaction(t *testing.T) {
	for _, e := range storetest.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			ctx := context.Background()
			s := openStore(t, e)
			var events []store.Change
			failOn := ""
			s.SetChangeHook(func(_ *store.Tx, c store.Change) error {
				if c.Table+" "+c.Op == failOn {
					return errors.New("outbox down")
				}
				events = append(events, c)
				return nil
			})
			count := func(table, op string) int {
				n := 0
				for _, c := range events {
					if c.Table == table && c.Op == op {
						n++
					}
				}
				return n
			}

			c := store.Channel{Type: 1, Name: "c", Models: "a,b", Groups: "g,h", Weight: 1, Status: 1}
			if err := s.CreateChannel(ctx, &c); err != nil {
				t.Fatal(err)
			}
			if count("channels", "INSERT") != 1 || count("abilities", "INSERT") != 4 {
				t.Fatalf("create events = %+v", events)
			}
			events = nil
			models := "a"
			if err := s.UpdateChannel(ctx, c.ID, store.ChannelPatch{Models: &models}); err != nil {
				t.Fatal(err)
			}
			if count("channels", "UPDATE") != 1 || count("abilities", "DELETE") != 4 || count("abilities", "INSERT") != 2 {
				t.Fatalf("update events = %+v", events)
			}

			failOn = "abilities INSERT"
			models = "x,y"
			if err := s.UpdateChannel(ctx, c.ID, store.ChannelPatch{Models: &models}); err == nil {
				t.Fatal("update succeeded although its abilities could not be recorded")
			}
			if got, _ := s.ChannelByID(ctx, c.ID); got.Models != "a" {
				t.Fatalf("failed update left models %q", got.Models)
			}
			if got, _ := s.AbilitiesFor(ctx, "g", "a"); len(got) != 1 {
				t.Fatalf("failed update left abilities %+v", got)
			}
			if err := s.CreateChannel(ctx, &store.Channel{Type: 1, Name: "d", Models: "z", Groups: "g", Weight: 1, Status: 1}); err == nil {
				t.Fatal("create succeeded although its abilities could not be recorded")
			}
			if _, total, _ := s.ListChannels(ctx, "", store.Page{}); total != 1 {
				t.Fatalf("failed create left %d channels", total)
			}

			failOn, events = "", nil
			if err := s.DeleteChannel(ctx, c.ID); err != nil {
				t.Fatal(err)
			}
			if count("channels", "DELETE") != 1 || count("abilities", "DELETE") != 2 {
				t.Fatalf("delete events = %+v", events)
			}
			if models, _ := s.ChannelModels(ctx); len(models) != 0 {
				t.Fatalf("models after delete = %q", models)
			}
			if err := s.DeleteChannel(ctx, c.ID); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("second delete err = %v", err)
			}
		})
	}
}
