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

// step is one outcome at an offset from t0: 'o' success, 'x' failure.
type step struct {
	at  time.Duration
	out byte
}

func run(b *Breaker, cfg *Config, steps []step) bool {
	opened := false
	for _, s := range steps {
		now := t0.Add(s.at)
		if s.out == 'o' {
			b.Success(now, cfg)
		} else if b.Failure(now, cfg, Event{Time: now, Status: 503}) {
			opened = true
		}
	}
	return opened
}

// seq spreads outcomes one per 100 ms from start.
func seq(start time.Duration, outs string) []step {
	var s []step
	for i := range len(outs) {
		s = append(s, step{start + time.Duration(i)*100*time.Millisecond, outs[i]})
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
		{"rate 50% at min calls", func(c *Config) { c.Consecutive = 0 }, seq(0, "oxoxoxoxox"), true},
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
	b.Success(t0.Add(60*time.Second), &cfg)
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
	b.Success(opened.Add(time.Second), &cfg)
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
	if b.Failure(opened.Add(32*time.Second), &cfg, Event{}) {
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
	run(&b, &cfg, []step{{now.Sub(t0), 'x'}, {now.Sub(t0), 'x'}, {now.Sub(t0), 'x'}, {now.Sub(t0), 'x'}, {now.Sub(t0), 'x'}})
	if s := b.Status(now, &cfg); s.State != Open || s.CoolDown != 30*time.Second || s.Trips != 2 {
		t.Fatalf("reopened after closing: %+v, want the base cool-down", s)
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
		b.Failure(t0.Add(time.Duration(i)*time.Second), &cfg, Event{Time: t0.Add(time.Duration(i) * time.Second), Status: 500 + i, Message: string(long)})
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
		b.Success(now, &cfg)
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
				br.Success(time.Now(), &cfg)
			}
		}
	})
}
