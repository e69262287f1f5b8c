package ratelimit

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// An admission whose answer the gateway did not get must not keep a
// slot: the script refuses to run past its deadline, set on Redis's clock
// (redisClock), and the slot of an admission that may have run in time
// anyway (its answer was lost) is freed once Redis answers again
// (owedSlots).

// redisClock estimates Redis's clock from this node's, so a deadline the
// node sets can be checked by a script against Redis's TIME: the clocks
// of the nodes and of Redis may disagree by any amount.
type redisClock struct {
	// now is this node's clock. Only its differences matter, and the
	// default reads the monotonic clock, so a step of the wall clock does
	// not move deadlines.
	now func() time.Time
	// offset is Redis's time minus now, in ms, learned from answers;
	// known is set by the first.
	offset atomic.Int64
	known  atomic.Bool
}

// preciseRTT: an answer that took longer tells Redis's time too vaguely
// to replace an estimate.
const preciseRTT = 50 * time.Millisecond

// local is this node's time in ms.
func (c *redisClock) local() int64 { return c.now().UnixMilli() }

// deadline is the Redis time after which an admission written at local
// time sent must not run, within after it. Before any answer the clocks
// are taken to agree; an answer that says otherwise corrects it and the
// admission is sent again.
func (c *redisClock) deadline(sent int64, within time.Duration) int64 {
	return sent + within.Milliseconds() + c.offset.Load()
}

// deadlineArg is an admission's deadline as a script argument. go-redis
// marshals arguments as it writes the command to a connection, so the
// deadline counts from then, as the client's wait for the answer does
// (ReadTimeout): time spent waiting for a pooled connection does not
// shorten it. It is marshalled in the caller's goroutine.
type deadlineArg struct {
	clock  *redisClock
	within time.Duration
	sent   int64 // local ms when last written
}

func (d *deadlineArg) MarshalBinary() ([]byte, error) {
	d.sent = d.clock.local()
	return strconv.AppendInt(nil, d.clock.deadline(d.sent, d.within), 10), nil
}

// observe learns from an answer that left at local time sent, came back
// at received and says Redis's time was redisNow while the script ran: at
// some point in between, so the middle is off by at most half the round
// trip; only an answer faster than preciseRTT replaces a known estimate.
// A late answer always corrects it (it is evidently wrong), and takes the
// script to have run just before the answer came: a Redis that was slow
// runs a script late in the round trip, and an estimate that errs that way
// makes deadlines earlier, never later than the gateway's wait.
func (c *redisClock) observe(sent, received, redisNow int64, late bool) {
	switch {
	case late:
		c.offset.Store(redisNow - received)
	case c.known.Load() && received-sent > preciseRTT.Milliseconds():
		return
	default:
		c.offset.Store(redisNow - (sent+received)/2)
	}
	c.known.Store(true)
}

// monotonicClock is the wall time at start plus the monotonic time since.
func monotonicClock() func() time.Time {
	start := time.Now()
	return func() time.Time { return start.Add(time.Since(start)) }
}

// maxOwed bounds the slots remembered; beyond it a slot is left to its
// lease (slotTTL).
const maxOwed = 10_000

// owedSlots are slots this node may hold in Redis without knowing it: an
// admission or settlement whose answer did not come. Each is removed
// (exactly its own member) when Redis answers again; removing one that
// was never taken changes nothing.
type owedSlots struct {
	n      atomic.Int64 // len(slots), read without the lock on every answer
	mu     sync.Mutex
	slots  []owedSlot
	paying bool
}

type owedSlot struct {
	sets   []string
	member string
}

// owe remembers a slot that member may hold in each of sets.
func (b *redisBackend) owe(sets []string, member string) {
	if len(sets) == 0 {
		return
	}
	o := &b.owed
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.slots) < maxOwed {
		o.slots = append(o.slots, owedSlot{sets, member})
		o.n.Store(int64(len(o.slots)))
	}
}

// pay frees the owed slots, in the background: Redis has just answered.
// A failure keeps them for the next answer.
func (b *redisBackend) pay() {
	o := &b.owed
	if o.n.Load() == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.paying || len(o.slots) == 0 {
		return
	}
	o.paying = true
	go b.payOwed()
}

func (b *redisBackend) payOwed() {
	o := &b.owed
	for {
		o.mu.Lock()
		batch := o.slots[:min(len(o.slots), 256)]
		o.slots = o.slots[len(batch):]
		o.n.Store(int64(len(o.slots)))
		if len(batch) == 0 {
			o.slots, o.paying = nil, false
			o.mu.Unlock()
			return
		}
		o.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, s := range batch {
				for _, set := range s.sets {
					p.ZRem(ctx, set, s.member)
				}
			}
			return nil
		})
		cancel()
		if err != nil {
			o.mu.Lock()
			if len(o.slots)+len(batch) <= maxOwed {
				o.slots = append(o.slots, batch...)
				o.n.Store(int64(len(o.slots)))
			}
			o.paying = false
			o.mu.Unlock()
			return
		}
	}
}
