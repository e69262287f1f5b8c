package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Probe pacing: a marker every probeEvery, each polled on the other nodes
// every pollEvery until seen, for at most probeTimeout.
const (
	probeEvery   = 250 * time.Millisecond
	pollEvery    = 5 * time.Millisecond
	probeTimeout = 15 * time.Second
)

// lagProbe measures replication lag: it writes a unique marker (the display
// name of a user only it writes) on one live node, takes the time the write
// was acknowledged, and polls each other live node until the marker (or a
// later one) is there. A sample is that wait, so it includes up to one
// poll interval and one GET.
type lagProbe struct {
	w *world

	mu       sync.Mutex
	samples  []time.Duration
	timeouts int
	errors   int
	lastSeq  int // of the last marker acknowledged
}

func markerOf(seq int) string { return "probe-" + strconv.Itoa(seq) }

// seqOf reads a marker's sequence number; -1 for anything else.
func seqOf(s string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(s, "probe-"))
	if err != nil || !strings.HasPrefix(s, "probe-") {
		return -1
	}
	return n
}

// run writes markers round-robin on the live nodes until ctx ends.
func (p *lagProbe) run(ctx context.Context) {
	for seq := 1; ctx.Err() == nil; seq++ {
		next := time.Now().Add(probeEvery)
		live := liveNodes(p.w.nodes)
		if len(live) >= 2 {
			p.once(ctx, live, seq)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(next)):
		}
	}
}

func (p *lagProbe) once(ctx context.Context, live []*node, seq int) {
	writer := live[seq%len(live)]
	err := writer.root(ctx, http.MethodPut, "/api/user/", map[string]any{"id": p.w.probeUserID, "display_name": markerOf(seq)}, nil)
	acked := time.Now()
	p.mu.Lock()
	if err != nil {
		if ctx.Err() == nil {
			p.errors++
		}
		p.mu.Unlock()
		return
	}
	p.lastSeq = seq
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, n := range live {
		if n == writer {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen, ok := waitMarker(ctx, n, p.w.probeUserID, seq, probeTimeout)
			p.mu.Lock()
			defer p.mu.Unlock()
			switch {
			case ok:
				p.samples = append(p.samples, seen.Sub(acked))
			case ctx.Err() == nil && n.up.Load():
				p.timeouts++
			}
		}()
	}
	wg.Wait()
}

// waitMarker polls n until the probe user shows marker seq or a later one,
// and returns when it saw it; false on timeout, on ctx's end or when n
// went down.
func waitMarker(ctx context.Context, n *node, userID int64, seq int, timeout time.Duration) (time.Time, bool) {
	deadline := time.Now().Add(timeout)
	path := fmt.Sprintf("/api/user/%d", userID)
	for ctx.Err() == nil && n.up.Load() && time.Now().Before(deadline) {
		var u struct {
			DisplayName string `json:"display_name"`
		}
		if err := n.root(ctx, http.MethodGet, path, nil, &u); err == nil && seqOf(u.DisplayName) >= seq {
			return time.Now(), true
		}
		time.Sleep(pollEvery)
	}
	return time.Time{}, false
}

// result returns the samples sorted, with the timeouts and write errors.
func (p *lagProbe) result() (samples []time.Duration, timeouts, errors int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := append([]time.Duration(nil), p.samples...)
	sortDurations(s)
	return s, p.timeouts, p.errors
}

func (p *lagProbe) last() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastSeq
}
