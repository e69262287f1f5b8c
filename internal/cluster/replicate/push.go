package replicate

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/modelgate/modelgate/internal/cluster"
	"github.com/modelgate/modelgate/internal/cluster/peer"
	"github.com/modelgate/modelgate/internal/cluster/replica"
	"github.com/modelgate/modelgate/internal/store"
)

// SecretHeader carries the target node's CLUSTER_SECRET (spec, Cluster
// rule 2); the same header as ping's.
const SecretHeader = peer.SecretHeader

// Retention bounds how long an event waits for a peer that does not
// acknowledge it (down, disabled or never completed): after it the event
// is pruned even so, and such a peer has to join again from a snapshot
// (docs/cluster.md). Events every peer acknowledged are pruned at once,
// but never before minRetention: a node joining from a snapshot must still
// find what the other nodes wrote after the snapshot was taken.
const (
	Retention    = 7 * 24 * time.Hour
	minRetention = time.Hour
)

// pushTimeout bounds one batch's call; maxAnswerBytes its answer.
const (
	pushTimeout    = 15 * time.Second
	maxAnswerBytes = 1 << 20
)

// maxBackoff is the longest pause before a peer whose pushes fail is tried
// again.
const maxBackoff = time.Minute

// Config is what a Pusher needs.
type Config struct {
	Self cluster.Node
	// PreviousSecret is CLUSTER_PREVIOUS_SECRET (peer.Self).
	PreviousSecret string
	// Interval is CLUSTER_PUSH_INTERVAL: a change reaches the peers within
	// it (sooner: a commit wakes the pusher); BatchSize CLUSTER_BATCH_SIZE.
	Interval  time.Duration
	BatchSize int
	Log       *slog.Logger
}

// Pusher sends this node's events to its peers.
type Pusher struct {
	store   *store.Store
	replica *replica.Replica
	cfg     Config
	caller  peer.Caller
	wake    chan struct{}

	mu      sync.Mutex
	backoff map[int]backoff // by peer node id
	busy    map[int]bool    // peers with a push running
	resync  map[int]bool    // peers found needing a resync (logged once)
	running sync.WaitGroup  // the pushes running
	// nextPrune is when acknowledged events are pruned next.
	nextPrune time.Time
}

type backoff struct {
	next   time.Time
	delay  time.Duration
	failed int64 // unix second of the last failure
}

// New returns a Pusher of rep's outbox to the peers of st's node table.
func New(st *store.Store, rep *replica.Replica, cfg Config) *Pusher {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 50
	}
	self := peer.Self{NodeID: cfg.Self.NodeID, Secret: cfg.Self.Secret, PreviousSecret: cfg.PreviousSecret}
	return &Pusher{store: st, replica: rep, cfg: cfg, caller: peer.Caller{Client: peer.NewClient(pushTimeout), Self: self}, wake: make(chan struct{}, 1), backoff: map[int]backoff{}, busy: map[int]bool{},
		resync: map[int]bool{}}
}

// Changed wakes the pusher after a commit that wrote events; register it
// with Store.OnCommit.
func (p *Pusher) Changed(changes []store.Change) {
	for _, c := range changes {
		if !c.Remote {
			p.wakeUp()
			return
		}
	}
}

// wakeUp starts a round soon (Run).
func (p *Pusher) wakeUp() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Run pushes every Interval, and soon after a local commit, until ctx
// ends, then waits for the pushes in flight.
func (p *Pusher) Run(ctx context.Context) {
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	defer p.running.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-p.wake:
			// Commits close together share one round.
			select {
			case <-ctx.Done():
				return
			case <-time.After(wakeDelay):
			}
		}
		if err := p.Round(ctx); err != nil && ctx.Err() == nil {
			p.cfg.Log.Warn("cluster push round", "err", err)
		}
	}
}

// wakeDelay gathers the commits of a burst into one round.
const wakeDelay = 20 * time.Millisecond

