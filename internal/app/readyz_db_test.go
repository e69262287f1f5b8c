package app_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/store/storetest"
)

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
			proxy := apptest.NewTCPProxy(t, target)
			e := apptest.New(t, "SQL_DSN", proxied(proxy.Addr()))
			if p := get(t, e.Server.URL, "/readyz"); p.status != 200 {
				t.Fatalf("readyz %+v", p)
			}
			proxy.SetHung(true)
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
			proxy.SetHung(false)
			apptest.Eventually(t, "ready again", func() bool { return get(t, e.Server.URL, "/readyz").status == 200 })
		})
	}
}
