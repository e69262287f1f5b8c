package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/cluster/replica"
	"github.com/modelgate/modelgate/internal/cluster/replicate"
	"github.com/modelgate/modelgate/internal/user"
)

// POST /api/cluster/sync driven by hand: a receiver (node 1) and source
// nodes whose events the test carries itself. The sources are real nodes
// without peers: their outboxes hold real events, which the test sends in
// the order a case needs.

// source is a node whose events the test delivers by hand.
type source struct {
	env  *apptest.Env
	root *apptest.Client
	id   int
}

func newSource(t *testing.T, id int) source {
	t.Helper()
	e := apptest.NewNode(t, id, apptest.NodeSecret(id), "CLUSTER_PING_INTERVAL", "1h", "CLUSTER_PUSH_INTERVAL", "1h")
	return source{env: e, root: e.Root(), id: id}
}

// events returns the source's outbox events after the event id after
// whose table is table (every table when empty), as the wire carries them.
func (s source) events(t *testing.T, after int64, table string) []replicate.Event {
	t.Helper()
	evs, err := s.env.App.Replica.EventsAfter(context.Background(), after, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []replicate.Event
	for _, e := range evs {
		if table == "" || e.Table == table {
			out = append(out, wireEvent(e))
		}
	}
	return out
}

// last is the id of the source's newest event.
func (s source) last(t *testing.T) int64 {
	t.Helper()
	id, err := s.env.App.Replica.LastEventID(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func wireEvent(e replica.Event) replicate.Event {
	data := json.RawMessage(e.Data)
	if len(data) == 0 {
		data = json.RawMessage("{}")
	}
	return replicate.Event{ID: e.ID, TableName: e.Table, Operation: e.Op, PrimaryKey: e.PK, Data: data,
		EventTime: e.TimeUS / 1_000_000, EventTimeUS: e.TimeUS, Kind: e.Kind, Key: e.Key}
}

// syncer posts batches to a node with secret in X-Cluster-Secret (the
// node's own, or another to test refusals), signed as the sources' first
// (push signs as the batch's source). The sources are recorded in the
// node's table with their secrets, at an address nothing answers: the
// node hears them and pushes them nothing.
func syncer(e *apptest.Env, secret string, sources ...int) *apptest.Client {
	c := e.Client()
	if secret != "" {
		c.Header.Set(replicate.SecretHeader, secret)
	}
	if len(sources) > 0 {
		c.SignAs(sources[0], apptest.NodeSecret(sources[0]))
	}
	root := e.Root()
	for _, id := range sources {
		root.OK("POST", "/api/cluster_node/", map[string]any{"node_id": id, "node_name": fmt.Sprintf("node-%d", id),
			"address": "http://127.0.0.1:9", "secret_key": apptest.NodeSecret(id)})
	}
	return c
}

// push sends a batch from node src, signed as src, and returns the answer.
func push(t *testing.T, c *apptest.Client, src int, events []replicate.Event) replicate.Answer {
	t.Helper()
	c.SignAs(src, apptest.NodeSecret(src))
	return apptest.OKData[replicate.Answer](c, "POST", "/api/cluster/sync", replicate.Batch{SourceNodeID: src, Events: events})
}

func quotaOn(t *testing.T, root *apptest.Client, id int64) int64 {
	t.Helper()
	u, ok := userOn(t, root, id)
	if !ok {
		t.Fatalf("user %d is not there", id)
	}
	return u.Quota
}

func TestClusterSyncBatchRules(t *testing.T) {
	apptest.Parallel(t)
	recv := apptest.NewNode(t, 1, apptest.NodeSecret(1), "CLUSTER_PING_INTERVAL", "1h")
	root := recv.Root()
	src := newSource(t, 7)
	sc := syncer(recv, apptest.NodeSecret(1), 7, 9)

	// A user created on node 7 arrives with its INSERT.
	_, uid := src.env.NewUser("remote", user.RoleUser)
	if a := push(t, sc, 7, src.events(t, 0, "")); a.Applied == 0 || a.Skipped != 0 {
		t.Fatalf("first batch: %+v", a)
	}
	if _, ok := userOn(t, root, uid); !ok {
		t.Fatal("the INSERT did not apply")
	}
	before := quotaOn(t, root, uid)

	// A delta batch sent twice moves the balance once. The batch is every
	// event after the mark (the delta and the top-up's log): a receiver
	// takes a source's events in sequence only.
	mark := src.last(t)
	src.root.OK("POST", "/api/topup", map[string]any{"user_id": uid, "quota": 1234})
	if delta := src.events(t, mark, "users"); len(delta) != 1 || delta[0].Kind != replica.KindDelta {
		t.Fatalf("top-up events: %+v", delta)
	}
	batch := src.events(t, mark, "")
	if a := push(t, sc, 7, batch); a != (replicate.Answer{Applied: len(batch)}) {
		t.Fatalf("delta: %+v", a)
	}
	if a := push(t, sc, 7, batch); a != (replicate.Answer{Skipped: len(batch)}) {
		t.Fatalf("the same delta again: %+v", a)
	}
	if q := quotaOn(t, root, uid); q != before+1234 {
		t.Fatalf("quota %d after the delta twice, want %d", q, before+1234)
	}

	// The same new batch sent by several pushes at once applies once:
	// one of node 7's, and the first batch of a node never heard from
	// (node 9: no applied mark to lock yet).
	mark = src.last(t)
	src.root.OK("POST", "/api/topup", map[string]any{"user_id": uid, "quota": 100})
	batch = src.events(t, mark, "")
	delta := src.events(t, mark, "users")
	first := replicate.Event{ID: 59, TableName: "users", Operation: "UPDATE", Kind: replica.KindDelta, PrimaryKey: uid,
		Data: json.RawMessage(`{"quota":10}`), EventTimeUS: time.Now().UnixMicro()}
	for _, b := range []replicate.Batch{{SourceNodeID: 7, Events: batch}, {SourceNodeID: 9, Events: []replicate.Event{first}}} {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var applied int
		c := recv.PeerClient(b.SourceNodeID, apptest.NodeSecret(b.SourceNodeID))
		for range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := c.Do("POST", "/api/cluster/sync", b)
				var a replicate.Answer
				if r.Success {
					r.Decode(t, &a)
				} else {
					t.Errorf("a concurrent push failed: %s", r.Raw)
				}
				mu.Lock()
				applied += a.Applied
				mu.Unlock()
			}()
		}
		wg.Wait()
		if applied != len(b.Events) {
			t.Fatalf("batch of node %d pushed 6 times at once: %d events applied, want %d", b.SourceNodeID, applied, len(b.Events))
		}
	}
	if q := quotaOn(t, root, uid); q != before+1344 {
		t.Fatalf("quota %d after the concurrent pushes, want %d", q, before+1344)
	}

	// Events that originated on the receiver itself are skipped.
	own := delta[0]
	own.ID = own.ID - 7 + 1 // the same sequence, node 1
	if a := push(t, sc, 7, []replicate.Event{own}); a != (replicate.Answer{Skipped: 1}) {
		t.Fatalf("an event of node 1 sent to node 1: %+v", a)
	}
	if q := quotaOn(t, root, uid); q != before+1344 {
		t.Fatalf("quota %d after an own event", q)
	}

	// Batch size: 50 pass, 51 are refused whole. The events follow node
	// 7's last one, seq after seq.
	mk := func(n int, first int64) []replicate.Event {
		evs := make([]replicate.Event, n)
		for i := range evs {
			evs[i] = delta[0]
			evs[i].ID = first + int64(i)*50
			evs[i].Data = json.RawMessage(`{"quota":1}`)
		}
		return evs
	}
	next := src.last(t) + 50
	sc.Fail("POST", "/api/cluster/sync", replicate.Batch{SourceNodeID: 7, Events: mk(51, next)}, http.StatusOK, fmt.Sprintf(replicate.MsgTooManyEvents, 50))
	if q := quotaOn(t, root, uid); q != before+1344 {
		t.Fatalf("quota %d after a refused batch", q)
	}
	if a := push(t, sc, 7, mk(50, next)); a != (replicate.Answer{Applied: 50}) {
		t.Fatalf("50 events: %+v", a)
	}
	if q := quotaOn(t, root, uid); q != before+1394 {
		t.Fatalf("quota %d after 50 deltas of 1, want %d", q, before+1394)
	}
}

// Batches of two sources that move the same rows in opposite orders, at
// once, all apply: a transaction the database aborts to break a deadlock
// runs again instead of failing the push.
func TestClusterSyncCrossingBatches(t *testing.T) {
	apptest.Parallel(t)
	recv := apptest.NewNode(t, 1, apptest.NodeSecret(1), "CLUSTER_PING_INTERVAL", "1h")
	root := recv.Root()
	_, u1 := recv.NewUser("cross1", user.RoleUser)
	_, u2 := recv.NewUser("cross2", user.RoleUser)
	b1, b2 := quotaOn(t, root, u1), quotaOn(t, root, u2)
	clients := map[int64]*apptest.Client{11: syncer(recv, apptest.NodeSecret(1), 11), 12: syncer(recv, apptest.NodeSecret(1), 12)}
	delta := func(id, user int64) replicate.Event {
		return replicate.Event{ID: id, TableName: "users", Operation: "UPDATE", Kind: replica.KindDelta, PrimaryKey: user,
			Data: json.RawMessage(`{"quota":1}`), EventTimeUS: time.Now().UnixMicro()}
	}
	const rounds = 10
	for r := range int64(rounds) {
		var wg sync.WaitGroup
		for _, src := range []int64{11, 12} {
			first, second := u1, u2
			if src == 12 {
				first, second = u2, u1
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				evs := []replicate.Event{delta((2*r+1)*50+src, first), delta((2*r+2)*50+src, second)}
				if res := clients[src].Do("POST", "/api/cluster/sync", replicate.Batch{SourceNodeID: int(src), Events: evs}); !res.Success {
					t.Errorf("round %d, node %d: %s", r, src, res.Raw)
				}
			}()
		}
		wg.Wait()
	}
	if q1, q2 := quotaOn(t, root, u1), quotaOn(t, root, u2); q1 != b1+2*rounds || q2 != b2+2*rounds {
		t.Fatalf("quotas %d, %d; want %d, %d", q1, q2, b1+2*rounds, b2+2*rounds)
	}
}

func TestClusterSyncRefusals(t *testing.T) {
	apptest.Parallel(t)
	recv := apptest.NewNode(t, 1, apptest.NodeSecret(1), "CLUSTER_PING_INTERVAL", "1h")
	root := recv.Root()
	_, uid := recv.NewUser("target", user.RoleUser)
	good := replicate.Event{ID: 57, TableName: "users", Operation: "UPDATE", Kind: replica.KindDelta, PrimaryKey: uid,
		Data: json.RawMessage(`{"quota":5}`), EventTime: time.Now().Unix(), EventTimeUS: time.Now().UnixMicro()}
	batch := func(src int, evs ...replicate.Event) replicate.Batch {
		return replicate.Batch{SourceNodeID: src, Events: evs}
	}
	// The secret first: missing or wrong, the same answer.
	for _, secret := range []string{"", "wrong", apptest.NodeSecret(2)} {
		syncer(recv, secret).Fail("POST", "/api/cluster/sync", batch(7, good), http.StatusUnauthorized, api.MsgClusterSecret)
	}
	c := syncer(recv, apptest.NodeSecret(1), 7)
	before := quotaOn(t, root, uid)
	with := func(f func(e *replicate.Event)) replicate.Event {
		e := good
		f(&e)
		return e
	}
	for _, tc := range []struct {
		name string
		body any
		msg  string
	}{
		{"no source", map[string]any{"events": []any{good}}, replicate.MsgSourceInvalid},
		{"source 50", batch(50, good), replicate.MsgSourceInvalid},
		{"source self", batch(1, good), replicate.MsgSourceSelf},
		{"no events", map[string]any{"source_node_id": 7}, replicate.MsgEventsMissing},
		{"bad operation", batch(7, good, with(func(e *replicate.Event) { e.ID = 107; e.Operation = "MERGE" })), fmt.Sprintf(replicate.MsgEventInvalid, 2)},
		{"no id", batch(7, with(func(e *replicate.Event) { e.ID = 0 })), fmt.Sprintf(replicate.MsgEventInvalid, 1)},
		{"no table", batch(7, with(func(e *replicate.Event) { e.TableName = "" })), fmt.Sprintf(replicate.MsgEventInvalid, 1)},
		{"bad kind", batch(7, with(func(e *replicate.Event) { e.Kind = "merge" })), fmt.Sprintf(replicate.MsgEventInvalid, 1)},
		{"data not an object", batch(7, with(func(e *replicate.Event) { e.Data = json.RawMessage(`[1]`) })), fmt.Sprintf(replicate.MsgEventInvalid, 1)},
		{"no time", batch(7, with(func(e *replicate.Event) { e.EventTime, e.EventTimeUS = 0, 0 })), fmt.Sprintf(replicate.MsgEventInvalid, 1)},
		{"negative key", batch(7, with(func(e *replicate.Event) { e.PrimaryKey = -1 })), fmt.Sprintf(replicate.MsgEventInvalid, 1)},
		{"another node's event", batch(7, good, with(func(e *replicate.Event) { e.ID = 108 })), fmt.Sprintf(replicate.MsgEventForeign, 108, 7)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.Fail("POST", "/api/cluster/sync", tc.body, http.StatusOK, tc.msg)
		})
	}
	// Nothing of the refused batches applied; the good event alone does.
	if q := quotaOn(t, root, uid); q != before {
		t.Fatalf("quota %d after refused batches, want %d", q, before)
	}
	if a := push(t, c, 7, []replicate.Event{good}); a != (replicate.Answer{Applied: 1}) {
		t.Fatalf("good event: %+v", a)
	}
	if q := quotaOn(t, root, uid); q != before+5 {
		t.Fatalf("quota %d, want %d", q, before+5)
	}

	// Hostile content inside well-formed events: a NUL in a row's text, an
	// amount at int64's limit. Each is skipped alone; nothing changes.
	now := time.Now()
	nul := replicate.Event{ID: 107, TableName: "users", Operation: "UPDATE", PrimaryKey: uid,
		Data:      json.RawMessage(fmt.Sprintf(`{"id":%d,"username":"target","display_name":"x\u0000y"}`, uid)),
		EventTime: now.Unix(), EventTimeUS: now.UnixMicro()}
	huge := with(func(e *replicate.Event) { e.ID = 157; e.Data = json.RawMessage(`{"quota":9223372036854775807}`) })
	if a := push(t, c, 7, []replicate.Event{nul, huge}); a != (replicate.Answer{Skipped: 2}) {
		t.Fatalf("hostile events: %+v", a)
	}
	if q := quotaOn(t, root, uid); q != before+5 {
		t.Fatalf("quota %d after hostile events, want %d", q, before+5)
	}
	if u, _ := row(t, root, apptest.Path("/api/user/%d", uid)); u["display_name"] != "target" {
		t.Fatalf("display name after a NUL event: %v", u["display_name"])
	}
	// A body beyond the 16 MiB limit is refused before anything is read
	// into events.
	big := map[string]any{"source_node_id": 7, "events": []any{map[string]any{"data": map[string]any{"pad": strings.Repeat("x", 17<<20)}}}}
	c.Fail("POST", "/api/cluster/sync", big, http.StatusRequestEntityTooLarge, "请求体过大,上限 16 MiB")
}

