package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Probe pacing: a marker every probeEvery, each polled on the other nodes
// every pollEvery until seen, for at most probeTimeout.
const (
	probeEvery   = 250 * time.Millisecond
	pollEvery    = 10 * time.Millisecond
	probeTimeout = 2 * time.Minute
)

// lagProbe measures replication lag: it writes a unique marker (the display
// name of a user only that node's probe writes) on one live node, takes the
// time the write was acknowledged, and polls each other live node until
// the marker (or a later one of the same node) is there. A node applies
// another node's events in their order, so a later marker there means this
// one was applied too. A sample is that wait, so it includes up to one
// poll interval and one GET. Polls run beside the next markers: a node
// catching up does not hold back the samples of the others.
type lagProbe struct {
	w *world

	mu       sync.Mutex
	samples  []lagSample
	timeouts int
	errors   int
	last     marker // the last marker acknowledged
}

// marker is a probe write: seq on the probe user of writer.
type marker struct {
	writer *node
	seq    int
}

// lagSample is one marker seen on one node.
type lagSample struct {
	acked  time.Time // when the write was acknowledged
	lag    time.Duration
	reader int // the node it was seen on
}

func markerText(seq int) string { return "probe-" + strconv.Itoa(seq) }

// seqOf reads a marker's sequence number; -1 for anything else.
func seqOf(s string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(s, "probe-"))
	if err != nil || !strings.HasPrefix(s, "probe-") {
		return -1
	}
	return n
}

// run writes markers round-robin on the live nodes until ctx ends, and
// returns once every poll ended.
func (p *lagProbe) run(ctx context.Context) {
	var polls sync.WaitGroup
	defer polls.Wait()
	for seq := 1; ctx.Err() == nil; seq++ {
		next := time.Now().Add(probeEvery)
		if live := liveNodes(p.w.nodes); len(live) >= 2 {
			p.once(ctx, live, seq, &polls)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(next)):
		}
	}
}

func (p *lagProbe) once(ctx context.Context, live []*node, seq int, polls *sync.WaitGroup) {
	m := marker{writer: live[seq%len(live)], seq: seq}
	err := m.writer.root(ctx, http.MethodPut, "/api/user/", map[string]any{"id": p.w.probeUsers[m.writer.id-1],
		"display_name": markerText(seq)}, nil)
	acked := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			p.errors++
		}
		return
	}
	p.last = m
	for _, n := range live {
		if n == m.writer {
			continue
		}
		polls.Add(1)
		go func() {
			defer polls.Done()
			seen, ok := p.waitMarker(ctx, n, m, probeTimeout)
			p.mu.Lock()
			defer p.mu.Unlock()
			switch {
			case ok:
				p.samples = append(p.samples, lagSample{acked: acked, lag: seen.Sub(acked), reader: n.id})
			case ctx.Err() == nil && n.up.Load():
				p.timeouts++
			}
		}()
	}
}

// waitMarker polls n until it shows marker m or a later one of the same
// writer, and returns when it saw it; false on timeout, on ctx's end or
// when n went down.
func (p *lagProbe) waitMarker(ctx context.Context, n *node, m marker, timeout time.Duration) (time.Time, bool) {
	deadline := time.Now().Add(timeout)
	path := fmt.Sprintf("/api/user/%d", p.w.probeUsers[m.writer.id-1])
	for ctx.Err() == nil && n.up.Load() && time.Now().Before(deadline) {
		var u struct {
			DisplayName string `json:"display_name"`
		}
		if err := n.root(ctx, http.MethodGet, path, nil, &u); err == nil && seqOf(u.DisplayName) >= m.seq {
			return time.Now(), true
		}
		time.Sleep(pollEvery)
	}
	return time.Time{}, false
}

// result returns the samples, the timeouts and the failed marker writes.
func (p *lagProbe) result() (samples []lagSample, timeouts, errors int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]lagSample(nil), p.samples...), p.timeouts, p.errors
}

// lastMarker is the last marker acknowledged.
func (p *lagProbe) lastMarker() marker {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// lagsBetween returns the lags of the samples acknowledged in [from, to)
// and seen on a node keep accepts, sorted; a zero bound is open.
func lagsBetween(samples []lagSample, from, to time.Time, keep func(reader int) bool) []time.Duration {
	var out []time.Duration
	for _, s := range samples {
		if (from.IsZero() || !s.acked.Before(from)) && (to.IsZero() || s.acked.Before(to)) && keep(s.reader) {
			out = append(out, s.lag)
		}
	}
	slices.Sort(out)
	return out
}
