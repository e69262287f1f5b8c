package relay

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// Messages of the body limits (docs/operations.md, Timeouts and limits).
const (
	MsgServerBusy  = "服务器繁忙,请稍后再试"
	MsgBodyTimeout = "读取请求体超时"
)

// DefaultBodyReadTimeout bounds how long reading one request body may take.
const DefaultBodyReadTimeout = 60 * time.Second

// bodyStep is the least a read takes from the body budget at once when the
// size is not known up front (chunked uploads); each further step doubles.
const bodyStep = 64 << 10

// burstBodyBytes is the amount of bodies in flight after which memory is
// given back once they are all gone: a few large uploads grow the heap as
// much as hundreds of small calls.
const burstBodyBytes = 64 << 20

// bodyBudget counts the request-body bytes held in memory by all calls at
// once, against the RelayBodyBudgetMB option.
type bodyBudget struct {
	inFlight atomic.Int64
}

// take adds n bytes when the budget can hold them.
func (b *bodyBudget) take(n, limit int64) bool {
	for {
		cur := b.inFlight.Load()
		if cur+n > limit {
			return false
		}
		if b.inFlight.CompareAndSwap(cur, cur+n) {
			return true
		}
	}
}

// canPay refuses, before the body is read, a call whose owner has nothing
// to spend, with the answers reserve() gives. It reads the ledger's
// in-memory balances when it keeps them (SQLite). Else the key cache's
// balances say who surely can pay; they may be old or low (read while a
// hold of another call was taken from the database balance), so a refusal
// is confirmed by reading the balances now: one small read, paid only by
// callers that look broke. Either way the money this node's balance slice
// holds counts too: the database's balances do not show it. The
// reservation still decides for the rest.
func (rl *Relay) canPay(ctx context.Context, e *keyEntry) error {
	limited := !e.token.UnlimitedQuota
	userLeft, tokenLeft, known := rl.Ledger.Spendable(e.user.ID, e.token.ID, limited)
	if !known {
		leased := rl.Ledger.Leased(e.user.ID, e.token.ID, limited)
		userLeft, tokenLeft = e.user.Quota+leased, e.token.RemainQuota+leased
		if userLeft <= 0 || (limited && tokenLeft <= 0) {
			var tokenIDs []int64
			if limited {
				tokenIDs = []int64{e.token.ID}
			}
			users, tokens, err := rl.Store.Balances(ctx, []int64{e.user.ID}, tokenIDs)
			if err != nil {
				return nil // the reservation will tell
			}
			userLeft, tokenLeft = users[e.user.ID]+leased, tokens[e.token.ID]+leased
		}
	}
	switch {
	case userLeft <= 0:
		return quotaExceeded(MsgUserQuota)
	case limited && tokenLeft <= 0:
		return quotaExceeded(MsgKeyExhausted)
	}
	return nil
}

// readBody reads the request body, bounded by the RelayMaxBodyMB option in
// size, by Deps.BodyReadTimeout in time, and by the RelayBodyBudgetMB option
// shared with every other call: it takes its bytes from the budget as it
// reads (all of a declared Content-Length at once), and releaseBody gives
// them back when the call ends.
func (c *call) readBody() ([]byte, error) {
	rl, r := c.rl, c.r
	opts := rl.Options.Current()
	limit, budget := opts.RelayMaxBody, opts.RelayBodyBudget
	if r.ContentLength > limit {
		return nil, errf(http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large", MsgBodyTooLarge)
	}
	// The deadline covers the whole body and is lifted before the call
	// goes upstream: an expired read deadline would cancel the request's
	// context, and with it a stream, once the body is read.
	rc := http.NewResponseController(c.w)
	rc.SetReadDeadline(time.Now().Add(rl.BodyReadTimeout)) // ErrNotSupported: no deadline to lift either
	// want is the budget needed before reading on: the declared length
	// plus the byte that sees EOF, or the next step.
	want := func() int64 {
		if r.ContentLength >= 0 && c.bodyHeld == 0 {
			return r.ContentLength + 1
		}
		return max(bodyStep, c.bodyHeld)
	}
	buf := rl.getBody()
	for {
		if int64(len(buf)) == c.bodyHeld {
			n := min(want(), limit+1-c.bodyHeld)
			if !rl.bodies.budget.take(n, budget) {
				rl.putBody(buf)
				return nil, errf(http.StatusTooManyRequests, "server_error", "server_busy", MsgServerBusy)
			}
			c.bodyHeld += n
			rl.memory.bodies(rl.bodies.budget.inFlight.Load())
		}
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(max(2*cap(buf), 4096), int(c.bodyHeld)))
			copy(grown, buf)
			rl.putBody(buf)
			buf = grown
		}
		n, err := r.Body.Read(buf[len(buf):min(cap(buf), int(c.bodyHeld))])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			rl.putBody(buf)
			return nil, errf(http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large", MsgBodyTooLarge)
		}
		if err == io.EOF {
			c.bodyRead = true
			rc.SetReadDeadline(time.Time{})
			if cap(buf) > maxPooledBody {
				return buf, nil // not pooled anyway: no copy
			}
			// Keep an exact-size copy for the call, which may last minutes
			// (a stream), and give the growable buffer back at once.
			body := append([]byte(nil), buf...)
			rl.putBody(buf)
			return body, nil
		}
		if err != nil {
			rl.putBody(buf)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, errf(http.StatusRequestTimeout, "invalid_request_error", "request_timeout", MsgBodyTimeout)
			}
			return nil, badRequest("read request body: " + err.Error())
		}
	}
}

// cutBody ends a connection whose body the call refused unread (an
// answer before or while reading it): the server would otherwise read the
// rest to reuse the connection, waiting on a stalled upload for ever. A
// second lets a small body that is on its way be discarded as usual.
func (c *call) cutBody() {
	http.NewResponseController(c.w).SetReadDeadline(time.Now().Add(time.Second))
}

// releaseBody gives the call's body bytes back to the budget; once a large
// burst of bodies is gone, memory goes back to the operating system.
func (c *call) releaseBody() {
	if c.bodyHeld == 0 {
		return
	}
	left := c.rl.bodies.budget.inFlight.Add(-c.bodyHeld)
	c.bodyHeld = 0
	c.rl.memory.observeBodies(left)
}

// maxPooledBody is the largest buffer kept for reuse: the pool must not pin
// memory after a rare large upload.
const maxPooledBody = 1 << 20

func (rl *Relay) getBody() []byte {
	if p, ok := rl.bodies.pool.Get().(*[]byte); ok {
		b := (*p)[:0]
		*p = nil
		rl.bodies.boxes.Put(p)
		return b
	}
	return make([]byte, 0, 4096)
}

// putBody returns a request buffer to the pool; huge ones are dropped.
func (rl *Relay) putBody(b []byte) {
	if b == nil || cap(b) > maxPooledBody {
		return
	}
	p, _ := rl.bodies.boxes.Get().(*[]byte)
	if p == nil {
		p = new([]byte)
	}
	*p = b
	rl.bodies.pool.Put(p)
}
