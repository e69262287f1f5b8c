package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/cluster/replica"
	"github.com/modelgate/modelgate/internal/cluster/replicate"
	"github.com/modelgate/modelgate/internal/user"
)

// Issue 24 §2, "nothing lost unseen": each origin's events apply in a
// gap-free sequence; a gap, a step back or a date far in the future is
// refused whole; a sender resends from the event a receiver needs, and a
// peer that needs events pruned at the sender is shown as needing a
// resync instead of silently missing them.

// refuseOutOfSequence posts a batch from src and checks it is refused for
// its order, naming want in the message and in data.expected_id.
func refuseOutOfSequence(t *testing.T, c *apptest.Client, src int, events []replicate.Event, want int64) {
	t.Helper()
	r := c.Fail("POST", "/api/cluster/sync", replicate.Batch{SourceNodeID: src, Events: events}, http.StatusOK,
		fmt.Sprintf(replicate.MsgOutOfSequence, want))
	var d replicate.Refused
	r.Decode(t, &d)
	if d.ExpectedID != want {
		t.Fatalf("data %s, want expected_id %d", r.Data, want)
	}
}

// appliedMark is the last event of node origin applied on e.
func appliedMark(t *testing.T, e *apptest.Env, origin int) int64 {
	t.Helper()
	marks, err := e.App.Replica.AppliedMarks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return marks[origin]
}

func TestClusterSyncRefusesOutOfSequence(t *testing.T) {
	apptest.Parallel(t)
	recv := apptest.NewNode(t, 1, apptest.NodeSecret(1), "CLUSTER_PING_INTERVAL", "1h")
	root := recv.Root()
	src := newSource(t, 7)
	sc := syncer(recv, apptest.NodeSecret(1), 7)
	_, uid := src.env.NewUser("sequenced", user.RoleUser)
	for i := range 3 {
		src.root.OK("POST", "/api/topup", map[string]any{"user_id": uid, "quota": 1000 + i})
	}
	evs := src.events(t, 0, "")
	if len(evs) < 6 {
		t.Fatalf("%d events on the source", len(evs))
	}
	for i, e := range evs {
		if want := int64(i+1)*50 + 7; e.ID != want {
			t.Fatalf("event %d of the source has id %d, want %d: the outbox has a gap", i, e.ID, want)
		}
	}

	// The first batch of an origin starts at seq 1.
	refuseOutOfSequence(t, sc, 7, evs[1:], evs[0].ID)
	if _, ok := userOn(t, root, uid); ok {
		t.Fatal("a refused batch applied its INSERT")
	}
	half := len(evs) / 2
	if a := push(t, sc, 7, evs[:half]); a != (replicate.Answer{Applied: half}) {
		t.Fatalf("first half: %+v", a)
	}
	before := quotaOn(t, root, uid)

	// A gap, a lower id later in the batch, and a forged high id (the
	// attack: it moved the mark, and every later real event was skipped)
	// are refused whole: nothing applies, the mark stays.
	refuseOutOfSequence(t, sc, 7, evs[half+1:], evs[half].ID)
	refuseOutOfSequence(t, sc, 7, []replicate.Event{evs[half], evs[half+1], evs[half-1]}, evs[half].ID)
	forged := replicate.Event{ID: 1_000_000*50 + 7, TableName: "users", Operation: "UPDATE", Kind: replica.KindDelta, PrimaryKey: uid,
		Data: json.RawMessage(`{"quota":30000000}`), EventTimeUS: time.Now().UnixMicro()}
	refuseOutOfSequence(t, sc, 7, []replicate.Event{forged}, evs[half].ID)
	refuseOutOfSequence(t, sc, 7, append([]replicate.Event{forged}, evs[half:]...), evs[half].ID)
	if q := quotaOn(t, root, uid); q != before {
		t.Fatalf("quota %d after refused batches, want %d", q, before)
	}
	if m := appliedMark(t, recv, 7); m != evs[half-1].ID {
		t.Fatalf("applied mark %d after refused batches, want %d", m, evs[half-1].ID)
	}

	// The rest in order applies, re-sent with what came before; sent
	// again, all is skipped.
	if a := push(t, sc, 7, evs); a != (replicate.Answer{Applied: len(evs) - half, Skipped: half}) {
		t.Fatalf("the whole sequence: %+v", a)
	}
	if a := push(t, sc, 7, evs); a != (replicate.Answer{Skipped: len(evs)}) {
		t.Fatalf("re-delivered: %+v", a)
	}
	if q, want := quotaOn(t, root, uid), quotaOn(t, src.root, uid); q != want {
		t.Fatalf("quota %d on the receiver, %d on the source", q, want)
	}
}

