package app

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/modelgate/modelgate/internal/store"
)

// readyCheckTimeout bounds the database check of one /readyz: a probe
// answers within about this long even when the database hangs.
const readyCheckTimeout = time.Second

// readyCacheFor is how long a database check answers later probes too, so
// a storm of probes costs at most one query a second.
const readyCacheFor = time.Second

// readiness caches the last database check of /readyz.
type readiness struct {
	mu     sync.Mutex // held during a check: concurrent probes share it
	at     time.Time
	reason string // "" when ready
}

// healthz answers 200 while the process serves HTTP: liveness, no database.
func (a *App) healthz(w http.ResponseWriter, _ *http.Request) {
	writeHealth(w, http.StatusOK, `{"status":"ok"}`)
}

// readyz answers 200 when this node should get traffic: the database
// answers within readyCheckTimeout, every migration is applied and no stop
// has begun; otherwise 503 with the reason.
func (a *App) readyz(w http.ResponseWriter, r *http.Request) {
	reason := a.notReady(r.Context())
	if reason != "" {
		writeHealth(w, http.StatusServiceUnavailable, `{"ready":false,"reason":"`+reason+`"}`)
		return
	}
	writeHealth(w, http.StatusOK, `{"ready":true}`)
}

// notReady is "" when ready, else why not: draining, database unreachable
// or migrations pending.
func (a *App) notReady(ctx context.Context) string {
	if a.draining.Load() {
		return "draining"
	}
	rd := &a.ready
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if time.Since(rd.at) < readyCacheFor {
		return rd.reason
	}
	// Not the probe's context: a prober that gives up must not cache a failure.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readyCheckTimeout)
	defer cancel()
	reason := ""
	if err := a.Store.Ready(ctx); err != nil {
		reason = "database unreachable"
		if errors.Is(err, store.ErrMigrationsPending) {
			reason = "migrations pending"
		}
		if rd.reason == "" {
			a.log.Warn("not ready", "reason", reason, "err", err)
		}
	} else if rd.reason != "" && !rd.at.IsZero() {
		a.log.Info("ready again")
	}
	rd.at, rd.reason = time.Now(), reason
	return reason
}

func writeHealth(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write([]byte(body))
}
