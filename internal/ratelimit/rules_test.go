package ratelimit

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestWindowArithmetic(t *testing.T) {
	for _, tc := range []struct {
		at     time.Time
		window int64
		reset  time.Duration
	}{
		{time.Unix(0, 0), 0, time.Minute},
		{time.Unix(59, 999e6), 0, time.Millisecond},
		{time.Unix(60, 0), 1, time.Minute},
		{time.Unix(125, 0), 2, 55 * time.Second},
		{time.Unix(-1, 0), -1, time.Second},
		{time.Unix(-60, 0), -1, time.Minute},
		{time.Unix(-61, 0), -2, time.Second},
	} {
		if got := WindowOf(tc.at); got != tc.window {
			t.Errorf("WindowOf(%v) = %d, want %d", tc.at.Unix(), got, tc.window)
		}
		if got := ResetIn(tc.at); got != tc.reset {
			t.Errorf("ResetIn(%v) = %v, want %v", tc.at.Unix(), got, tc.reset)
		}
	}
}

func TestShare(t *testing.T) {
	for _, tc := range []struct {
		l    int64
		n    int
		want int64
	}{
		{0, 3, 0}, {10, 1, 10}, {10, 0, 10}, {10, 2, 5}, {11, 2, 6}, {1, 2, 1}, {3, 5, 1},
		{MaxTPM, 49, (MaxTPM + 48) / 49},
	} {
		if got := Share(tc.l, tc.n); got != tc.want {
			t.Errorf("Share(%d, %d) = %d, want %d", tc.l, tc.n, got, tc.want)
		}
		// n nodes together never exceed l + n − 1.
		if tc.n > 1 && tc.l > 0 && Share(tc.l, tc.n)*int64(tc.n) > tc.l+int64(tc.n)-1 {
			t.Errorf("Share(%d, %d): slack above n-1", tc.l, tc.n)
		}
	}
}

func TestValidateKey(t *testing.T) {
	for _, tc := range []struct {
		name  string
		l, gl Limits
		want  string
	}{
		{"none", Limits{}, Limits{}, ""},
		{"max", Limits{MaxRPM, MaxTPM, MaxConcurrency}, Limits{}, ""},
		{"negative rpm", Limits{RPM: -1}, Limits{}, "rpm_limit 必须是 0 到 1000000000 之间的整数(0 表示不限制)"},
		{"huge tpm", Limits{TPM: MaxTPM + 1}, Limits{}, "tpm_limit 必须是 0 到 1000000000000 之间的整数(0 表示不限制)"},
		{"huge concurrency", Limits{Concurrency: 1 << 62}, Limits{}, "concurrency_limit 必须是 0 到 1000000 之间的整数(0 表示不限制)"},
		{"within group", Limits{RPM: 10}, Limits{RPM: 10}, ""},
		{"above group", Limits{TPM: 11}, Limits{TPM: 10}, "tpm_limit 不能超过所在分组 g 的限制 10"},
		{"zero under group", Limits{}, Limits{RPM: 1, TPM: 1, Concurrency: 1}, ""},
	} {
		if got := ValidateKey(tc.l, "g", tc.gl); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestParseGroupLimits(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ok   bool
		want map[string]Limits
	}{
		{"{}", true, map[string]Limits{}},
		{`{"default":{"rpm":60,"tpm":1000,"concurrency":2},"vip":{}}`, true, map[string]Limits{"default": {60, 1000, 2}}},
		{`{"default":{"rpm":-1}}`, false, nil},
		{`{"default":{"rpm":1.5}}`, false, nil},
		{`{"default":{"rps":1}}`, false, nil},
		{`{" ":{"rpm":1}}`, false, nil},
		{"{\"a\\u0000\":{}}", false, nil},
		{"{\"\xff\":{}}", false, nil},
		{`[]`, false, nil},
		{`null`, false, nil},
		{`{} {}`, false, nil},
		{`{"a":{"rpm":99999999999999999999}}`, false, nil},
	} {
		got, err := ParseGroupLimits(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v, want ok %v", tc.in, err, tc.ok)
			continue
		}
		if tc.ok && len(got) != len(tc.want) {
			t.Errorf("%s: got %v, want %v", tc.in, got, tc.want)
		}
		for g, l := range tc.want {
			if got[g] != l {
				t.Errorf("%s: %s = %v, want %v", tc.in, g, got[g], l)
			}
		}
	}
}

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		name      string
		key, user Limits
		kc, uc    Counts
		est       int64
		scope     Scope
		measure   Measure
		req, tok  Quota
	}{
		{"admitted", Limits{RPM: 10, TPM: 100}, Limits{}, Counts{Requests: 3, Tokens: 50}, Counts{}, 20, ScopeNone, MeasureNone, Quota{10, 6}, Quota{100, 30}},
		{"rpm reached", Limits{RPM: 10}, Limits{}, Counts{Requests: 10}, Counts{}, 0, ScopeKey, MeasureRequests, Quota{10, 0}, Quota{}},
		{"tpm exact fit", Limits{TPM: 100}, Limits{}, Counts{Tokens: 80}, Counts{}, 20, ScopeNone, MeasureNone, Quota{}, Quota{100, 0}},
		{"tpm over", Limits{TPM: 100}, Limits{}, Counts{Tokens: 81}, Counts{}, 20, ScopeKey, MeasureTokens, Quota{}, Quota{100, 19}},
		{"estimate alone over", Limits{TPM: 100}, Limits{}, Counts{}, Counts{}, 101, ScopeKey, MeasureTokens, Quota{}, Quota{100, 100}},
		{"concurrency", Limits{Concurrency: 2}, Limits{}, Counts{Inflight: 2}, Counts{}, 0, ScopeKey, MeasureConcurrency, Quota{}, Quota{}},
		{"group rpm", Limits{RPM: 10}, Limits{RPM: 5}, Counts{Requests: 1}, Counts{Requests: 5}, 0, ScopeGroup, MeasureRequests, Quota{5, 0}, Quota{}},
		{"key before group", Limits{RPM: 1}, Limits{RPM: 1}, Counts{Requests: 1}, Counts{Requests: 1}, 0, ScopeKey, MeasureRequests, Quota{1, 0}, Quota{}},
		{"tightest header", Limits{RPM: 100}, Limits{RPM: 5}, Counts{Requests: 1}, Counts{Requests: 2}, 0, ScopeNone, MeasureNone, Quota{5, 2}, Quota{}},
	} {
		var r Result
		judge(&r, tc.key, tc.user, tc.kc, tc.uc, tc.est, !tc.user.IsZero())
		if r.Scope != tc.scope || r.Measure != tc.measure || r.Requests != tc.req || r.Tokens != tc.tok {
			t.Errorf("%s: got scope %d measure %d req %v tok %v, want %d %d %v %v", tc.name,
				r.Scope, r.Measure, r.Requests, r.Tokens, tc.scope, tc.measure, tc.req, tc.tok)
		}
	}
}