func TestClusterSyncRefusesFutureEvents(t *testing.T) {
	apptest.Parallel(t)
	recv := apptest.NewNode(t, 1, apptest.NodeSecret(1), "CLUSTER_PING_INTERVAL", "1h", "CLUSTER_MAX_CLOCK_SKEW", "1m")
	root := recv.Root()
	_, uid := recv.NewUser("clocked", user.RoleUser)
	before := quotaOn(t, root, uid)
	sc := syncer(recv, apptest.NodeSecret(1), 7)
	delta := func(at time.Time, secondsOnly bool) replicate.Event {
		e := replicate.Event{ID: 57, TableName: "users", Operation: "UPDATE", Kind: replica.KindDelta, PrimaryKey: uid,
			Data: json.RawMessage(`{"quota":7}`), EventTime: at.Unix(), EventTimeUS: at.UnixMicro()}
		if secondsOnly {
			e.EventTimeUS = 0
		}
		return e
	}
	y2100 := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		ev   replicate.Event
	}{
		{"dated 2100", delta(y2100, false)},
		{"dated 2100, in seconds only", delta(y2100, true)},
		{"just past CLUSTER_MAX_CLOCK_SKEW", delta(time.Now().Add(time.Minute+5*time.Second), false)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc.Fail("POST", "/api/cluster/sync", replicate.Batch{SourceNodeID: 7, Events: []replicate.Event{tc.ev}}, http.StatusOK,
				fmt.Sprintf(replicate.MsgEventFuture, 57, "1m0s"))
		})
	}
	if q := quotaOn(t, root, uid); q != before {
		t.Fatalf("quota %d after refused events, want %d", q, before)
	}
	// Within the bound it applies.
	if a := push(t, sc, 7, []replicate.Event{delta(time.Now().Add(30*time.Second), false)}); a != (replicate.Answer{Applied: 1}) {
		t.Fatalf("an event 30 s ahead: %+v", a)
	}
	// The node's clock was not moved to 2100: a later local write's
	// version (its event time) stays within the bound.
	root.OK("PUT", "/api/user/", map[string]any{"id": uid, "username": "clocked", "display_name": "after"})
	evs, err := recv.App.Replica.EventsAfter(context.Background(), 0, 1000)
	if err != nil || len(evs) == 0 {
		t.Fatalf("outbox: %v, %d events", err, len(evs))
	}
	if last, bound := evs[len(evs)-1].TimeUS, time.Now().Add(time.Minute+time.Second).UnixMicro(); last > bound {
		t.Fatalf("a local write after the refused events is dated %v", time.UnixMicro(last))
	}
}

// logBuffer is a log destination read while the nodes write.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// loggedPair starts nodes 1 and 2 knowing each other, node 1 logging to
// logs (warn and above) and serving /metrics.
func loggedPair(t *testing.T, logs *logBuffer) (*apptest.Env, *apptest.Env) {
	t.Helper()
	vars := []string{"CLUSTER_PING_INTERVAL", "1h", "CLUSTER_PUSH_INTERVAL", "100ms"}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	n1 := apptest.NewNodeWithLog(t, 1, apptest.NodeSecret(1), log, append(vars, "METRICS_TOKEN", apptest.MetricsToken)...)
	n2 := apptest.NewNode(t, 2, apptest.NodeSecret(2), vars...)
	n2.AddTo(n1.Root(), 2)
	n1.AddTo(n2.Root(), 1)
	return n1, n2
}

// replicationInfo is the replication part of a node record in the list.
type replicationInfo struct {
	NodeID        int    `json:"node_id"`
	State         string `json:"state"`
	PendingEvents int64  `json:"pending_events"`
	LagSeconds    int64  `json:"lag_seconds"`
	AppliedSeq    int64  `json:"applied_seq"`
	AckedSeq      int64  `json:"acked_seq"`
}

func replicationOf(t *testing.T, root *apptest.Client, nodeID int) replicationInfo {
	t.Helper()
	for _, n := range apptest.OKData[[]replicationInfo](root, "GET", "/api/cluster_node/", nil) {
		if n.NodeID == nodeID {
			return n
		}
	}
	t.Fatalf("node %d is not listed", nodeID)
	return replicationInfo{}
}

