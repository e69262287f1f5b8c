package app_test

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/store/storetest"
)

// tcpProxy forwards connections to a database server until it hangs: then
// new connections are accepted and never answered, and the open ones are
// cut, as when a database host vanishes from the network.
type tcpProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	hung   bool
	conns  []net.Conn
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go p.serve()
	return p
}

func (p *tcpProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns = append(p.conns, c)
		hung := p.hung
		p.mu.Unlock()
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

func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *tcpProxy) setHung(h bool) {
	p.mu.Lock()
	p.hung = h
	p.mu.Unlock()
	p.cut()
}

// A database that stops answering turns readiness 503 ("database
// unreachable"), each probe answering within about its 1 s timeout, while
// liveness stays 200; when the database is back, so is readiness.
func TestReadyzFailsWhileTheDatabaseIsUnreachable(t *testing.T) {
	for _, eng := range storetest.Engines() {
		if eng.Name == "sqlite" {
			continue
		}
		t.Run(eng.Name, func(t *testing.T) {
			dsn := eng.FreshDSN(t)
			var target string
			var proxied func(addr string) string
			if eng.Name == "postgres" {
				u, err := url.Parse(dsn)
				if err != nil {
					t.Fatal(err)
				}
				target = u.Host
				proxied = func(addr string) string { u.Host = addr; return u.String() }
			} else {
				c, err := mysql.ParseDSN(dsn)
				if err != nil {
					t.Fatal(err)
				}
				target = c.Addr
				proxied = func(addr string) string { c.Addr = addr; return c.FormatDSN() }
			}
			proxy := newTCPProxy(t, target)
			e := apptest.New(t, "SQL_DSN", proxied(proxy.ln.Addr().String()))
			if p := get(t, e.Server.URL, "/readyz"); p.status != 200 {
				t.Fatalf("readyz %+v", p)
			}
			proxy.setHung(true)
			apptest.Eventually(t, "readyz reports the database", func() bool {
				start := time.Now()
				p := get(t, e.Server.URL, "/readyz")
				if d := time.Since(start); d > 2*time.Second {
					t.Fatalf("a probe took %v", d)
				}
				return p.status == 503 && p.Reason == "database unreachable"
			})
			if p := get(t, e.Server.URL, "/healthz"); p.status != 200 {
				t.Fatalf("healthz while the database is away: %+v", p)
			}
			proxy.setHung(false)
			apptest.Eventually(t, "ready again", func() bool { return get(t, e.Server.URL, "/readyz").status == 200 })
		})
	}
}