// TestMemoryParallel: N parallel admissions against a limit of L admit L,
// and settling to fewer tokens frees the difference in the same window.
func TestMemoryParallel(t *testing.T) {
	l := New(Config{})
	now := time.Unix(6000, 0)
	const limit, calls = 37, 500
	var mu sync.Mutex
	var tickets []Ticket
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() {
			tk, r := l.Admit(context.Background(), &Request{KeyID: 1, UserID: 2, Key: Limits{Concurrency: limit}, User: Limits{RPM: 1000}, Now: now})
			if !r.Refused() {
				mu.Lock()
				tickets = append(tickets, tk)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(tickets) != limit {
		t.Fatalf("admitted %d, want %d", len(tickets), limit)
	}
	for i := range tickets {
		l.Done(&tickets[i], 0)
	}
	if n := l.Inflight(false, 1); n != 0 {
		t.Fatalf("inflight after done = %d", n)
	}
	// TPM: an estimate of 60 settled to 10 leaves room for 90 more.
	req := &Request{KeyID: 3, UserID: 4, Key: Limits{TPM: 100}, Tokens: 60, Now: now}
	tk, r := l.Admit(context.Background(), req)
	if r.Refused() {
		t.Fatal("first tpm call refused")
	}
	if _, r := l.Admit(context.Background(), req); !r.Refused() || r.Measure != MeasureTokens {
		t.Fatalf("second 60-token call admitted: %+v", r)
	}
	l.Done(&tk, 10)
	req.Tokens = 90
	if _, r := l.Admit(context.Background(), req); r.Refused() {
		t.Fatalf("90 after settle to 10 refused: %+v", r)
	}
	// The next window starts again; sweeping keeps only subjects in use.
	req.Now = now.Add(time.Minute)
	if _, r := l.Admit(context.Background(), req); r.Refused() {
		t.Fatalf("next window refused: %+v", r)
	}
	if n := l.Sweep(now.Add(2 * time.Minute)); n != 1 {
		t.Fatalf("after sweep %d counters remain, want 1 (key 3 still has a call in flight)", n)
	}
}

// BenchmarkMemoryAdmitDone is one limited call's cost on one node: key and
// group limits, admission then settlement, many keys in parallel.
func BenchmarkMemoryAdmitDone(b *testing.B) {
	l := New(Config{})
	now := time.Unix(6000, 0)
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		id := next.Add(1)
		req := Request{KeyID: id, UserID: id, Key: Limits{RPM: 1 << 40, TPM: 1 << 40, Concurrency: 1 << 19},
			User: Limits{Concurrency: 1 << 19}, Tokens: 100, Now: now}
		for pb.Next() {
			t, r := l.Admit(context.Background(), &req)
			if r.Refused() {
				b.Fatal("refused")
			}
			l.Done(&t, 50)
		}
	})
}
