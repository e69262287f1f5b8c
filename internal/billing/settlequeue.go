package billing

import (
	"sync"

	"github.com/modelgate/modelgate/internal/store"
)

// maxQueuedSettles bounds the settlements waiting for a commit: past it a
// call's settlement waits (the database is far behind), rather than the
// queue growing without end.
const maxQueuedSettles = 8192

// settleQueue holds the settlements waiting for the ledger goroutine. A
// channel would wake the ledger for every call; the queue signals ready
// only when it stops being empty or reaches a batch, so a busy ledger
// takes a whole group commit's settlements with one wake-up.
type settleQueue struct {
	mu      sync.Mutex
	notFull *sync.Cond
	ops     []store.SettleOp
	batch   int
	ready   chan struct{} // buffered 1
}

func newSettleQueue(batch int) *settleQueue {
	q := &settleQueue{batch: batch, ready: make(chan struct{}, 1)}
	q.notFull = sync.NewCond(&q.mu)
	return q
}

// put queues op, waiting while the queue is full.
func (q *settleQueue) put(op store.SettleOp) {
	q.mu.Lock()
	for len(q.ops) >= maxQueuedSettles {
		q.notFull.Wait()
	}
	q.ops = append(q.ops, op)
	n := len(q.ops)
	q.mu.Unlock()
	if n == 1 || n == q.batch {
		q.signal()
	}
}

// signal wakes the ledger, unless a wake-up is pending already.
func (q *settleQueue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take removes and returns up to n settlements, oldest first.
func (q *settleQueue) take(n int) []store.SettleOp {
	q.mu.Lock()
	defer q.mu.Unlock()
	n = min(n, len(q.ops))
	if n <= 0 {
		return nil
	}
	out := append([]store.SettleOp(nil), q.ops[:n]...)
	rest := copy(q.ops, q.ops[n:])
	clear(q.ops[rest:])
	q.ops = q.ops[:rest]
	q.notFull.Broadcast()
	return out
}

func (q *settleQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.ops)
}
