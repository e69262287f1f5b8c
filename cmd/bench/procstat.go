package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicksPerSecond converts /proc/<pid>/stat times to seconds. Linux
// reports them in USER_HZ, which is part of the user-space ABI and is 100 on
// every architecture Go supports (getconf CLK_TCK prints 100), so the bench
// does not shell out to read it.
const clockTicksPerSecond = 100

// microsPerTick is the CPU time of one clock tick in microseconds.
const microsPerTick = 1_000_000 / clockTicksPerSecond

// procCPUTicks returns utime+stime of process pid in clock ticks.
func procCPUTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(b)
}

// procCPUTicksWithChildren returns utime+stime+cutime+cstime of process
// pid in clock ticks: its own CPU and that of its children it has reaped.
func procCPUTicksWithChildren(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPUFields(b, "utime", "stime", "cutime", "cstime")
}

// parseStatCPU reads utime (field 14) and stime (field 15) of a
// /proc/<pid>/stat line.
func parseStatCPU(stat []byte) (int64, error) { return parseStatCPUFields(stat, "utime", "stime") }

// statFields are the numbers (proc(5)) of the CPU time fields of
// /proc/<pid>/stat: the process's own user and system time, and those of
// its children it waited for.
var statFields = map[string]int{"utime": 14, "stime": 15, "cutime": 16, "cstime": 17}

// parseStatCPUFields sums the named fields of a /proc/<pid>/stat line.
// Field 2 is the command name in parentheses and may itself contain spaces
// and parentheses, so fields are counted from the last ')' (proc(5)).
func parseStatCPUFields(stat []byte, names ...string) (int64, error) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("parse /proc stat: no ')' after the command name")
	}
	// After ") " come field 3 (state) onwards: field n is at index n-3.
	fields := strings.Fields(string(stat[end+1:]))
	var sum int64
	for _, name := range names {
		i := statFields[name] - 3
		if len(fields) <= i {
			return 0, fmt.Errorf("parse /proc stat: %d fields after the command name, want more than %d", len(fields), i)
		}
		v, err := strconv.ParseInt(fields[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse /proc stat %s: %w", name, err)
		}
		sum += v
	}
	return sum, nil
}

// procRSSKiB returns the resident set size (VmRSS) of process pid in KiB.
func procRSSKiB(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return parseStatusRSS(b)
}

// parseStatusRSS reads the "VmRSS:   1234 kB" line of /proc/<pid>/status.
func parseStatusRSS(status []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("parse /proc status: unexpected VmRSS line %q", sc.Text())
		}
		return strconv.ParseInt(f[0], 10, 64)
	}
	return 0, fmt.Errorf("parse /proc status: no VmRSS line")
}
