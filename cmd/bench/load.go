package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelgate/modelgate/internal/gatewayproc"
)

// Request bodies. The small chat body is the brief's; the stream body asks
// for the usage chunk as a billing gateway would; the hold body carries the
// mock's hold marker (max_tokens = holdMaxTokens).
var (
	chatBody   = []byte(`{"model":"bench-model","messages":[{"role":"user","content":"hi"}],"max_tokens":16}`)
	streamBody = []byte(`{"model":"bench-model","messages":[{"role":"user","content":"hi"}],"max_tokens":16,"stream":true,"stream_options":{"include_usage":true}}`)
	holdBody   = []byte(fmt.Sprintf(`{"model":"bench-model","messages":[{"role":"user","content":"hi"}],"max_tokens":%d,"stream":true,"stream_options":{"include_usage":true}}`, holdMaxTokens))
)

// maxRequestsPerLoad bounds one load interval whatever the speed of the
// target; at the mock's ~20,000 req/s a 3 s interval makes ~60,000.
const maxRequestsPerLoad = 1_000_000

// target is one thing under load: the mock alone, the proxy, the gateway
// or the gateway called with the plan user's key (gateway-plan).
type target struct {
	name   string
	proc   *proc  // the process whose CPU and RSS are read
	base   string // http://127.0.0.1:port
	key    string // sent as Authorization: Bearer (the gateway's sk- key)
	client *http.Client
	skip   string // why the target is not measured; empty when it is
	// status is the target's status in the report for the gateway's
	// targets (a failing gateway is a finding, not a broken bench); nil for
	// mock and proxy.
	status *string
	// chatOnly: only the chat loads run, no stream load and no memory
	// figures (gateway-plan, which shares the gateway's process).
	chatOnly bool
	// metricsToken reads the gateway's /metrics (its database round
	// trips) around each interval; empty for mock and proxy.
	metricsToken string
	// dbComms name the database server's processes, whose CPU is read
	// with the target's (database mode, gateway targets only).
	dbComms []string
}

// newLoadClient is a keep-alive client whose pool holds a connection for
// every closed-loop worker, so no run measures connection setup.
func newLoadClient(conns int) *http.Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// scenario is one kind of load: non-streaming chat, or streaming chat
// timed to the first byte of the body.
type scenario struct {
	name        string // "chat" or "stream"
	stream      bool
	concurrency int
}

// roundResult is one target under one scenario for one interval.
type roundResult struct {
	Target      string `json:"target"`
	Scenario    string `json:"scenario"`
	Concurrency int    `json:"concurrency"`
	Round       int    `json:"round"`    // 0 is the warm-up
	Requests    int    `json:"requests"` // answered 200 with a complete body
	Errors      int    `json:"errors"`
	Seconds     figure `json:"seconds"`
	ReqPerSec   figure `json:"req_per_sec"`
	// P50ms and P99ms are the latency of a whole call for chat, the time to
	// the first byte of the body for stream.
	P50ms            figure `json:"p50_ms"`
	P99ms            figure `json:"p99_ms"`
	CPUTicks         int64  `json:"cpu_ticks"`
	CPUMicrosPerReq  figure `json:"cpu_us_per_req"`
	UpstreamCPUTicks int64  `json:"upstream_cpu_ticks"` // the mock's, in the same interval
	// DBCPUTicks is the database server's processes' CPU in the same
	// interval (database mode, gateway targets); DBRoundTrips the
	// statements the gateway sent (its modelgate_db_round_trips_total
	// moved by that much). Absent when not measured.
	DBCPUTicks   *int64 `json:"db_cpu_ticks,omitempty"`
	DBRoundTrips *int64 `json:"db_round_trips,omitempty"`
	FirstError   string `json:"first_error,omitempty"`

	samples []time.Duration
}

// workerResult is what one closed-loop client saw.
type workerResult struct {
	samples  []time.Duration
	errors   int
	firstErr string
}

