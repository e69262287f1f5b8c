package breaker

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testConfig() Config {
	return Config{Enabled: true, Window: 60 * time.Second, MinCalls: 10, ErrorRatePercent: 50,
		Consecutive: 5, CoolDown: 30 * time.Second, MaxCoolDown: 5 * time.Minute}
}

// step is one outcome at an offset from t0: 'o' success, 'x' failure,
// from callers 1 and 2 in turn (by the step's index); 'a' a failure of
// caller 99 alone (one user whose prompts fail); 'B'…'Z' a failure and
// '0'…'9' a success of a caller of its own.
type step struct {
	at  time.Duration
	out byte
	i   int
}

func (s step) caller() int64 {
	switch {
	case s.out == 'a':
		return 99
	case s.out >= '0' && s.out <= '9':
		return 100 + int64(s.out-'0')
	case s.out >= 'B' && s.out <= 'Z':
		return 200 + int64(s.out-'A')
	}
	return 1 + int64(s.i%2)
}

func (s step) failed() bool { return s.out == 'x' || s.out == 'a' || (s.out >= 'B' && s.out <= 'Z') }

func run(b *Breaker, cfg *Config, steps []step) bool {
	opened := false
	for _, s := range steps {
		now := t0.Add(s.at)
		if !s.failed() {
			b.Success(now, cfg, s.caller())
		} else if b.Failure(now, cfg, s.caller(), Event{Time: now, Status: 503}).Opened {
			opened = true
		}
	}
	return opened
}

// seq spreads outcomes one per 100 ms from start.
func seq(start time.Duration, outs string) []step {
	var s []step
	for i := range len(outs) {
		s = append(s, step{start + time.Duration(i)*100*time.Millisecond, outs[i], i})
	}
	return s
}

func TestOpeningRules(t *testing.T) {
	base := testConfig()
	for _, tc := range []struct {
		name  string
		cfg   func(*Config)
		steps []step
		want  bool
	}{
		{"one error never opens", nil, seq(0, "x"), false},
		{"one error with consecutive 1 still does not", func(c *Config) { c.Consecutive = 1; c.MinCalls = 1 }, seq(0, "x"), false},
		{"two errors with consecutive 1 do (treated as 2)", func(c *Config) { c.Consecutive = 1 }, seq(0, "xx"), true},
		{"4 consecutive: below 5", nil, seq(0, "oooxxxx"), false},
		{"5 consecutive open", nil, seq(0, "oooxxxxx"), true},
		{"a success resets the consecutive count", nil, seq(0, "xxxxoxxxx"), false},
		{"rate below min calls", func(c *Config) { c.Consecutive = 0 }, seq(0, "xoxoxox"), false},
		{"rate 50% at min calls", func(c *Config) { c.Consecutive = 0 }, seq(0, "oBoCoBoCoB"), true},
		{"rate 40% at min calls", func(c *Config) { c.Consecutive = 0 }, seq(0, "ooxoxoxoox"), false},
		{"rate rule off", func(c *Config) { c.Consecutive = 0; c.ErrorRatePercent = 0 }, seq(0, "xxxxxxxxxxxxxxxxxxxx"), false},
		{"consecutive off, rate opens", func(c *Config) { c.Consecutive = 0 }, seq(0, "xxxxxxxxxx"), true},
		{"disabled never opens", func(c *Config) { c.Enabled = false }, seq(0, "xxxxxxxxxxxxxxxxxxxx"), false},
		{"old failures leave the window", func(c *Config) { c.Consecutive = 0 },
			append(seq(0, "xxxxxxxx"), seq(61*time.Second, "oxoooo")...), false},
		{"failures inside the window count", func(c *Config) { c.Consecutive = 0 },
			append(seq(0, "xxxxxxxx"), seq(50*time.Second, "oo")...), false}, // 8/10 but the last is a success: no failure to open on
		{"failures across slots inside the window", func(c *Config) { c.Consecutive = 0 },
			append(seq(0, "xxxxxxxx"), seq(50*time.Second, "ox")...), true},
		// One caller cannot open it (issue 27 §3).
		{"one caller's failures in a row never open", nil, seq(0, "aaaaaaaaaaaaaaaaaaaa"), false},
		{"one caller's failures never reach the rate", func(c *Config) { c.Consecutive = 0 }, seq(0, "aaaaaaaaaaaaaaaaaaaa"), false},
		{"one caller and another's one-off error among successes", func(c *Config) { c.Consecutive = 0 },
			seq(0, "aaaaaaaa1234B"), false}, // 9 of 13 calls failed, but 2 of 6 callers
		{"a second caller in the run opens at the threshold", nil, seq(0, "aaaaB"), true},
		{"failures of two callers open at 5 as before", nil, seq(0, "oBCBCB"), true},
		{"the rate across callers: all failing", func(c *Config) { c.Consecutive = 0 }, seq(0, "aBaBaBaBaB"), true},
		{"a cooled-down caller's failures no longer count", nil, seq(0, "aaaaaaaaaaB"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			var b Breaker
			if got := run(&b, &cfg, tc.steps); got != tc.want {
				t.Fatalf("opened = %v, want %v (status %+v)", got, tc.want, b.Status(t0, &cfg))
			}
		})
	}
}

