package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"sync"
	"time"

	"github.com/modelgate/modelgate/internal/gatewayproc"
)

// soakModel is the model every relay call asks for.
const soakModel = "soak-model"

// Sizes of the seeded world.
const (
	soakUsers     = 6
	userQuota     = int64(1_000_000_000_000)
	soakPassword  = "soak-password-1"
	planLimits    = `{"soak-model":{"period_h":5,"request_period":1000000000000000,"token_period":1000000000000000}}`
	visibleWithin = 30 * time.Second
)

// soakUser is a user the load acts as: its session (a cookie jar) and its
// API keys.
type soakUser struct {
	id     int64
	name   string
	client *http.Client
	keys   []tokenRef
}

type tokenRef struct {
	id  int64
	key string
}

// pendingRow is a row created by the load and deleted (or redeemed) later,
// on another node, once it had time to replicate.
type pendingRow struct {
	id    int64
	code  string
	owner *soakUser
	at    time.Time
}

// world is what the seeding made and the load works on.
type world struct {
	nodes                           []*node
	channelID, planID, groupPriceID int64
	subscriptionID                  int64
	probeUsers                      []int64 // by node index: the user whose display name only that node's probe writes
	hotPrices                       []int64
	users                           []*soakUser // balance-billed
	planUser                        *soakUser   // plan-billed, no balance
	mu                              sync.Mutex
	pending                         map[string][]pendingRow // by kind: price, token, user, code
}

func (w *world) addPending(kind string, p pendingRow) {
	w.mu.Lock()
	w.pending[kind] = append(w.pending[kind], p)
	w.mu.Unlock()
}

// takePending removes and returns the oldest row of kind created before
// cutoff.
func (w *world) takePending(kind string, cutoff time.Time) (pendingRow, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	rows := w.pending[kind]
	if len(rows) == 0 || rows[0].at.After(cutoff) {
		return pendingRow{}, false
	}
	w.pending[kind] = rows[1:]
	return rows[0], true
}

type idOnly struct {
	ID int64 `json:"id"`
}

// seed creates the channel, prices, plan, users and keys, spread over the
// nodes, and waits until every key relays on every node.
func seed(ctx context.Context, nodes []*node, upstream string) (*world, error) {
	w := &world{nodes: nodes, pending: map[string][]pendingRow{}}
	n1, n2, n3 := nodes[0], nodes[1], nodes[2]
	var ch, gp, plan idOnly
	steps := []struct {
		n          *node
		what, path string
		body, out  any
	}{
		{n1, "create channel", "/api/channel/", map[string]any{"type": 1, "name": "soak", "key": upstreamKey,
			"base_url": upstream, "models": soakModel, "group": "default"}, &ch},
		{n1, "create model price", "/api/model_price/", map[string]any{"model_name": soakModel, "input_price": 1, "output_price": 2}, nil},
		{n2, "create group price", "/api/group_price/", map[string]any{"group_name": "soak", "model_name": "", "discount": 0.9}, &gp},
		{n3, "create plan", "/api/plan/", map[string]any{"name": "soak-plan", "price": 1, "duration_days": 30, "status": 1,
			"model_limits": planLimits}, &plan},
	}
	for _, s := range steps {
		if err := s.n.root(ctx, http.MethodPost, s.path, s.body, s.out); err != nil {
			return nil, fmt.Errorf("%s on node %d: %w", s.what, s.n.id, err)
		}
	}
	w.channelID, w.groupPriceID, w.planID = ch.ID, gp.ID, plan.ID
	for i := range nodes {
		var probe idOnly
		if err := n1.root(ctx, http.MethodPost, "/api/user/", map[string]any{"username": fmt.Sprintf("soak-probe-%d", i+1),
			"password": soakPassword}, &probe); err != nil {
			return nil, fmt.Errorf("create probe user: %w", err)
		}
		w.probeUsers = append(w.probeUsers, probe.ID)
	}
	for i, n := range nodes {
		var p idOnly
		if err := n.root(ctx, http.MethodPost, "/api/model_price/", map[string]any{"model_name": fmt.Sprintf("soak-hot-%d", i+1),
			"input_price": 1, "output_price": 1}, &p); err != nil {
			return nil, fmt.Errorf("create hot price on node %d: %w", n.id, err)
		}
		w.hotPrices = append(w.hotPrices, p.ID)
	}
	for i := range soakUsers {
		u, err := createUser(ctx, nodes[i%len(nodes)], fmt.Sprintf("soak-user-%d", i+1), userQuota)
		if err != nil {
			return nil, err
		}
		w.users = append(w.users, u)
	}
	var err error
	if w.planUser, err = createUser(ctx, n1, "soak-plan-user", 0); err != nil {
		return nil, err
	}
	all := append(append([]*soakUser{}, w.users...), w.planUser)
	for _, u := range all {
		if err := waitVisible(ctx, nodes, fmt.Sprintf("/api/user/%d", u.id)); err != nil {
			return nil, err
		}
		if err := login(ctx, n1, u); err != nil {
			return nil, err
		}
	}
	for _, id := range w.probeUsers {
		if err := waitVisible(ctx, nodes, fmt.Sprintf("/api/user/%d", id)); err != nil {
			return nil, err
		}
	}
	if err := waitVisible(ctx, nodes, fmt.Sprintf("/api/plan/%d", w.planID)); err != nil {
		return nil, err
	}
	var sub idOnly
	if err := n2.root(ctx, http.MethodPost, "/api/subscription/", map[string]any{"user_id": w.planUser.id, "plan_id": w.planID,
		"duration_days": 30}, &sub); err != nil {
		return nil, fmt.Errorf("create subscription on node 2: %w", err)
	}
	w.subscriptionID = sub.ID
	for i, u := range all {
		// A limited key (remain_quota moves) and an unlimited one, made on
		// another node than the user.
		for j, limited := range []bool{true, false} {
			n := nodes[(i+1+j)%len(nodes)]
			t, err := createKey(ctx, n, u, fmt.Sprintf("key-%d", j+1), limited)
			if err != nil {
				return nil, err
			}
			u.keys = append(u.keys, t)
		}
	}
	if err := waitVisible(ctx, nodes, fmt.Sprintf("/api/subscription/%d", w.subscriptionID)); err != nil {
		return nil, err
	}
	for _, u := range all {
		for _, k := range u.keys {
			if err := waitRelays(ctx, nodes, k.key); err != nil {
				return nil, fmt.Errorf("key of %s: %w", u.name, err)
			}
		}
	}
	return w, nil
}

