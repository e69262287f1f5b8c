package replica_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/cluster/replica"
	"github.com/modelgate/modelgate/internal/planlimit"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/store/storetest"
)

// node is a node under test: its store and the store's replication.
type node struct {
	*store.Store
	*replica.Replica
}

// database is one fresh database of an engine.
type database struct {
	dsn, sqlitePath string
}

func (d database) open(t *testing.T, nodeID int) *node {
	t.Helper()
	s, err := store.Open(context.Background(), store.Options{DSN: d.dsn, SQLitePath: d.sqlitePath, NodeID: nodeID})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &node{Store: s, Replica: replica.New(s)}
}

// eachEngine runs f on SQLite and on every server engine configured.
func eachEngine(t *testing.T, f func(t *testing.T, db database)) {
	storetest.EachEngine(t, func(t *testing.T, dsn, sqlitePath string) { f(t, database{dsn, sqlitePath}) })
}

func newUser(name string) *store.User {
	return &store.User{Username: name, PasswordHash: "x", Role: 1, Status: 1, Group: "default", AffCode: name}
}

// usageNow is the fake clock's start: 3 minutes into a bucket.
var usageNow = time.Date(2026, 11, 2, 10, 3, 0, 0, time.UTC)

func reserveUsage(s *node, sub int64, rule planlimit.Rule, tokens int64, now time.Time) (store.UsageReservation, error) {
	return s.ReserveUsage(context.Background(), store.UsageOp{SubscriptionID: sub, Model: "gpt-4o", Rule: rule, Tokens: tokens, Now: now})
}

// usageOf is the subscription's use of gpt-4o in the period window and
// its lifetime tokens.
func usageOf(t *testing.T, s *node, sub int64, now time.Time) (requests, tokens, lifetime int64) {
	t.Helper()
	u, err := s.UsageOf(context.Background(), sub, map[string]planlimit.Rule{"gpt-4o": {}}, now)
	if err != nil {
		t.Fatal(err)
	}
	c := u.Models[0].Usage.Windows[planlimit.Period]
	return c.Requests, c.Tokens, u.LifetimeTokens
}