func TestWindowRolls(t *testing.T) {
	cfg := testConfig()
	var b Breaker
	run(&b, &cfg, seq(0, "oooxx"))            // slot 0
	run(&b, &cfg, seq(12*time.Second, "oox")) // slot 2
	for _, tc := range []struct {
		at                    time.Duration
		wantCalls, wantFailed int64
	}{
		{1 * time.Second, 5, 2},
		{13 * time.Second, 8, 3},
		{59 * time.Second, 8, 3},
		{60 * time.Second, 3, 1}, // slot 0 left the window
		{71 * time.Second, 3, 1},
		{72 * time.Second, 0, 0},
	} {
		s := b.Status(t0.Add(tc.at), &cfg)
		if s.Calls != tc.wantCalls || s.Failures != tc.wantFailed {
			t.Fatalf("at %v: %d calls %d failures, want %d %d", tc.at, s.Calls, s.Failures, tc.wantCalls, tc.wantFailed)
		}
	}
	// A slot reused a window later starts empty.
	b.Success(t0.Add(60*time.Second), &cfg, 1)
	if s := b.Status(t0.Add(60*time.Second), &cfg); s.Calls != 4 || s.Failures != 1 {
		t.Fatalf("a reused slot kept its old counts: %+v", s)
	}
}

func TestOpenProbeClose(t *testing.T) {
	cfg := testConfig()
	var b Breaker
	if !run(&b, &cfg, seq(0, "xxxxx")) {
		t.Fatal("want open")
	}
	opened := t0.Add(400 * time.Millisecond)
	if s := b.Status(opened, &cfg); s.State != Open || !s.ProbeAt.Equal(opened.Add(30*time.Second)) || len(s.LastErrors) != 5 {
		t.Fatalf("status after opening: %+v", s)
	}
	if allow, probe := b.Allow(opened.Add(29*time.Second), &cfg); allow || probe {
		t.Fatal("allowed or probed during the cool-down")
	}
	// Calls while open are not counted; failures are remembered.
	b.Success(opened.Add(time.Second), &cfg, 1)
	allow, probe := b.Allow(opened.Add(30*time.Second), &cfg)
	if allow || !probe {
		t.Fatalf("due: allow %v probe %v, want the probe", allow, probe)
	}
	if allow, probe := b.Allow(opened.Add(31*time.Second), &cfg); allow || probe {
		t.Fatal("a second probe while one is in flight")
	}
	b.ProbeDone(opened.Add(31*time.Second), &cfg, true, Event{})
	if allow, _ := b.Allow(opened.Add(31*time.Second), &cfg); !allow {
		t.Fatal("a successful probe did not close the breaker")
	}
	s := b.Status(opened.Add(31*time.Second), &cfg)
	if s.State != Closed || s.Calls != 0 || s.Consecutive != 0 || !s.ProbeAt.IsZero() || s.Trips != 1 {
		t.Fatalf("closed status: %+v", s)
	}
	// The window restarted: one more failure does not reopen it.
	if b.Failure(opened.Add(32*time.Second), &cfg, 1, Event{}).Opened {
		t.Fatal("one failure after closing reopened the breaker")
	}
}

