package apptest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// TCPProxy forwards connections to a database server until it hangs: then
// new connections are accepted and never answered, and the open ones are
// cut, as when a database host vanishes from the network.
type TCPProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	hung   bool
	refuse bool
	conns  []net.Conn
}

// NewTCPProxy listens on a loopback port and forwards to target until t
// ends.
func NewTCPProxy(t testing.TB, target string) *TCPProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &TCPProxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go p.serve()
	return p
}

func (p *TCPProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns = append(p.conns, c)
		hung, refuse := p.hung, p.refuse
		p.mu.Unlock()
		if refuse {
			c.Close()
			continue
		}
		if hung {
			continue // accepted, never answered
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, up)
		p.mu.Unlock()
		go func() { io.Copy(up, c); up.Close() }()
		go func() { io.Copy(c, up); c.Close() }()
	}
}

func (p *TCPProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// SetHung makes the proxy hang (true) or forward again (false); either way
// the open connections are cut.
func (p *TCPProxy) SetHung(h bool) {
	p.mu.Lock()
	p.hung = h
	p.mu.Unlock()
	p.cut()
}

// SetRefusing makes the proxy close every new connection at once (true),
// as a link that is down, or forward again (false); either way the open
// connections are cut.
func (p *TCPProxy) SetRefusing(r bool) {
	p.mu.Lock()
	p.refuse = r
	p.mu.Unlock()
	p.cut()
}

// Addr is the proxy's host:port.
func (p *TCPProxy) Addr() string { return p.ln.Addr().String() }