// outboxAfter counts e's outbox events after the event id after.
func outboxAfter(t *testing.T, e *apptest.Env, after int64) int64 {
	t.Helper()
	evs, err := e.App.Replica.EventsAfter(context.Background(), after, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	return int64(len(evs))
}

// A peer whose data is behind what this node's cursor says it
// acknowledged (restored from a backup) refuses the next batch; the pusher
// rewinds to the event it names and resends, so it misses nothing.
func TestClusterPusherRewindsToTheEventNeeded(t *testing.T) {
	apptest.Parallel(t)
	var logs logBuffer
	n1, n2 := loggedPair(t, &logs)
	r1, r2 := n1.Root(), n2.Root()
	_, uid := n1.NewUser("rewound", user.RoleUser)
	pushedAll(t, n1, 2)
	rec := nodeRecordID(t, r1, 2)
	r1.OK("DELETE", apptest.Path("/api/cluster_node/%d", rec), nil)
	mark, err := n1.App.Replica.LastEventID(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		r1.OK("POST", "/api/topup", map[string]any{"user_id": uid, "quota": 100 + i})
	}
	// pending_events is the count of events, not a difference of ids.
	if got, want := replicationOf(t, r1, 2), outboxAfter(t, n1, mark); got.PendingEvents != want || got.AckedSeq != mark/50 {
		t.Fatalf("node 2 seen from node 1: %+v; want %d pending, acked seq %d", got, want, mark/50)
	}
	if err := n1.App.Replica.SetClusterCursor(context.Background(), 2, mark+2*50); err != nil {
		t.Fatal(err)
	}
	r1.OK("POST", apptest.Path("/api/cluster_node/%d/enable", rec), nil)
	apptest.Eventually(t, "the top-ups on node 2", func() bool {
		u, ok := userOn(t, r2, uid)
		return ok && u.Quota == quotaOn(t, r1, uid)
	})
	pushedAll(t, n1, 2)
	if !strings.Contains(logs.String(), "resending from the event it needs") || !strings.Contains(logs.String(), fmt.Sprintf("expected_id=%d", mark+50)) {
		t.Fatalf("no warning of the rewind in the log:\n%s", logs.String())
	}
	got := replicationOf(t, r1, 2)
	last, _ := n1.App.Replica.LastEventID(context.Background())
	if got.State != "alive" || got.PendingEvents != 0 || got.LagSeconds != 0 || got.AckedSeq != last/50 {
		t.Fatalf("node 2 after catching up: %+v", got)
	}
	if seen := replicationOf(t, r2, 1); seen.AppliedSeq != last/50 {
		t.Fatalf("node 1 seen from node 2: %+v, want applied seq %d", seen, last/50)
	}
}

// A peer that needs events the sender pruned (7-day retention, or pruned
// once the others acknowledged them) is shown as needing a resync: nothing
// after the gap is sent to it, the error is logged once, the metric says
// so. A new peer that never had the pruned events is found the same way
// through its refusal.
func TestClusterPeerBehindRetentionNeedsResync(t *testing.T) {
	apptest.Parallel(t)
	var logs logBuffer
	n1, n2 := loggedPair(t, &logs)
	r1, r2 := n1.Root(), n2.Root()
	ctx := context.Background()
	_, uid := n1.NewUser("retained", user.RoleUser)
	pushedAll(t, n1, 2)
	before := quotaOn(t, r2, uid)
	rec := nodeRecordID(t, r1, 2)
	r1.OK("DELETE", apptest.Path("/api/cluster_node/%d", rec), nil)
	r1.OK("POST", "/api/topup", map[string]any{"user_id": uid, "quota": 500})
	// Retention passes: every event goes, node 2 has not acknowledged them.
	if _, err := n1.App.Replica.PruneEvents(ctx, 0, 0, time.Now().Add(time.Hour).Unix()); err != nil {
		t.Fatal(err)
	}
	r1.OK("POST", "/api/topup", map[string]any{"user_id": uid, "quota": 700})
	r1.OK("POST", apptest.Path("/api/cluster_node/%d/enable", rec), nil)

	apptest.Eventually(t, "node 2 shown as needing a resync", func() bool {
		return replicationOf(t, r1, 2).State == "needs_resync"
	})
	if v, ok := n1.Scrape().Value("modelgate_cluster_peer_needs_resync", "peer", "node-2"); !ok || v != 1 {
		t.Fatalf("needs_resync metric %v (%v), want 1", v, ok)
	}
	time.Sleep(500 * time.Millisecond) // several push rounds
	if n := strings.Count(logs.String(), "needs a resync"); n != 1 {
		t.Fatalf("the resync is logged %d times, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "level=ERROR") {
		t.Fatalf("not logged at error level:\n%s", logs.String())
	}
	// Nothing after the gap was applied: no top-up is missing unseen.
	if q := quotaOn(t, r2, uid); q != before {
		t.Fatalf("quota on node 2 %d, want %d (the later top-up must not apply past the pruned one)", q, before)
	}
	// The backlog is the events node 2 lacks, counted, in the list and in
	// the metric (not the difference of ids, 50 times the count).
	pending := outboxAfter(t, n1, 0)
	if got := replicationOf(t, r1, 2); got.PendingEvents != pending || got.LagSeconds < 0 {
		t.Fatalf("node 2 seen from node 1: %+v, want %d pending", got, pending)
	}
	if v, _ := n1.Scrape().Value("modelgate_cluster_peer_pending_events", "peer", "node-2"); int64(v) != pending {
		t.Fatalf("metric pending %v, want %d", v, pending)
	}

	// A node added after the pruning, which never had node 1's early
	// events: its refusal names seq 1, pruned here.
	n3 := apptest.NewNode(t, 3, apptest.NodeSecret(3), "CLUSTER_PING_INTERVAL", "1h")
	n3.AddTo(r1, 3)
	n1.AddTo(n3.Root(), 1) // node 3 hears only a node it has a secret for
	apptest.Eventually(t, "node 3 shown as needing a resync", func() bool {
		return replicationOf(t, r1, 3).State == "needs_resync"
	})
	if _, ok := userOn(t, n3.Root(), uid); ok {
		t.Fatal("node 3 applied events after a gap")
	}
}