// runLoad drives t with sc.concurrency closed-loop clients for dur and
// reads the CPU of t's process and of the mock around the interval. Its
// error means a process could not be read, not that requests failed.
func runLoad(ctx context.Context, t *target, mock *proc, sc scenario, dur time.Duration) (roundResult, error) {
	var err error
	res := roundResult{Target: t.name, Scenario: sc.name, Concurrency: sc.concurrency}
	// The scrape comes first and last, outside the CPU readings: it costs
	// the gateway a little CPU and one query (the channels' states).
	rt0, rtErr := t.roundTrips(ctx)
	var db0 int64
	if t.dbComms != nil {
		if db0, _, err = serverCPUTicks(t.dbComms); err != nil {
			return res, fmt.Errorf("database server: %w", err)
		}
	}
	cpu0, err := procCPUTicks(t.proc.pid())
	if err != nil {
		return res, fmt.Errorf("%s: %w", t.name, err)
	}
	up0, err := procCPUTicks(mock.pid())
	if err != nil {
		return res, fmt.Errorf("mock: %w", err)
	}
	body := chatBody
	if sc.stream {
		body = streamBody
	}
	var sent atomic.Int64
	workers := make([]workerResult, sc.concurrency)
	start := time.Now()
	deadline := start.Add(dur)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			w := &workers[i]
			var buf bytes.Buffer
			for time.Now().Before(deadline) && ctx.Err() == nil && sent.Add(1) <= maxRequestsPerLoad {
				d, err := t.call(ctx, body, sc.stream, &buf)
				switch {
				case ctx.Err() != nil:
					return // interrupted: not the target's error
				case err != nil:
					w.errors++
					if w.firstErr == "" {
						w.firstErr = err.Error()
					}
				default:
					w.samples = append(w.samples, d)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	// The target's CPU is read once it is idle again, so the interval
	// includes its own tail (the gateway's group commits and log batches of
	// the last calls) rather than handing it to the next interval of the
	// same process: gateway-plan follows gateway in most rounds.
	// The database server's tail (its commits of those batches) likewise.
	waitIdle(ctx, t.proc.pid())
	if t.dbComms != nil {
		waitIdleTicks(ctx, func() (int64, error) { n, _, err := serverCPUTicks(t.dbComms); return n, err })
	}
	cpu1, err := procCPUTicks(t.proc.pid())
	if err != nil {
		return res, fmt.Errorf("%s: %w", t.name, err)
	}
	up1, err := procCPUTicks(mock.pid())
	if err != nil {
		return res, fmt.Errorf("mock: %w", err)
	}
	if t.dbComms != nil {
		db1, _, err := serverCPUTicks(t.dbComms)
		if err != nil {
			return res, fmt.Errorf("database server: %w", err)
		}
		d := db1 - db0
		res.DBCPUTicks = &d
	}
	if rt1, err := t.roundTrips(ctx); err == nil && rtErr == nil {
		d := rt1 - rt0
		res.DBRoundTrips = &d
	}
	for _, w := range workers {
		res.samples = append(res.samples, w.samples...)
		res.Errors += w.errors
		if res.FirstError == "" {
			res.FirstError = w.firstErr
		}
	}
	res.Requests = len(res.samples)
	res.Seconds = figure(elapsed.Seconds())
	res.ReqPerSec = figure(float64(res.Requests) / elapsed.Seconds())
	res.CPUTicks, res.UpstreamCPUTicks = cpu1-cpu0, up1-up0
	res.CPUMicrosPerReq = figure(perRequestMicros(res.CPUTicks, res.Requests))
	p50, p99 := latencySummary(res.samples)
	res.P50ms, res.P99ms = figure(p50), figure(p99)
	return res, nil
}

// roundTrips reads the gateway's database round trips from its /metrics;
// an error for targets without metrics (mock, proxy) or a failed scrape,
// which leaves the figure out.
func (t *target) roundTrips(ctx context.Context) (int64, error) {
	if t.metricsToken == "" {
		return 0, errors.New("no metrics")
	}
	return scrapeRoundTrips(ctx, t.base, t.metricsToken)
}

// call makes one chat call and returns its latency, or for a stream the
// time to the first byte of the body. A call counts only when it answers 200
// with a body that looks complete, so a gateway answering errors fast (or
// with HTTP 200 and an error body) is not mistaken for a fast one.
func (t *target) call(ctx context.Context, body []byte, stream bool, buf *bytes.Buffer) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.base+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if t.key != "" {
		req.Header.Set("Authorization", "Bearer "+t.key)
	}
	start := time.Now()
	resp, err := t.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	buf.Reset()
	var scratch [512]byte
	n, err := readSome(resp.Body.Read, scratch[:])
	firstByte := time.Since(start)
	buf.Write(scratch[:n])
	if err == nil {
		_, err = buf.ReadFrom(resp.Body)
	}
	total := time.Since(start)
	switch {
	case resp.StatusCode != http.StatusOK:
		return 0, &statusError{code: resp.StatusCode, body: gatewayproc.Abbreviate(buf.Bytes())}
	case err != nil:
		return 0, err
	case stream && !bytes.Contains(buf.Bytes(), []byte("data: [DONE]")):
		return 0, errors.New("stream ended without data: [DONE]")
	case stream:
		return firstByte, nil
	case !bytes.Contains(buf.Bytes(), []byte(`"choices"`)):
		return 0, fmt.Errorf("HTTP 200 without choices: %s", gatewayproc.Abbreviate(buf.Bytes()))
	}
	return total, nil
}

// readSome reads until it gets at least one byte or an error; io.EOF after
// the whole body is not an error.
func readSome(read func([]byte) (int, error), p []byte) (int, error) {
	for {
		n, err := read(p)
		if n > 0 || err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return n, err
		}
	}
}

// statusError is an answer other than 200.
type statusError struct {
	code int
	body string
}

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.code, e.body) }

// Idle detection of a target after a load: no CPU tick in idleProbe, for
// at most idleWait.
const (
	idleProbe = 50 * time.Millisecond
	idleWait  = 2 * time.Second
)

// waitIdle waits until the process pid spends no CPU tick during
// idleProbe, for at most idleWait (a process that never idles is measured
// as it is then).
func waitIdle(ctx context.Context, pid int) {
	waitIdleTicks(ctx, func() (int64, error) { return procCPUTicks(pid) })
}

// waitIdleTicks is waitIdle of whatever read returns the CPU ticks of
// (the database server's processes).
func waitIdleTicks(ctx context.Context, read func() (int64, error)) {
	last, err := read()
	for end := time.Now().Add(idleWait); err == nil && time.Now().Before(end) && ctx.Err() == nil; {
		time.Sleep(idleProbe)
		now, err2 := read()
		if err2 != nil || now == last {
			return
		}
		last = now
	}
}
