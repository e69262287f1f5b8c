//go:build linux

// Package redisserver starts a redis-server process owned by one test, so
// the test can freeze it (SIGSTOP), resume it and stop it, which a shared
// server (MODELGATE_TEST_REDIS) must never suffer. The server listens on a
// free port of 127.0.0.1, keeps nothing on disk, and dies with the test.
package redisserver

import (
	"bytes"
	"context"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a running redis-server of the test's own.
type Server struct {
	// Addr is host:port, URL the same as a redis:// URL (database 0).
	Addr, URL string
	cmd       *exec.Cmd
	exited    chan struct{}
	out       *lockedBuffer
}

// Start runs redis-server for t, or skips t when the binary is not
// installed. The server is killed when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed")
	}
	dir := t.TempDir()
	// A port found free can be taken by another process before the server
	// binds it: try again with another.
	var last string
	for range 5 {
		s, ok := start(t, bin, dir)
		if ok {
			return s
		}
		last = s.out.String()
	}
	t.Fatalf("redis-server did not start: %s", last)
	return nil
}

// start runs one server on a free port and waits until it answers.
func start(t testing.TB, bin, dir string) (*Server, bool) {
	t.Helper()
	port := freePort(t)
	s := &Server{Addr: "127.0.0.1:" + port, exited: make(chan struct{}), out: &lockedBuffer{}}
	s.URL = "redis://" + s.Addr + "/0"
	s.cmd = exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", "")
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	// The server must not outlive a test binary that is killed.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	go func() {
		s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(s.stop)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer rdb.Close()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return s, false // most likely the port was taken
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return s, true
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("redis-server on %s does not answer: %s", s.Addr, s.out.String())
	return s, false
}

// Freeze stops the process (SIGSTOP): connections still open and the
// kernel still takes the commands sent, but nothing runs until Resume.
func (s *Server) Freeze(t testing.TB) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("freeze redis-server: %v", err)
	}
}

// Resume continues a frozen server (SIGCONT).
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatalf("resume redis-server: %v", err)
	}
}

func (s *Server) stop() {
	select {
	case <-s.exited:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGCONT) // a frozen process dies of SIGKILL too, but let it go cleanly
	s.cmd.Process.Kill()
	<-s.exited
}

// freePort is a TCP port of 127.0.0.1 nobody listened on a moment ago.
func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// lockedBuffer keeps the server's output for failure messages.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 64<<10 {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
