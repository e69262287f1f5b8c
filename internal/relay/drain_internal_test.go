package relay

import (
	"context"
	"testing"
)

type detachedKey struct{}

// The upstream request's parent keeps the client's values, ignores the
// client's cancellation, and ends, with every context made from it, when
// the relay stops; a child registers with stopping without a goroutine.
func TestDetachedParent(t *testing.T) {
	stopping, stop := context.WithCancel(context.Background())
	client, leave := context.WithCancel(context.WithValue(context.Background(), detachedKey{}, "v"))
	d := &detached{stopping: stopping, values: client}
	ctx, cancel := context.WithCancel(d)
	defer cancel()
	if got := ctx.Value(detachedKey{}); got != "v" {
		t.Fatalf("value = %v, want the request's", got)
	}
	leave()
	if ctx.Err() != nil {
		t.Fatal("the client leaving ended the detached context")
	}
	if n := leastAllocs(100, func() {
		_, c := context.WithCancel(d)
		c()
	}); n > 2 {
		t.Errorf("a child of detached costs %v allocations, want the cancelCtx and its cancel func only", n)
	}
	stop()
	<-ctx.Done()
	if ctx.Err() != context.Canceled {
		t.Fatalf("err = %v", ctx.Err())
	}
	late, c := context.WithCancel(d)
	defer c()
	if late.Err() == nil {
		t.Fatal("a context made after stopping is not ended")
	}
}