// A delta for a row that has not arrived waits for it; a DELETE is not
// undone by an older UPDATE that arrives after it.
func TestClusterSyncOutOfOrder(t *testing.T) {
	apptest.Parallel(t)
	recv := apptest.NewNode(t, 1, apptest.NodeSecret(1), "CLUSTER_PING_INTERVAL", "1h")
	root := recv.Root()
	a, b := newSource(t, 7), newSource(t, 8)
	toRecv, toA := syncer(recv, apptest.NodeSecret(1), 7, 8), syncer(a.env, apptest.NodeSecret(7), 8)

	// Node 8 creates a user; node 7 gets it and tops it up; node 1 gets
	// node 7's delta first, node 8's INSERT later.
	_, uid := b.env.NewUser("latecomer", user.RoleUser)
	insert := b.events(t, 0, "")
	push(t, toA, 8, insert)
	markA := a.last(t)
	a.root.OK("POST", "/api/topup", map[string]any{"user_id": uid, "quota": 4321})
	delta := a.events(t, markA, "")
	if got := push(t, toRecv, 7, delta); got != (replicate.Answer{Applied: len(delta)}) {
		t.Fatalf("parked delta: %+v", got)
	}
	if _, ok := userOn(t, root, uid); ok {
		t.Fatal("the user is on node 1 before its INSERT")
	}
	push(t, toRecv, 8, insert)
	if q, want := quotaOn(t, root, uid), quotaOn(t, a.root, uid); q != want {
		t.Fatalf("quota %d once the INSERT arrived, want %d (node 7's, the parked 4321 included)", q, want)
	}

	// Node 8 creates a price; node 7 edits it; node 8 deletes it later.
	// Node 1 gets the DELETE first, then node 7's older UPDATE.
	markB := b.last(t)
	pid := idOf(t, b.root.OK("POST", "/api/model_price/", map[string]any{"model_name": "m-ooo", "input_price": 1, "output_price": 2}))
	created := b.events(t, markB, "")
	push(t, toRecv, 8, created)
	push(t, toA, 8, created)
	markA = a.last(t)
	a.root.OK("PUT", "/api/model_price/", map[string]any{"id": pid, "input_price": 9})
	update := a.events(t, markA, "")
	markB = b.last(t)
	b.root.OK("DELETE", apptest.Path("/api/model_price/%d", pid), nil)
	deleted := b.events(t, markB, "")
	if got := push(t, toRecv, 8, deleted); got != (replicate.Answer{Applied: 1}) {
		t.Fatalf("delete: %+v", got)
	}
	push(t, toA, 8, deleted) // node 7 takes node 8's events in sequence too
	if got := push(t, toRecv, 7, update); got != (replicate.Answer{Skipped: 1}) {
		t.Fatalf("the older update after the delete: %+v", got)
	}
	if _, ok := listed(t, root, "/api/model_price/", pid); ok {
		t.Fatal("an older UPDATE brought a deleted price back")
	}
	// A newer UPDATE is not undone by an older one of another node
	// arriving after it: node 8 edits a price, then node 7 does; node 1
	// gets node 7's edit first.
	markB = b.last(t)
	pid = idOf(t, b.root.OK("POST", "/api/model_price/", map[string]any{"model_name": "m-lww", "input_price": 1, "output_price": 2}))
	created = b.events(t, markB, "")
	push(t, toRecv, 8, created)
	push(t, toA, 8, created)
	markB = b.last(t)
	b.root.OK("PUT", "/api/model_price/", map[string]any{"id": pid, "input_price": 3})
	older := b.events(t, markB, "")
	markA = a.last(t)
	a.root.OK("PUT", "/api/model_price/", map[string]any{"id": pid, "input_price": 4})
	if got := push(t, toRecv, 7, a.events(t, markA, "")); got != (replicate.Answer{Applied: 1}) {
		t.Fatalf("newer update: %+v", got)
	}
	if got := push(t, toRecv, 8, older); got != (replicate.Answer{Skipped: 1}) {
		t.Fatalf("older update after the newer one: %+v", got)
	}
	if m, ok := listed(t, root, "/api/model_price/", pid); !ok || m["input_price"] != 4.0 {
		t.Fatalf("price after a late older edit: %v", m)
	}
}
