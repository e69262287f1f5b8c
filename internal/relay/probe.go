package relay

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelgate/modelgate/internal/channel"
	"github.com/modelgate/modelgate/internal/relay/openai"
	"github.com/modelgate/modelgate/internal/store"
)

// probeTimeout bounds a channel test.
const probeTimeout = 20 * time.Second

// keysTestedAtOnce bounds the keys of one pool a channel test calls at once.
const keysTestedAtOnce = 8

// TestChannel sends a minimal real chat completion (one user message "hi",
// max_tokens 1) for model through channel ch's dialect, as the relay would,
// with each key of its pool (retired ones too: the admin sees whether they
// work again), and reports what came back per key; the overall result is
// the first failing key's, else the first key's. Nobody is billed. A
// model-mapped channel gets the mapped name. A success of every key also
// closes this node's breaker of the channel for that model: the admin saw
// it answer.
func (rl *Relay) TestChannel(ctx context.Context, ch store.Channel, model string) channel.TestResult {
	mapping, _ := channel.ParseModelMapping(ch.ModelMapping)
	u := &upstream{ID: ch.ID, Type: ch.Type, Key: ch.Key, BaseURL: ch.BaseURL, Other: ch.Other, Mapping: mapping}
	u.resolve()
	pool := channel.Pool(ch.Key, ch.DisabledKeys)
	if len(pool) == 0 {
		pool = []channel.PoolKey{{}}
	}
	// The keys are tested a few at a time: a pool of MaxKeys keys whose
	// upstream hangs ends within a few probeTimeouts.
	results := make([]channel.TestResult, len(pool))
	var wg sync.WaitGroup
	sem := make(chan struct{}, keysTestedAtOnce)
	for i, k := range pool {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i], _ = rl.testUpstream(ctx, u, k.Key, model)
		})
	}
	wg.Wait()
	var overall channel.TestResult
	failed := false
	for i, k := range pool {
		res := results[i]
		overall.Keys = append(overall.Keys, channel.KeyTest{Index: k.Index, Retired: k.Disabled != nil,
			Status: res.Status, Elapsed: res.Elapsed, Detail: res.Detail})
		if i == 0 || (!failed && !res.OK()) {
			overall.Status, overall.Elapsed, overall.Detail = res.Status, res.Elapsed, res.Detail
			failed = !res.OK()
		}
	}
	if overall.OK() {
		rl.closeBreaker(ch.ID, model)
	}
	return overall
}

// testUpstream is TestChannel's call to u, also the breakers' probe; it
// returns the start of the answer's body (at most maxRefusalBody, enough
// to tell a key refusal apart and to check a 200's JSON).
func (rl *Relay) testUpstream(ctx context.Context, u *upstream, key, model string) (channel.TestResult, []byte) {
	one := 1
	req := &openai.ChatRequest{Model: model, MaxTokens: &one,
		Messages: []openai.Message{{Role: "user", Content: openai.TextContent("hi")}}}
	url, body, err := u.dialect.ChatRequest(u.BaseURL, req, u.upstreamModel(model))
	if err != nil {
		return channel.TestResult{Detail: err.Error()}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return channel.TestResult{Detail: scrub(err.Error(), key)}, nil
	}
	httpReq.Header.Set("Content-Type", "application/json")
	if err := u.dialect.Authorize(httpReq, key, body); err != nil {
		return channel.TestResult{Detail: scrub(err.Error(), key)}, nil
	}
	// A test on its own new connection says whether the upstream is
	// reachable now, not whether a pooled connection is still open.
	httpReq.Close = true
	start := time.Now()
	resp, err := rl.roundTrip(httpReq)
	if err != nil {
		return channel.TestResult{Elapsed: time.Since(start), Detail: scrub(err.Error(), key)}, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxRefusalBody))
	res := channel.TestResult{Status: resp.StatusCode, Elapsed: time.Since(start)}
	if resp.StatusCode != http.StatusOK {
		res.Detail = scrub(strings.TrimSpace(string(raw[:min(len(raw), 512)])), key)
	}
	return res, raw
}
