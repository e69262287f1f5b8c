package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelgate/modelgate/internal/gatewayproc"
)

// memResult is the RSS of one target idle, with many streams held open
// through it, and after they close.
type memResult struct {
	Target     string `json:"target"`
	IdleKiB    int64  `json:"idle_kib"` // after the warm-up
	Streams    int    `json:"streams"`  // asked for
	Opened     int    `json:"opened"`   // got their first chunk
	HeldKiB    int64  `json:"held_kib"`
	MiBPer1000 figure `json:"mib_per_1000_streams"` // (held − idle) scaled to 1,000 opened streams
	// AfterKiB is read SettleSeconds after the target let go of the last
	// upstream stream (at most maxUpstreamRelease after the clients closed
	// them); nothing is done to the target in between (no forced GC).
	AfterKiB int64 `json:"after_close_kib"`
	// UpstreamReleaseSeconds is how long after the clients closed their
	// streams the target still read the upstream: the gateway reads an
	// abandoned stream on for its usage (option StreamDrainSeconds).
	UpstreamReleaseSeconds float64 `json:"upstream_release_seconds"`
	SettleSeconds          float64 `json:"settle_seconds"`
	AfterOverIdle          figure  `json:"after_over_idle"`
	BackToIdle             bool    `json:"back_within_10pct"`
	// UpstreamStillHeld counts streams the mock still held when RSS was
	// read after the close: a gateway that does not cancel the upstream
	// call when its client goes away leaves them open.
	UpstreamStillHeld int64  `json:"upstream_still_held"`
	Error             string `json:"error,omitempty"`
}

// holdStreams opens n held streams through t, reads t's RSS once every
// stream has its first chunk, closes them all from the client side, waits
// settle and reads RSS again. Its error means the bench could not read a
// process; a target that fails to open streams is reported in the result.
func holdStreams(ctx context.Context, t *target, mockBase string, n int, settle time.Duration, idleKiB int64) (memResult, error) {
	res := memResult{Target: t.name, IdleKiB: idleKiB, Streams: n, SettleSeconds: settle.Seconds(),
		MiBPer1000: figure(math.NaN()), AfterOverIdle: figure(math.NaN())}
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tr := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		DisableKeepAlives:     true,
		DisableCompression:    true,
		ResponseHeaderTimeout: 20 * time.Second,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	firstChunk := make(chan error, n) // one value per stream
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { holdOne(hctx, client, t, firstChunk) })
	}
	var firstErr string
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
wait:
	for range n {
		select {
		case err := <-firstChunk:
			if err == nil {
				res.Opened++
			} else if firstErr == "" {
				firstErr = err.Error()
			}
		case <-timeout.C:
			firstErr = "timed out waiting for first chunks"
			break wait
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
	if res.Opened < n {
		res.Error = fmt.Sprintf("only %d of %d streams opened: %s", res.Opened, n, firstErr)
	}
	var err error
	if res.HeldKiB, err = procRSSKiB(t.proc.pid()); err != nil {
		return res, fmt.Errorf("%s: %w", t.name, err)
	}
	if res.Opened > 0 {
		res.MiBPer1000 = figure(mibPer1000(idleKiB, res.HeldKiB, res.Opened))
	}
	cancel()
	wg.Wait()
	tr.CloseIdleConnections()
	closed := time.Now()
	if err := waitUpstreamReleased(ctx, mockBase, maxUpstreamRelease); err != nil {
		return res, err
	}
	res.UpstreamReleaseSeconds = time.Since(closed).Seconds()
	select {
	case <-time.After(settle):
	case <-ctx.Done():
		return res, ctx.Err()
	}
	if res.AfterKiB, err = procRSSKiB(t.proc.pid()); err != nil {
		return res, fmt.Errorf("%s: %w", t.name, err)
	}
	res.AfterOverIdle = figure(float64(res.AfterKiB) / float64(idleKiB))
	res.BackToIdle = float64(res.AfterKiB) <= maxRSSReturn*float64(idleKiB)
	res.UpstreamStillHeld, err = mockHeld(ctx, mockBase)
	if err != nil {
		return res, err
	}
	return res, releaseMock(ctx, mockBase)
}

// maxUpstreamRelease bounds the wait for a target to let go of the upstream
// streams its clients abandoned: longer than the gateway's default drain
// grace (5 s), so the RSS read after it sees the target's work finished.
const maxUpstreamRelease = 15 * time.Second

// waitUpstreamReleased polls the mock until it holds no stream, or limit
// passed (then the report's upstream_still_held says how many remain).
func waitUpstreamReleased(ctx context.Context, mockBase string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		held, err := mockHeld(ctx, mockBase)
		if err != nil || held == 0 {
			return err
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// holdOne opens one held stream, reports when its first chunk arrived (or
// why it failed), then reads until ctx ends.
func holdOne(ctx context.Context, client *http.Client, t *target, firstChunk chan<- error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.base+"/v1/chat/completions", bytes.NewReader(holdBody))
	if err != nil {
		firstChunk <- err
		return
	}
	req.Header.Set("Content-Type", "application/json")
	if t.key != "" {
		req.Header.Set("Authorization", "Bearer "+t.key)
	}
	resp, err := client.Do(req)
	if err != nil {
		firstChunk <- err
		return
	}
	defer resp.Body.Close()
	var scratch [512]byte
	n, err := readSome(resp.Body.Read, scratch[:])
	switch {
	case resp.StatusCode != http.StatusOK:
		firstChunk <- &statusError{code: resp.StatusCode, body: gatewayproc.Abbreviate(scratch[:n])}
		return
	case err != nil:
		firstChunk <- err
		return
	case n == 0:
		firstChunk <- fmt.Errorf("stream ended before its first chunk")
		return
	}
	firstChunk <- nil
	io.Copy(io.Discard, resp.Body) // until the bench cancels ctx
}

// mockHeld asks the mock how many streams it holds open now.
func mockHeld(ctx context.Context, mockBase string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, mockBase+"/bench/held", nil)
	if err != nil {
		return 0, err
	}
	resp, err := apiClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("mock held count: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64))
	if err != nil {
		return 0, fmt.Errorf("mock held count: %w", err)
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// releaseMock finishes every stream the mock still holds and waits until
// it holds none, so one target's leftovers never weigh on the next.
func releaseMock(ctx context.Context, mockBase string) error {
	for deadline := time.Now().Add(5 * time.Second); ; {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, mockBase+"/bench/release", nil)
		if err != nil {
			return err
		}
		resp, err := apiClient.Do(req)
		if err != nil {
			return fmt.Errorf("release mock streams: %w", err)
		}
		resp.Body.Close()
		held, err := mockHeld(ctx, mockBase)
		if err != nil || held == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("release mock streams: %d still held after 5 s", held)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
