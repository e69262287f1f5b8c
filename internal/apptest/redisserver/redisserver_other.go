//go:build !linux

package redisserver

import "testing"

// Server is a running redis-server of the test's own (Linux only).
type Server struct{ Addr, URL string }

// Start skips t: stopping and resuming a process of the test is done with
// Linux signals.
func Start(t testing.TB) *Server {
	t.Helper()
	t.Skip("redisserver needs Linux")
	return nil
}

// Freeze is not reached: Start skipped the test.
func (s *Server) Freeze(t testing.TB) {}

// Resume is not reached: Start skipped the test.
func (s *Server) Resume(t testing.TB) {}