func createUser(ctx context.Context, n *node, name string, quota int64) (*soakUser, error) {
	var v idOnly
	if err := n.root(ctx, http.MethodPost, "/api/user/", map[string]any{"username": name, "password": soakPassword,
		"quota": quota}, &v); err != nil {
		return nil, fmt.Errorf("create user %s on node %d: %w", name, n.id, err)
	}
	jar, _ := cookiejar.New(nil)
	return &soakUser{id: v.ID, name: name, client: &http.Client{Jar: jar, Timeout: 10 * time.Second}}, nil
}

// login opens u's session; the cookie is good on every node (one session
// secret).
func login(ctx context.Context, n *node, u *soakUser) error {
	err := gatewayproc.Call(ctx, u.client, http.MethodPost, n.base+"/api/user/login", "",
		map[string]any{"username": u.name, "password": soakPassword}, nil)
	if err != nil {
		return fmt.Errorf("log in as %s on node %d: %w", u.name, n.id, err)
	}
	return nil
}

func createKey(ctx context.Context, n *node, u *soakUser, name string, limited bool) (tokenRef, error) {
	body := map[string]any{"name": name, "expired_time": -1, "unlimited_quota": !limited}
	if limited {
		body["remain_quota"] = userQuota / 10
	}
	var t struct {
		ID  int64  `json:"id"`
		Key string `json:"key"`
	}
	if err := gatewayproc.Call(ctx, u.client, http.MethodPost, n.base+"/api/token/", "", body, &t); err != nil {
		return tokenRef{}, fmt.Errorf("create key of %s on node %d: %w", u.name, n.id, err)
	}
	if !strings.HasPrefix(t.Key, "sk-") {
		return tokenRef{}, fmt.Errorf("create key of %s: data.key is not a full sk- key", u.name)
	}
	return tokenRef{id: t.ID, key: t.Key}, nil
}

// waitVisible polls a root GET of path on every node until each answers
// success.
func waitVisible(ctx context.Context, nodes []*node, path string) error {
	deadline := time.Now().Add(visibleWithin)
	for _, n := range nodes {
		for {
			err := n.root(ctx, http.MethodGet, path, nil, nil)
			if err == nil {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("%s not on node %d within %s: %w", path, n.id, visibleWithin, errors.Join(err, ctx.Err()))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// waitRelays calls the relay with key on every node until each succeeds.
func waitRelays(ctx context.Context, nodes []*node, key string) error {
	deadline := time.Now().Add(visibleWithin)
	for _, n := range nodes {
		for {
			err := relayCall(ctx, n, key)
			if err == nil {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("no relay on node %d within %s: %w", n.id, visibleWithin, errors.Join(err, ctx.Err()))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}