func TestFailedProbesGrowTheCoolDown(t *testing.T) {
	cfg := testConfig()
	var b Breaker
	run(&b, &cfg, seq(0, "xxxxx"))
	now := t0.Add(400 * time.Millisecond)
	wants := []time.Duration{30 * time.Second, 60 * time.Second, 120 * time.Second, 240 * time.Second, 300 * time.Second, 300 * time.Second}
	for i, want := range wants {
		s := b.Status(now, &cfg)
		if s.CoolDown != want || !s.ProbeAt.Equal(now.Add(want)) || s.FailedProbes != int64(i) {
			t.Fatalf("after %d failed probes: %+v, want cool-down %v", i, s, want)
		}
		now = s.ProbeAt
		if _, probe := b.Allow(now, &cfg); !probe {
			t.Fatalf("probe %d not due at %v", i, now)
		}
		b.ProbeDone(now, &cfg, false, Event{Time: now, Status: 502, Message: "bad"})
	}
	if s := b.Status(now, &cfg); !s.LastErrors[0].Probe || s.LastErrors[0].Status != 502 {
		t.Fatalf("the failed probe is not the last error: %+v", s.LastErrors)
	}
	// Closing resets the growth.
	now = b.Status(now, &cfg).ProbeAt
	b.Allow(now, &cfg)
	b.ProbeDone(now, &cfg, true, Event{})
	run(&b, &cfg, []step{{now.Sub(t0), 'x', 0}, {now.Sub(t0), 'x', 1}, {now.Sub(t0), 'x', 2}, {now.Sub(t0), 'x', 3}, {now.Sub(t0), 'x', 4}})
	if s := b.Status(now, &cfg); s.State != Open || s.CoolDown != 30*time.Second || s.Trips != 2 {
		t.Fatalf("reopened after closing: %+v, want the base cool-down", s)
	}
}

// One caller's failures cool that caller down on the breaker, doubling
// while it keeps failing, without opening it; a success ends it.
func TestCallerCoolDown(t *testing.T) {
	cfg := testConfig()
	var b Breaker
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	for i := range 4 {
		if out := b.Failure(at(0), &cfg, 99, Event{}); out.Opened || out.CallerCooled {
			t.Fatalf("failure %d: %+v", i+1, out)
		}
	}
	if out := b.Failure(at(0), &cfg, 99, Event{}); out.Opened || !out.CallerCooled {
		t.Fatalf("fifth failure: %+v, want the caller cooled alone", out)
	}
	if !b.CallerCooling(at(29*time.Second), 99) || b.CallerCooling(at(0), 98) || b.CallerCooling(at(30*time.Second), 99) {
		t.Fatal("the caller's cool-down is not 30 s, or another caller's")
	}
	if s := b.Status(at(time.Second), &cfg); s.State != Closed || s.CoolingCallers != 1 || s.Failures != 5 {
		t.Fatalf("status: %+v", s)
	}
	// Failures while cooling are not the channel's: another caller's
	// failures start a run of their own.
	for range 10 {
		b.Failure(at(time.Second), &cfg, 99, Event{})
	}
	for range 4 {
		b.Failure(at(2*time.Second), &cfg, 1, Event{})
	}
	if !b.Closed() {
		t.Fatal("a cooled-down caller's failures opened the breaker")
	}
	// Failing again after the cool-down: twice as long.
	if out := b.Failure(at(30*time.Second), &cfg, 99, Event{}); !out.CallerCooled || b.CallerCooling(at(89*time.Second), 99) != true {
		t.Fatalf("again: %+v", out)
	}
	if b.CallerCooling(at(90*time.Second), 99) {
		t.Fatal("the second cool-down is not 60 s")
	}
	b.Success(at(31*time.Second), &cfg, 99)
	if b.CallerCooling(at(31*time.Second), 99) || b.nCallers.Load() != 1 {
		t.Fatalf("a success did not end the caller's cool-down (%d followed)", b.nCallers.Load())
	}
}

// More failing callers than the table holds: the oldest is forgotten, and
// the count of followed callers stays right.
func TestCallerTableBounded(t *testing.T) {
	cfg := testConfig()
	cfg.Consecutive, cfg.ErrorRatePercent = 0, 0
	var b Breaker
	for i := range 3 * MaxCallers {
		b.Failure(t0.Add(time.Duration(i)*time.Millisecond), &cfg, int64(1000+i), Event{})
	}
	if n := b.nCallers.Load(); n != MaxCallers {
		t.Fatalf("%d callers followed, want %d", n, MaxCallers)
	}
	for i := range 3 * MaxCallers {
		b.Success(t0, &cfg, int64(1000+i))
	}
	if n := b.nCallers.Load(); n != 0 {
		t.Fatalf("%d callers left after their successes", n)
	}
}

