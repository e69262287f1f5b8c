package billing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelgate/modelgate/internal/store"
)

// The grantee's calls to owners (grants.go): grows, give-backs, and the
// calls sent again after a lost answer.

// ask sends op (a grow or a give-back) to g's owner, after any call of g
// whose answer was lost, and applies what it got; g.asking is set, and
// ask ends it.
func (b *grantBook) ask(g *grant, op store.GrantOp) (err error) {
	defer func() {
		b.mu.Lock()
		if isRefusal(err) {
			// Told to the calls waiting for this grow before they wake.
			g.refusal, g.refusals = err, g.refusals+1
		}
		close(g.asking)
		g.asking = nil
		b.mu.Unlock()
	}()
	b.mu.Lock()
	unsure := g.unsure
	b.mu.Unlock()
	if unsure != nil {
		if err := b.send(g, *unsure); err != nil {
			if op.Amount < 0 {
				b.mu.Lock()
				g.owed += -op.Amount
				b.mu.Unlock()
			}
			return err
		}
	}
	if op.Amount == 0 {
		return nil
	}
	op.Key = fmt.Sprintf("%s-%d", b.boot, b.keys.Add(1))
	return b.send(g, op)
}

// send makes one call to the owner. A give-back was taken off g before
// (nothing may hold it meanwhile); a grow adds what the owner granted.
func (b *grantBook) send(g *grant, op store.GrantOp) error {
	through, err := b.firstEvent()
	if err != nil {
		return err
	}
	op.NodeID, op.Boot, op.Through = b.self, b.boot, through
	ctx, cancel := context.WithTimeout(context.Background(), grantTimeout)
	got, err := b.source.Grant(ctx, op)
	cancel()
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case err == nil:
		g.unsure = nil
		if op.Amount > 0 {
			g.granted = satAdd(g.granted, got)
		}
		return nil
	case isRefusal(err), errors.Is(err, store.ErrGrantNotReady), errors.Is(err, store.ErrGrantOwnerRemoved):
		g.unsure = nil // refused, or not sent: the owner applied nothing
		return err
	}
	g.unsure = &op
	g.downUntil = b.now().Add(grantBackoff)
	b.log.Warn("cluster grant: owner node unavailable", "user_id", g.key.user, "token_id", g.key.token, "amount", op.Amount, "err", err)
	return fmt.Errorf("%w: %v", ErrOwnerUnavailable, err)
}

// firstEvent is this node's last event id when it first asked an owner:
// the owner settles this process's earlier grants once it applied them.
func (b *grantBook) firstEvent() (int64, error) {
	b.mu.Lock()
	started, through := b.started, b.through
	b.mu.Unlock()
	if started {
		return through, nil
	}
	// Read without the book's lock: calls keep holding meanwhile. Two
	// first calls at once both read; the first to record wins.
	id, err := b.lastEventID(context.Background())
	if err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.started {
		b.through, b.started = id, true
	}
	return b.through, nil
}

// giveBack gives back every grant idle since cutoff, and sends again the
// calls whose answers were lost; the calls run in the background.
func (b *grantBook) giveBack(cutoff time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k, g := range b.grants {
		if g.calls > 0 || g.waiting > 0 || g.asking != nil || g.used.After(cutoff) || b.now().Before(g.downUntil) {
			continue
		}
		back := max(g.granted-g.spent, 0) + g.owed
		g.granted, g.spent, g.owed = 0, 0, 0
		if back == 0 && g.unsure == nil {
			delete(b.grants, k)
			continue
		}
		g.asking = make(chan struct{})
		op := store.GrantOp{UserID: k.user, TokenID: k.token, Amount: -back}
		b.calls.Add(1)
		go func() {
			defer b.calls.Done()
			b.ask(g, op)
		}()
	}
}

// run gives back idle grants until quit, and all of them then; it closes
// done when those calls ended.
func (b *grantBook) run(quit <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(sliceTick)
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			b.giveBack(now.Add(-grantIdle))
		case <-quit:
			b.giveBack(b.now().Add(time.Hour))
			b.calls.Wait()
			return
		}
	}
}
