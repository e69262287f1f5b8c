package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelgate/modelgate/internal/gatewayproc"
)

// relayClient makes the relay calls.
var relayClient = &http.Client{Timeout: 30 * time.Second}

// relayCall makes one non-streaming chat call with key on n.
func relayCall(ctx context.Context, n *node, key string) error {
	body := `{"model":"` + soakModel + `","messages":[{"role":"user","content":"soak"}]}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.base+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := relayClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, gatewayproc.Abbreviate(raw))
	}
	return nil
}

// errNothing is an operation that found nothing to do (no pending row old
// enough): not counted.
var errNothing = errors.New("nothing to do")

// pendingAge is how long a created row waits before the load deletes (or
// redeems) it on another node: time for it to replicate there.
const pendingAge = time.Second

// operation is one kind of write the load makes, with its share of the
// load.
type operation struct {
	name   string
	weight int
	run    func(ctx context.Context, w *world, n *node, r *rand.Rand) error
}

// operations are the load's mix: relay calls (charges: balance, key,
// channel, plan usage and log deltas), admin top-ups, updates of shared
// rows from every node at once (last-writer-wins conflicts), and rows
// created on one node and deleted or redeemed on another.
var operations = []operation{
	{"relay", 40, func(ctx context.Context, w *world, n *node, r *rand.Rand) error {
		users := append(w.users[:len(w.users):len(w.users)], w.planUser)
		u := users[r.IntN(len(users))]
		return relayCall(ctx, n, u.keys[r.IntN(len(u.keys))].key)
	}},
	{"topup", 8, func(ctx context.Context, w *world, n *node, r *rand.Rand) error {
		return n.root(ctx, http.MethodPost, "/api/topup", map[string]any{"user_id": w.users[r.IntN(len(w.users))].id,
			"quota": 1000 + r.Int64N(1000), "remark": "soak"}, nil)
	}},
	{"user.update", 6, func(ctx context.Context, w *world, n *node, r *rand.Rand) error {
		return n.root(ctx, http.MethodPut, "/api/user/", map[string]any{"id": w.users[r.IntN(len(w.users))].id,
			"display_name": randomText(r)}, nil)
	}},
	{"token.update", 3, func(ctx context.Context, w *world, n *node, r *rand.Rand) error {
		u := w.users[r.IntN(len(w.users))]
		return gatewayproc.Call(ctx, u.client, http.MethodPut, n.base+"/api/token/", "",
			map[string]any{"id": u.keys[r.IntN(len(u.keys))].id, "name": randomText(r)}, nil)
	}},
	{"price.update", 5, func(ctx context.Context, w *world, n *node, r *rand.Rand) error {
		return n.root(ctx, http.MethodPut, "/api/model_price/", map[string]any{"id": w.hotPrices[r.IntN(len(w.hotPrices))],
			"input_price": float64(r.IntN(1000)) / 100}, nil)
	}},
	{"group_price.update", 2, func(ctx context.Context, w *world, n *node, r *rand.Rand) error {
		return n.root(ctx, http.MethodPut, "/api/group_price/", map[string]any{"id": w.groupPriceID,
			"discount": 0.5 + float64(r.IntN(50))/100}, nil)
	}},
	{"option.update", 3, func(ctx context.Context, w *world, n *node, r *rand.Rand) error {
		return n.root(ctx, http.MethodPut, "/api/option/", map[string]any{"key": "SystemName", "value": randomText(r)}, nil)
	}},
	{"plan.update", 2, func(ctx context.Context, w *world, n *node, r *rand.Rand) error {
		return n.root(ctx, http.MethodPut, "/api/plan/", map[string]any{"id": w.planID, "description": randomText(r)}, nil)
	}},
	{"subscription.update", 2, func(ctx context.Context, w *world, n *node, r *rand.Rand) error {
		return n.root(ctx, http.MethodPut, "/api/subscription/", map[string]any{"id": w.subscriptionID, "notes": randomText(r)}, nil)
	}},
	{"channel.update", 2, func(ctx context.Context, w *world, n *node, r *rand.Rand) error {
		return n.root(ctx, http.MethodPut, "/api/channel/", map[string]any{"id": w.channelID, "name": randomText(r),
			"priority": r.Int64N(10)}, nil)
	}},
	{"price.create", 3, func(ctx context.Context, w *world, n *node, r *rand.Rand) error {
		var p idOnly
		err := n.root(ctx, http.MethodPost, "/api/model_price/", map[string]any{"model_name": "soak-tmp-" + randomText(r),
			"input_price": 1, "output_price": 1}, &p)
		if err == nil {
			w.addPending("price", pendingRow{id: p.ID, at: time.Now()})
		}
		return err
	}},
	{"price.delete", 3, func(ctx context.Context, w *world, n *node, r *rand.Rand) error {
		p, ok := w.takePending("price", time.Now().Add(-pendingAge))
		if !ok {
			return errNothing
		}
		return n.root(ctx, http.MethodDelete, fmt.Sprintf("/api/model_price/%d", p.id), nil, nil)
	}},
	{"token.create", 2, func(ctx context.Context, w *world, n *node, r *rand.Rand) error {
		u := w.users[r.IntN(len(w.users))]
		t, err := createKey(ctx, n, u, "tmp-"+randomText(r), r.IntN(2) == 0)
		if err == nil {
			w.addPending("token", pendingRow{id: t.id, owner: u, at: time.Now()})
		}
		return err
	}},
	{"token.delete", 2, func(ctx context.Context, w *world, n *node, r *rand.Rand) error {
		p, ok := w.takePending("token", time.Now().Add(-pendingAge))
		if !ok {
			return errNothing
		}
		return gatewayproc.Call(ctx, p.owner.client, http.MethodDelete, fmt.Sprintf("%s/api/token/%d", n.base, p.id), "", nil, nil)
	}},
	{"user.create", 2, func(ctx context.Context, w *world, n *node, r *rand.Rand) error {
		u, err := createUser(ctx, n, "tmp-"+randomText(r), 1000)
		if err == nil {
			w.addPending("user", pendingRow{id: u.id, at: time.Now()})
		}
		return err
	}},
	{"user.delete", 2, func(ctx context.Context, w *world, n *node, r *rand.Rand) error {
		p, ok := w.takePending("user", time.Now().Add(-pendingAge))
		if !ok {
			return errNothing
		}
		return n.root(ctx, http.MethodDelete, fmt.Sprintf("/api/user/%d", p.id), nil, nil)
	}},
	{"redemption.create", 2, func(ctx context.Context, w *world, n *node, r *rand.Rand) error {
		var keys []string
		err := n.root(ctx, http.MethodPost, "/api/redemption/", map[string]any{"name": "soak", "quota": 1000, "count": 1}, &keys)
		if err == nil && len(keys) == 1 {
			w.addPending("code", pendingRow{code: keys[0], at: time.Now()})
		}
		return err
	}},
	{"redemption.redeem", 2, func(ctx context.Context, w *world, n *node, r *rand.Rand) error {
		p, ok := w.takePending("code", time.Now().Add(-pendingAge))
		if !ok {
			return errNothing
		}
		u := w.users[r.IntN(len(w.users))]
		return gatewayproc.Call(ctx, u.client, http.MethodPost, n.base+"/api/user/topup", "", map[string]any{"key": p.code}, nil)
	}},
	{"order.paid", 1, func(ctx context.Context, w *world, n *node, r *rand.Rand) error {
		u := w.users[r.IntN(len(w.users))]
		var o idOnly
		if err := gatewayproc.Call(ctx, u.client, http.MethodPost, n.base+"/api/order/plan", "",
			map[string]any{"plan_id": w.planID, "mode": "stack"}, &o); err != nil {
			return fmt.Errorf("create: %w", err)
		}
		return n.root(ctx, http.MethodPut, fmt.Sprintf("/api/order/%d", o.ID), map[string]any{"status": 1, "pay_trade_no": "soak"}, nil)
	}},
}

// pick draws an operation by weight.
func pick(r *rand.Rand) operation {
	total := 0
	for _, o := range operations {
		total += o.weight
	}
	x := r.IntN(total)
	for _, o := range operations {
		if x < o.weight {
			return o
		}
		x -= o.weight
	}
	return operations[0]
}

// randomText is a short unique-enough text: display names and usernames
// allow at most 20 characters.
func randomText(r *rand.Rand) string {
	return fmt.Sprintf("s%08x", r.Uint32())
}

// opStats counts the outcomes of each operation.
type opStats struct {
	mu  sync.Mutex
	ops map[string]*opCount
}

type opCount struct {
	ok, failed int
	firstError string
}

func newOpStats() *opStats { return &opStats{ops: map[string]*opCount{}} }

func (s *opStats) record(op string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.ops[op]
	if c == nil {
		c = &opCount{}
		s.ops[op] = c
	}
	if err == nil {
		c.ok++
		return
	}
	c.failed++
	if c.firstError == "" {
		c.firstError = err.Error()
	}
}

// totals are the calls made and failed, over every operation.
func (s *opStats) totals() (ok, failed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.ops {
		ok += c.ok
		failed += c.failed
	}
	return ok, failed
}

// names lists the operations seen, sorted.
func (s *opStats) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.ops))
	for n := range s.ops {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// runLoad runs workers per node until ctx ends, each node's workers
// together starting at most rate operations per second (0: as fast as they
// can). A worker whose node is down waits; calls cut by the kill count as
// failures.
func runLoad(ctx context.Context, w *world, workers, rate int, stats *opStats) {
	var wg sync.WaitGroup
	for _, n := range w.nodes {
		var pace <-chan time.Time
		if rate > 0 {
			t := time.NewTicker(time.Second / time.Duration(rate))
			defer t.Stop()
			pace = t.C
		}
		for i := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(n.id), uint64(i)+uint64(time.Now().UnixNano())))
				for ctx.Err() == nil {
					if !n.up.Load() {
						time.Sleep(50 * time.Millisecond)
						continue
					}
					if pace != nil {
						select {
						case <-pace:
						case <-ctx.Done():
							return
						}
					}
					op := pick(r)
					err := op.run(ctx, w, n, r)
					if errors.Is(err, errNothing) || (err != nil && ctx.Err() != nil) {
						continue
					}
					stats.record(op.name, err)
				}
			}()
		}
	}
	wg.Wait()
}
