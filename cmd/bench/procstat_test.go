package main

import (
	"os"
	"testing"
)

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		name string
		stat string
		want int64
	}{
		{"plain", "4242 (bench) S 1 4242 4242 0 -1 4194560 1234 0 0 0 150 25 0 0 20 0 9 0 100 0 0", 175},
		// The command name is whatever the process chose, up to 15 bytes:
		// spaces and parentheses included, so only the last ')' ends it.
		{"spaces and parens", "77 (a) b (c d)) R 1 77 77 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 5 0 0", 10},
		{"name looks like fields", "9 (1 2 3 4 5 6 7 8) S 1 9 9 0 -1 0 0 0 0 0 40 2 0 0", 42},
		{"trailing newline", "5 (x) S 1 5 5 0 -1 0 0 0 0 0 1 1 0 0\n", 2},
	}
	for _, tt := range tests {
		got, err := parseStatCPU([]byte(tt.stat))
		if err != nil || got != tt.want {
			t.Errorf("%s: parseStatCPU = %d, %v; want %d", tt.name, got, err, tt.want)
		}
	}
}

// The database server's figure adds the reaped children's times (cutime,
// cstime: fields 16 and 17), where an exited backend's ticks go.
func TestParseStatCPUWithChildren(t *testing.T) {
	stat := []byte("4242 (postgres) S 1 4242 4242 0 -1 4194560 1234 0 0 0 150 25 900 80 20 0 9 0 100 0 0")
	if got, err := parseStatCPUFields(stat, "utime", "stime", "cutime", "cstime"); err != nil || got != 1155 {
		t.Errorf("with children = %d, %v; want 1155", got, err)
	}
	if got, err := parseStatCPU(stat); err != nil || got != 175 {
		t.Errorf("own = %d, %v; want 175", got, err)
	}
	if _, err := parseStatCPUFields([]byte("5 (x) S 1 5 5 0 -1 0 0 0 0 0 1 1"), "cutime"); err == nil {
		t.Error("a line without cutime: want an error")
	}
}

func TestParseStatCPURejectsMalformed(t *testing.T) {
	for _, stat := range []string{
		"",
		"12 bench S 1 2 3",   // no parentheses
		"12 (bench) S 1 2 3", // too few fields
		"12 (bench) S 1 2 3 4 5 6 7 8 9 10 x 3 4", // utime not a number
	} {
		if got, err := parseStatCPU([]byte(stat)); err == nil {
			t.Errorf("parseStatCPU(%q) = %d, want an error", stat, got)
		}
	}
}

func TestParseStatusRSS(t *testing.T) {
	status := "Name:\tbench\nVmPeak:\t  900000 kB\nVmRSS:\t   15360 kB\nRssAnon:\t 9000 kB\n"
	got, err := parseStatusRSS([]byte(status))
	if err != nil || got != 15360 {
		t.Errorf("parseStatusRSS = %d, %v; want 15360", got, err)
	}
	if _, err := parseStatusRSS([]byte("Name:\tkthreadd\n")); err == nil {
		t.Error("parseStatusRSS without VmRSS: want an error")
	}
}

// TestReadOwnProcess reads this test process, so the parsers agree with
// the kernel's real format, not only with the examples above.
func TestReadOwnProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	if _, err := procCPUTicks(os.Getpid()); err != nil {
		t.Errorf("procCPUTicks(self): %v", err)
	}
	if kib, err := procRSSKiB(os.Getpid()); err != nil || kib <= 0 {
		t.Errorf("procRSSKiB(self) = %d, %v", kib, err)
	}
}