// Round starts a push to every enabled peer that has a secret, is not
// backing off and has no push running, each from its cursor, and prunes
// what every peer acknowledged. It does not wait for the pushes: a peer
// catching up on many events (back from an outage) takes its time while
// the others keep receiving each change at once. A push sends at most
// maxBatchesPerTurn batches, then wakes the next round, so a peer
// disabled meanwhile stops receiving soon.
func (p *Pusher) Round(ctx context.Context) error {
	nodes, err := p.store.AllClusterNodes(ctx)
	if err != nil {
		return err
	}
	cursors, err := p.replica.ClusterCursors(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	for _, n := range nodes {
		if n.Disabled || n.SecretKey == "" || n.NodeID == p.cfg.Self.NodeID || !p.start(n, now) {
			continue
		}
		p.running.Add(1)
		go func() {
			defer p.running.Done()
			more, err := p.catchUp(ctx, n, cursors[n.NodeID])
			p.mu.Lock()
			delete(p.busy, n.NodeID)
			p.mu.Unlock()
			if ctx.Err() != nil {
				return
			}
			p.outcome(n, err)
			if more && err == nil {
				p.wakeUp()
			}
		}()
	}
	p.mu.Lock()
	pruneNow := !now.Before(p.nextPrune)
	if pruneNow {
		p.nextPrune = now.Add(pruneEvery)
	}
	p.mu.Unlock()
	if !pruneNow {
		return nil
	}
	return p.prune(ctx, nodes)
}

// pruneEvery is how often acknowledged events are deleted.
const pruneEvery = time.Minute

// start marks peer n busy and reports true when a push to it may start
// now: none is running and it is not backing off. A peer that answered a
// ping since its last failed push (its heartbeat is newer) is tried at
// once: a node back from an outage does not wait out a minute's backoff.
func (p *Pusher) start(n store.ClusterNode, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.backoff[n.NodeID]
	if p.busy[n.NodeID] || (now.Before(b.next) && n.LastHeartbeat <= b.failed) {
		return false
	}
	p.busy[n.NodeID] = true
	return true
}

// outcome records a peer's push result: a failure doubles its pause (1 s
// up to maxBackoff), a success ends it.
func (p *Pusher) outcome(n store.ClusterNode, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if errors.Is(err, errNeedsResync) {
		// Not a failure to retry: nothing is sent until an operator
		// acts. Said once, at error level; the metric and the node list
		// show it for as long as it lasts.
		if !p.resync[n.NodeID] {
			p.resync[n.NodeID] = true
			p.cfg.Log.Error("cluster peer needs a resync: events it has not received were pruned here; no batch is pushed to it until it resyncs from a snapshot",
				"node_id", n.NodeID, "address", n.Address)
		}
		// The next probe (one event) in resyncProbeEvery, or at once
		// when the peer answers a ping again.
		p.backoff[n.NodeID] = backoff{next: time.Now().Add(resyncProbeEvery), failed: time.Now().Unix()}
		return
	}
	if p.resync[n.NodeID] {
		delete(p.resync, n.NodeID)
		p.cfg.Log.Info("cluster peer no longer needs a resync", "node_id", n.NodeID, "address", n.Address)
	}
	b := p.backoff[n.NodeID]
	if err == nil {
		if b.delay > 0 {
			p.cfg.Log.Info("cluster push to peer works again", "node_id", n.NodeID, "address", n.Address)
		}
		delete(p.backoff, n.NodeID)
		return
	}
	if b.delay == 0 {
		p.cfg.Log.Warn("cluster push to peer failed; retrying with backoff", "node_id", n.NodeID, "address", n.Address, "err", err)
	}
	b.delay = min(max(2*b.delay, time.Second), maxBackoff)
	b.next = time.Now().Add(b.delay)
	b.failed = time.Now().Unix()
	p.backoff[n.NodeID] = b
}

// resyncProbeEvery paces the probes of a peer that needs a resync: one
// event every few seconds, so a resynced peer is pushed to again soon
// without costing a refused batch per local commit.
const resyncProbeEvery = 3 * time.Second

// errNeedsResync stops the pushes to a peer that needs an event this node
// no longer keeps: sending what follows would lose it unseen.
var errNeedsResync = errors.New("the peer needs events pruned here: it must join again from a snapshot")

// catchUp sends peer n the events after cursor, batch by batch, moving its
// cursor after each acknowledged batch, until none is left or it sent
// maxBatchesPerTurn (more is then true). A peer whose next event was
// pruned gets nothing (errNeedsResync); a peer that refuses a batch for its
// order has its cursor rewound to the event it needs, and the push goes on
// from there in the next round (more is true).
func (p *Pusher) catchUp(ctx context.Context, n store.ClusterNode, cursor int64) (more bool, err error) {
	start, err := p.replica.OutboxStart(ctx)
	if err != nil {
		return false, err
	}
	if cluster.NeedsResync(cursor, start) {
		return false, p.probe(ctx, n, start)
	}
	for turn := 0; ctx.Err() == nil; turn++ {
		if turn == maxBatchesPerTurn {
			return true, nil
		}
		events, err := p.replica.EventsAfter(ctx, cursor, p.cfg.BatchSize)
		if err != nil || len(events) == 0 {
			return false, err
		}
		if cursor != 0 && events[0].ID != cursor+cluster.IDStride {
			// Pruned since OutboxStart was read: never send past a gap.
			return false, errNeedsResync
		}
		wire := make([]Event, 0, len(events))
		size := 0
		for _, e := range events {
			w := fromStore(e)
			size += len(w.Data) + 256
			if len(wire) > 0 && size > maxSendBytes {
				break
			}
			wire = append(wire, w)
		}
		if _, err := p.send(ctx, n, Batch{SourceNodeID: p.cfg.Self.NodeID, Events: wire}); err != nil {
			return p.rewind(ctx, n, cursor, wire[0].ID, err)
		}
		cursor = wire[len(wire)-1].ID
		// The outcome is kept even when shutting down now: the peer has
		// applied the batch.
		if err := p.replica.SetClusterCursor(context.WithoutCancel(ctx), n.NodeID, cursor); err != nil {
			return false, err
		}
	}
	return false, ctx.Err()
}

// probe offers peer n, which needs events pruned here, the oldest event
// this node still keeps (start), alone. A peer that resynced meanwhile (its
// applied mark for this node now at or past start's predecessor, from a
// snapshot) acknowledges it, applied or skipped as already held: its
// cursor then moves to start and pushing resumes by itself. Any other
// peer refuses it for its order (its mark is below the gap), and still
// needs a resync (errNeedsResync). The receiver's sequence rule makes the
// probe safe: it applies nothing past a gap. Probes are paced by outcome
// (resyncProbeEvery).
func (p *Pusher) probe(ctx context.Context, n store.ClusterNode, start int64) error {
	events, err := p.replica.EventsAfter(ctx, start-cluster.IDStride, 1)
	if err != nil {
		return err
	}
	if len(events) == 0 || events[0].ID != start {
		return errNeedsResync
	}
	if _, err := p.send(ctx, n, Batch{SourceNodeID: p.cfg.Self.NodeID, Events: []Event{fromStore(events[0])}}); err != nil {
		return errNeedsResync
	}
	return p.replica.SetClusterCursor(context.WithoutCancel(ctx), n.NodeID, start)
}

// rewind handles a failed send to n of a batch starting at event first:
// a refusal for its order names the event n needs next (Refused); when
// that is before first, n's cursor goes back to just before it and the
// push goes on from there (more is true). The cursor only moves back: a
// refusal naming an event at or after first is an ordinary failure, so a
// peer cannot make this node skip events. Anything else is returned as it
// is.
func (p *Pusher) rewind(ctx context.Context, n store.ClusterNode, cursor, first int64, err error) (more bool, _ error) {
	var r *peer.Refusal
	var d Refused
	if !errors.As(err, &r) || json.Unmarshal(r.Data, &d) != nil {
		return false, err
	}
	back, ok := rewindTo(d.ExpectedID, first, p.cfg.Self.NodeID)
	if !ok {
		return false, err
	}
	p.cfg.Log.Warn("cluster peer refused a batch out of sequence; resending from the event it needs", "node_id", n.NodeID,
		"address", n.Address, "expected_id", d.ExpectedID, "sent_from", first, "cursor", cursor)
	// Kept even when shutting down now, as an acknowledgement is.
	if err := p.replica.RewindClusterCursor(context.WithoutCancel(ctx), n.NodeID, back); err != nil {
		return false, err
	}
	return true, nil
}

// rewindTo is the cursor a peer that refused a batch of node self's
// events starting at first, needing expected, is rewound to: just before
// expected. ok is false when expected is not an event of self before
// first: the cursor never moves forward on a peer's word.
func rewindTo(expected, first int64, self int) (cursor int64, ok bool) {
	if expected <= 0 || expected >= first || expected%cluster.IDStride != int64(self) {
		return 0, false
	}
	return expected - cluster.IDStride, true
}

// maxBatchesPerTurn bounds one push to a peer; a peer with more to catch
// up on continues in the next round, started at once.
const maxBatchesPerTurn = 20

// send posts one batch to n with n's secret, signed with this node's own:
// success means n committed the batch.
func (p *Pusher) send(ctx context.Context, n store.ClusterNode, b Batch) (Answer, error) {
	var a Answer
	err := p.caller.Call(ctx, peer.Target{Address: n.Address, Secret: n.SecretKey}, cluster.SyncPath, b, maxAnswerBytes, &a)
	return a, err
}

// prune deletes the events every peer with a secret acknowledged (a
// disabled peer counts: it catches up when enabled), once older than
// minRetention, and every event older than Retention.
func (p *Pusher) prune(ctx context.Context, nodes []store.ClusterNode) error {
	cursors, err := p.replica.ClusterCursors(ctx)
	if err != nil {
		return err
	}
	last, err := p.replica.LastEventID(ctx)
	if err != nil {
		return err
	}
	through := last
	for _, n := range nodes {
		if n.SecretKey != "" && n.NodeID != p.cfg.Self.NodeID {
			through = min(through, cursors[n.NodeID])
		}
	}
	now := time.Now()
	_, err = p.replica.PruneEvents(ctx, through, now.Add(-minRetention).Unix(), now.Add(-Retention).Unix())
	return err
}
