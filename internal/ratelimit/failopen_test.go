package ratelimit

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest/redisserver"
	"github.com/redis/go-redis/v9"
)

// TestFailOpenBound (issue 25): nodes sharing a Redis that fails open to
// their memory serve at most N × L in a window that straddles the outage,
// not (N+1) × L: a node's memory counts the calls it admitted through
// Redis too. Two nodes, RPM 5: node A serves 5 through Redis, Redis
// freezes, A serves nothing more and B serves 5 on its own; after the
// resume a third node finds the window used in Redis. Likewise two calls
// in flight per node at most with a concurrency of 2.
func TestFailOpenBound(t *testing.T) {
	srv := redisserver.Start(t)
	opts, err := redis.ParseURL(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	prefix := "mgtest:" + rand.Text() + ":"
	node := func() *Limiter {
		rdb := redis.NewClient(ClientOptions(opts))
		t.Cleanup(func() { rdb.Close() })
		return New(Config{Redis: rdb, Prefix: prefix})
	}
	a, b, c := node(), node(), node()
	now := time.Unix(6000, 0)
	rpm := Request{KeyID: 1, UserID: 1, Key: Limits{RPM: 5}, Now: now}
	conc := Request{KeyID: 2, UserID: 2, Key: Limits{Concurrency: 2}, Now: now}

	if n := admitN(t, a, rpm, 5, backendRedis); n != 5 {
		t.Fatalf("A served %d through Redis, want 5", n)
	}
	// B's calls are refused by Redis: they must not count in B's memory.
	if n := admitN(t, b, rpm, 3, backendRedis); n != 0 {
		t.Fatalf("B served %d over the limit", n)
	}
	running := admitHeld(t, a, conc, 2) // in flight through Redis

	srv.Freeze(t)
	if n := admitN(t, a, rpm, 10, backendMemory); n != 0 {
		t.Errorf("A served %d more during the outage, want 0: it served the limit already", n)
	}
	if n := admitN(t, b, rpm, 10, backendMemory); n != 5 {
		t.Errorf("B served %d during the outage, want 5", n)
	}
	if n := len(admitHeld(t, a, conc, 3)); n != 0 {
		t.Errorf("A admitted %d more calls in flight during the outage, want 0", n)
	}
	heldB := admitHeld(t, b, conc, 3)
	if len(heldB) != 2 {
		t.Errorf("B admitted %d calls in flight during the outage, want 2", len(heldB))
	}
	srv.Resume(t)

	// In the same window nobody serves more: A and B by their own count,
	// C (which served nothing) by Redis's.
	waitFor(t, "C to reach Redis", func() bool {
		req := rpm
		tk, r := c.Admit(context.Background(), &req)
		if !r.Refused() {
			t.Fatalf("C served a call of a used window")
		}
		c.Done(&tk, 0)
		return !c.Status().RedisDown && r.Measure == MeasureRequests
	})
	for name, l := range map[string]*Limiter{"A": a, "B": b, "C": c} {
		if n := admitN(t, l, rpm, 5, 0); n != 0 {
			t.Errorf("%s served %d after the resume, want 0 (10 of 2 × 5 served)", name, n)
		}
	}
	for i := range running {
		a.Done(&running[i], 0)
	}
	for i := range heldB {
		b.Done(&heldB[i], 0)
	}
	if a.Inflight(false, 2) != 0 || b.Inflight(false, 2) != 0 {
		t.Errorf("calls in flight after all ended: A %d, B %d", a.Inflight(false, 2), b.Inflight(false, 2))
	}
}

// admitN tries n calls of req on l one after another and returns how many
// were served; each served call must have been admitted by via (0: any).
func admitN(t *testing.T, l *Limiter, req Request, n int, via uint8) int {
	t.Helper()
	served := 0
	for range n {
		r := req
		tk, res := l.Admit(context.Background(), &r)
		if res.Refused() {
			if res.Unavailable {
				t.Fatal("refused as unavailable while failing open")
			}
			continue
		}
		if via != 0 && tk.backend != via {
			t.Errorf("admitted by backend %d, want %d", tk.backend, via)
		}
		served++
		l.Done(&tk, 0)
	}
	return served
}

// admitHeld tries n calls of req on l and keeps the admitted ones running.
func admitHeld(t *testing.T, l *Limiter, req Request, n int) []Ticket {
	t.Helper()
	var held []Ticket
	for range n {
		r := req
		if tk, res := l.Admit(context.Background(), &r); !res.Refused() {
			held = append(held, tk)
		}
	}
	return held
}

// TestFailClosedUndoes: a call refused because Redis does not answer and
// the fail mode is closed leaves nothing counted on the node: after the
// resume the node serves the whole limit.
func TestFailClosedUndoes(t *testing.T) {
	srv := redisserver.Start(t)
	opts, err := redis.ParseURL(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(ClientOptions(opts))
	t.Cleanup(func() { rdb.Close() })
	l := New(Config{Redis: rdb, Prefix: "mgtest:" + rand.Text() + ":"})
	req := Request{KeyID: 1, UserID: 1, Key: Limits{RPM: 3, Concurrency: 1}, Now: time.Unix(6000, 0), FailClosed: true}
	srv.Freeze(t)
	for range 4 {
		r := req
		if tk, res := l.Admit(context.Background(), &r); !res.Unavailable {
			t.Fatalf("admitted while Redis is frozen and the fail mode closed: %+v %d", res, tk.backend)
		}
	}
	srv.Resume(t)
	waitFor(t, "Redis to answer", func() bool {
		r := req
		tk, res := l.Admit(context.Background(), &r)
		l.Done(&tk, 0)
		return !res.Unavailable
	})
	if n := admitN(t, l, req, 5, backendRedis); n != 2 {
		t.Errorf("served %d more after the resume, want 2 (3 in all)", n)
	}
	if st := l.Status(); st.FailedClosed < 4 || l.Inflight(false, 1) != 0 {
		t.Errorf("status %+v, %d in flight", st, l.Inflight(false, 1))
	}
}