func TestNextCoolDown(t *testing.T) {
	for _, tc := range []struct {
		base, limit time.Duration
		failed      int64
		want        time.Duration
	}{
		{time.Second, time.Minute, 0, time.Second},
		{time.Second, time.Minute, 3, 8 * time.Second},
		{time.Second, time.Minute, 6, time.Minute},
		{time.Second, time.Minute, 1 << 40, time.Minute},
		{time.Minute, time.Second, 3, time.Minute}, // a limit below the base keeps the base
		{time.Duration(1 << 62), time.Duration(1<<63 - 1), 5, time.Duration(1<<63 - 1)},
	} {
		if got := NextCoolDown(tc.base, tc.limit, tc.failed); got != tc.want {
			t.Errorf("NextCoolDown(%v, %v, %d) = %v, want %v", tc.base, tc.limit, tc.failed, got, tc.want)
		}
	}
}

// Hundreds of callers finding the probe due: exactly one sends it.
func TestOneProbeUnderParallelCallers(t *testing.T) {
	cfg := testConfig()
	var b Breaker
	run(&b, &cfg, seq(0, "xxxxx"))
	due := t0.Add(time.Hour)
	var probes, allowed atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 500 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			allow, probe := b.Allow(due, &cfg)
			if probe {
				probes.Add(1)
			}
			if allow {
				allowed.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	if probes.Load() != 1 || allowed.Load() != 0 {
		t.Fatalf("%d probes, %d allowed: want 1 and 0", probes.Load(), allowed.Load())
	}
}

func TestEventsBounded(t *testing.T) {
	cfg := testConfig()
	cfg.Consecutive = 0
	cfg.ErrorRatePercent = 0
	var b Breaker
	long := make([]byte, 5000)
	for i := range long {
		long[i] = 'a'
	}
	for i := range 12 {
		b.Failure(t0.Add(time.Duration(i)*time.Second), &cfg, int64(1+i%2), Event{Time: t0.Add(time.Duration(i) * time.Second), Status: 500 + i, Message: string(long)})
	}
	s := b.Status(t0, &cfg)
	if len(s.LastErrors) != MaxEvents || s.LastErrors[0].Status != 511 || s.LastErrors[4].Status != 507 {
		t.Fatalf("events: %+v", s.LastErrors)
	}
	for _, e := range s.LastErrors {
		if len(e.Message) != MaxMessageBytes {
			t.Fatalf("message of %d bytes kept", len(e.Message))
		}
	}
}

// The hot path allocates nothing.
func TestRecordingDoesNotAllocate(t *testing.T) {
	cfg := testConfig()
	var b Breaker
	now := t0
	if n := testing.AllocsPerRun(1000, func() {
		b.Closed()
		b.Allow(now, &cfg)
		b.Success(now, &cfg, 1)
	}); n != 0 {
		t.Fatalf("%v allocations per call", n)
	}
}

func TestSetRenewKeepsState(t *testing.T) {
	cfg := testConfig()
	var s Set
	m := s.Renew([]Key{{1, "a"}, {1, "b"}, {2, "a"}})
	run(m[Key{1, "a"}], &cfg, seq(0, "xxxxx"))
	m2 := s.Renew([]Key{{1, "a"}, {2, "a"}})
	if m2[Key{1, "a"}] != m[Key{1, "a"}] || m2[Key{1, "a"}].Closed() {
		t.Fatal("a reload lost the open breaker")
	}
	if s.Get(Key{1, "b"}) != nil || len(s.List(0)) != 2 || len(s.List(2)) != 1 {
		t.Fatalf("the removed model's breaker is kept: %+v", s.List(0))
	}
	if l := s.List(0); l[0].Channel != 1 || l[1].Channel != 2 {
		t.Fatalf("not sorted: %+v", l)
	}
}

// The hot path of one call: the check in choose and the success record,
// from parallel goroutines on one breaker (the worst case: one busy model
// on one channel).
func BenchmarkCallOnOneBreaker(b *testing.B) {
	cfg := testConfig()
	var br Breaker
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if br.Closed() {
				br.Success(time.Now(), &cfg, 1)
			}
		}
	})
}
