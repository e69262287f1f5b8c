//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package h1

import "net"

// closedByPeer cannot peek at the socket here: every idle connection
// counts as open and a stale one is caught by the fresh-dial retry.
func closedByPeer(net.Conn) bool { return false }
