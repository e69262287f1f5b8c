package dashboard

import (
	"testing"
	"time"
)

func TestParseRange(t *testing.T) {
	for _, c := range []struct{ in, want, msg string }{
		{"", "7d", ""}, {"today", "today", ""}, {"7d", "7d", ""}, {"30d", "30d", ""}, {"all", "all", ""},
		{"7D", "", MsgRangeInvalid}, {"1d", "", MsgRangeInvalid}, {"all ", "", MsgRangeInvalid},
		{"\x00", "", MsgRangeInvalid}, {"\xff", "", MsgRangeInvalid},
	} {
		got, msg := ParseRange(c.in)
		if got != c.want || msg != c.msg {
			t.Errorf("ParseRange(%q) = %q, %q; want %q, %q", c.in, got, msg, c.want, c.msg)
		}
	}
}

func TestValidLimit(t *testing.T) {
	for _, c := range []struct {
		n  int64
		ok bool
	}{{1, true}, {20, true}, {200, true}, {0, false}, {-1, false}, {201, false},
		{-1 << 63, false}, {1<<63 - 1, false}} {
		if got := ValidLimit(c.n) == ""; got != c.ok {
			t.Errorf("ValidLimit(%d) ok = %v", c.n, got)
		}
	}
}

func TestWindows(t *testing.T) {
	now := time.Date(2026, 3, 10, 23, 59, 59, 0, time.UTC).Unix()
	day := func(m time.Month, d int) int64 { return time.Date(2026, m, d, 0, 0, 0, 0, time.UTC).Unix() }
	for _, c := range []struct {
		r            string
		since, chart int64
	}{
		{"today", day(3, 10), day(3, 10)},
		{"7d", day(3, 4), day(3, 4)},
		{"30d", day(2, 9), day(2, 9)},
		{"all", 0, day(2, 9)},
	} {
		if got := Since(c.r, now); got != c.since {
			t.Errorf("Since(%s) = %d, want %d", c.r, got, c.since)
		}
		if got := ChartSince(c.r, now); got != c.chart {
			t.Errorf("ChartSince(%s) = %d, want %d", c.r, got, c.chart)
		}
	}
	if DayStart(day(3, 10)) != day(3, 10) || DayStart(-1) != -86400 {
		t.Error("DayStart at a day's first second or before 1970")
	}
}

func TestYuan(t *testing.T) {
	for _, c := range []struct {
		fen  int64
		want float64
	}{{0, 0}, {1, 0.01}, {12345, 123.45}, {-990, -9.9}, {10, 0.1}} {
		if got := Yuan(c.fen); got != c.want {
			t.Errorf("Yuan(%d) = %v, want %v", c.fen, got, c.want)
		}
	}
}
