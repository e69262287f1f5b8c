//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package h1

import (
	"errors"
	"net"
	"syscall"
)

// closedByPeer reports whether the idle connection nc can no longer carry
// a request: the peer closed it (FIN: a zero-byte read), reset it, or sent
// bytes nobody asked for (a late 408, a TLS close_notify). It is one
// non-blocking recv with MSG_PEEK on the socket: nothing is consumed and
// nothing waits. A connection the check cannot inspect counts as open;
// the fresh-dial retry covers it.
func closedByPeer(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var buf [1]byte
	closed := false
	err = raw.Read(func(fd uintptr) bool {
		_, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// EAGAIN: nothing to read, still open. Any other error is a reset;
		// no error is the peer's FIN (0 bytes) or unasked-for data.
		closed = !errors.Is(rerr, syscall.EAGAIN) && !errors.Is(rerr, syscall.EINTR)
		return true // never wait for readiness
	})
	return closed || err != nil
}
