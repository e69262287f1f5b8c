package propagation

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/store"
)

// The applied version only moves over versions that were all applied; a
// hole holds it back until it closes or a reload covers it, and only a
// hole older than the grace is stuck.
func TestTrackerAppliesOnlyWithoutHoles(t *testing.T) {
	t0 := time.Unix(1000, 0)
	type step struct {
		observe  int64 // 0: none
		reloaded int64 // 0: none
		failed   bool
		at       time.Duration
		want     int64
		stuck    bool // checked at `at` with a 1 s grace
	}
	for _, tc := range []struct {
		name  string
		start int64
		steps []step
	}{
		{"in order", 5, []step{{observe: 6, want: 6}, {observe: 7, want: 7}}},
		{"old and repeated versions change nothing", 5, []step{{observe: 3, want: 5}, {observe: 5, want: 5}}},
		{"out of order closes", 5, []step{{observe: 7, want: 5}, {observe: 6, at: 200 * time.Millisecond, want: 7}}},
		{"a hole is stuck only after the grace", 5, []step{
			{observe: 8, want: 5},
			{observe: 6, at: 999 * time.Millisecond, want: 6},
			{at: time.Second, want: 6, stuck: true},
		}},
		{"a reload closes every hole it covers", 5, []step{
			{observe: 7, want: 5},
			{observe: 10, want: 5},
			{reloaded: 8, at: 2 * time.Second, want: 8},
			{at: 2 * time.Second, want: 8, stuck: false},
			{at: 3500 * time.Millisecond, want: 8, stuck: true}, // 9 is still missing
			{observe: 9, at: 4 * time.Second, want: 10},
		}},
		{"a reload behind what is applied changes nothing", 5, []step{{reloaded: 4, want: 5}}},
		{"a change that failed to apply is a hole until a reload", 5, []step{
			{failed: true, want: 5},
			{observe: 7, at: 500 * time.Millisecond, want: 5},
			{observe: 6, at: 900 * time.Millisecond, want: 7},
			{at: time.Second, want: 7, stuck: true}, // 7 arrived, but what failed was not applied
			{reloaded: 7, at: time.Second, want: 7},
			{at: 5 * time.Second, want: 7, stuck: false},
		}},
		{"int64 edge", 1<<63 - 3, []step{{observe: 1<<63 - 2, want: 1<<63 - 2}, {observe: 1<<63 - 1, want: 1<<63 - 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTracker(tc.start)
			for i, s := range tc.steps {
				now := t0.Add(s.at)
				if s.observe != 0 {
					tr.observe(s.observe, now)
				}
				if s.failed {
					tr.failed(now)
				}
				if s.reloaded != 0 {
					tr.reloaded(s.reloaded, now)
				}
				if got := tr.version(); got != s.want {
					t.Fatalf("step %d: version %d, want %d", i, got, s.want)
				}
				if got := tr.stuck(now, time.Second); got != s.stuck {
					t.Fatalf("step %d: stuck %v, want %v", i, got, s.stuck)
				}
			}
		})
	}
}

// A transaction whose rows do not fit one NOTIFY goes as a full reload;
// a small one lists its rows; both read back as sent.
func TestMessagesFitANotify(t *testing.T) {
	var many []store.Change
	for i := range 500 {
		many = append(many, store.Change{Table: "abilities", Op: "INSERT", ID: int64(i + 1)})
	}
	big := encode("me", store.ConfigCommit{Version: 9, Changes: many})
	if len(big) > maxPayload {
		t.Fatalf("message of %d bytes", len(big))
	}
	m, changes, err := decode(big)
	if err != nil || !m.All || len(changes) != 0 || m.Version != 9 || m.Origin != "me" {
		t.Fatalf("big: %+v %v %v", m, changes, err)
	}
	key := "SystemName\x00\"quoted\" 名字 " + strings.Repeat("x", 10)
	small := encode("me", store.ConfigCommit{Version: 10, Changes: []store.Change{
		{Table: "tokens", Op: "UPDATE", ID: 42}, {Table: "options", Op: "UPDATE", Key: key}}})
	m, changes, err = decode(small)
	if err != nil || m.All || m.Version != 10 || fmt.Sprint(changes) != fmt.Sprint([]store.Change{
		{Table: "tokens", Op: "UPDATE", ID: 42}, {Table: "options", Op: "UPDATE", Key: key}}) {
		t.Fatalf("small: %+v %+v %v", m, changes, err)
	}
	if _, _, err := decode("not json"); err == nil {
		t.Fatal("garbage decoded")
	}
}
