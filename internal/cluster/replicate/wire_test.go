package replicate

import (
	"math"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/cluster/replica"
)

func TestCheckClock(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	at := func(id int64, d time.Duration) replica.Event {
		return replica.Event{ID: id, TimeUS: now.Add(d).UnixMicro()}
	}
	for _, tc := range []struct {
		name   string
		events []replica.Event
		wantID int64 // 0: accepted
	}{
		{"now", []replica.Event{at(57, 0)}, 0},
		{"in the past", []replica.Event{at(57, -48*time.Hour)}, 0},
		{"at the bound", []replica.Event{at(57, 5*time.Minute)}, 0},
		{"a microsecond past the bound", []replica.Event{at(57, 5*time.Minute+time.Microsecond)}, 57},
		{"the second of a batch, dated 2100", []replica.Event{at(57, 0), {ID: 107, TimeUS: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()}}, 107},
		{"empty", nil, 0},
	} {
		msg, args := CheckClock(tc.events, now, 5*time.Minute)
		switch {
		case tc.wantID == 0 && msg != "":
			t.Errorf("%s: refused: %s %v", tc.name, msg, args)
		case tc.wantID != 0 && (msg != MsgEventFuture || len(args) != 2 || args[0] != tc.wantID || args[1] != "5m0s"):
			t.Errorf("%s: %q %v, want %s naming event %d", tc.name, msg, args, MsgEventFuture, tc.wantID)
		}
	}
}

// An event_time (seconds) too large to count in microseconds is refused
// rather than wrapped to a small time.
func TestEventTimeInSecondsOverflow(t *testing.T) {
	e := Event{ID: 57, TableName: "users", Operation: "UPDATE", PrimaryKey: 1, EventTime: math.MaxInt64 / 1000}
	if _, err := e.ToStore(); err == nil {
		t.Fatal("an event_time past int64 microseconds was accepted")
	}
	e.EventTime = 4_102_444_800 // 2100, seconds only
	if ev, err := e.ToStore(); err != nil || ev.TimeUS != 4_102_444_800_000_000 {
		t.Fatalf("2100 in seconds: %+v, %v", ev, err)
	}
}
