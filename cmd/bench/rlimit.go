package main

import (
	"fmt"
	"syscall"
)

// noFileLimit records the descriptor limit the run had.
type noFileLimit struct {
	SoftBefore uint64 `json:"soft_before"`
	Soft       uint64 `json:"soft"`
	Hard       uint64 `json:"hard"`
	Needed     uint64 `json:"needed"`
}

// raiseNoFileLimit sets the soft RLIMIT_NOFILE to the hard limit, since
// holding n streams through a proxy takes n client sockets in the bench and
// 2n in the proxy. Go already raises its own soft limit at start, but since
// Go 1.21 it restores the original for the processes it starts, unless the
// program called Setrlimit itself: calling it here makes the mock, the
// proxy and the gateway inherit the raised limit (they would raise their own
// anyway, being Go programs, but a non-Go gateway would not).
func raiseNoFileLimit(needed uint64) (noFileLimit, error) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return noFileLimit{}, fmt.Errorf("getrlimit NOFILE: %w", err)
	}
	info := noFileLimit{SoftBefore: r.Cur, Hard: r.Max, Needed: needed}
	if r.Max < needed {
		return info, fmt.Errorf("RLIMIT_NOFILE hard limit %d is below the %d descriptors this run needs: lower -streams or raise ulimit -Hn", r.Max, needed)
	}
	r.Cur = r.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return info, fmt.Errorf("setrlimit NOFILE: %w", err)
	}
	info.Soft = r.Cur
	return info, nil
}
