// Package api serves the /api management surface whose contract is docs/api.md:
// routes.go lists every route; one file per resource holds its handlers and
// their request and response types.
package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/auth"
	"github.com/modelgate/modelgate/internal/captcha"
	"github.com/modelgate/modelgate/internal/channel"
	"github.com/modelgate/modelgate/internal/cluster/owner"
	"github.com/modelgate/modelgate/internal/cluster/replica"
	"github.com/modelgate/modelgate/internal/commerce"
	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/logwriter"
	"github.com/modelgate/modelgate/internal/mail"
	"github.com/modelgate/modelgate/internal/msgtext"
	"github.com/modelgate/modelgate/internal/option"
	"github.com/modelgate/modelgate/internal/order"
	"github.com/modelgate/modelgate/internal/payment"
	"github.com/modelgate/modelgate/internal/ratelimit"
	"github.com/modelgate/modelgate/internal/store"
)

// Deps is what the /api handlers need; app wires it.
type Deps struct {
	Store *store.Store
	// Replica is Store's replication (the outbox, applying batches,
	// snapshots, the digest): the one of the node, whose clock and gate
	// every writer of Store shares.
	Replica  *replica.Replica
	Options  *option.Registry
	Sessions *auth.Sessions
	Throttle auth.Throttle
	// Logs batches log rows off the request path (system logs; the relay's
	// consume logs). Credits write their log in their own transaction.
	Logs *logwriter.Writer[store.Log]
	Log  *slog.Logger
	// RootAccessToken, when set, authenticates as the root user.
	RootAccessToken string
	Version         string
	// PasswordCost is the bcrypt cost of new hashes (0: the default).
	PasswordCost int
	StartTime    time.Time
	// Channels sends test calls through a channel (the relay).
	Channels ChannelTester
	// Breakers shows the channel circuit breakers (the relay); nil shows
	// none.
	Breakers BreakerReader
	// DataDir holds uploaded payment PEM files (DATA_DIR/payment).
	DataDir string
	// Providers are the wallet channels' protocols by method (mobile_a,
	// mobile_b); a method without one answers pay.status warning. Read
	// only after New.
	Providers map[string]payment.Provider
	// Cluster serves the cluster routes; its zero value is cluster mode off.
	Cluster ClusterDeps
	// Balances applies admins' quota edits and keys' remain_quota, on the
	// row's owner node in cluster mode; nil is made over Store and
	// Cluster.Owner.
	Balances *owner.Balances
	// Grants grants parts of the balances this node owns to other nodes
	// (POST /api/cluster/grant); nil refuses every grant call.
	Grants Granter
	// RateLimits reports the rate limiter's state (GET
	// /api/ratelimit/status); nil answers an empty status.
	RateLimits RateLimitStatuser
	// PaymentCallback counts each payment notification: accepted, or
	// rejected for a short reason (metrics); nil counts none.
	PaymentCallback func(method string, accepted bool, reason string)
	// Now is the clock of orders, upgrade pricing and activation, and of
	// mailed codes and account limits (tests move it); nil is time.Now.
	Now func() time.Time
	// ConfigVersion reports the config version this node applied and how
	// changes reach it (GET /api/status); nil reports 0 and "poll".
	ConfigVersion func() (version int64, via string)
	// Limits counts registrations, mailed codes and resets per address
	// and email (accounts_email.go); nil is made over Now.
	Limits *auth.ActionLimiter
	// Mailer is the SMTP sender of account mails; nil sends with the
	// system's roots.
	Mailer func() *mail.Sender
	// Turnstile checks captcha tokens (options TurnstileCheckEnabled,
	// TurnstileSecretKey) at TURNSTILE_VERIFY_URL.
	Turnstile *captcha.Turnstile
	// GitHub are the GitHub hosts of sign-in (empty: github.com).
	GitHub GitHubURLs
}

// RateLimitStatuser reports the rate limiter's counters.
type RateLimitStatuser interface {
	Status() ratelimit.Status
}

// ChannelTester sends a minimal real call through a channel.
type ChannelTester interface {
	TestChannel(ctx context.Context, ch store.Channel, model string) channel.TestResult
}

// Server holds the handlers of /api.
type Server struct {
	Deps
	// Commerce runs the order and payment use-cases the order, top-up,
	// notification and owner routes call.
	Commerce *commerce.Service
	// oidc caches discovered OpenID Connect providers.
	oidc oidcProviders
	// mux serves the audit trail's reads of a target before it changes.
	mux *http.ServeMux
}

// New returns the /api server.
func New(d Deps) *Server {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Limits == nil {
		d.Limits = auth.NewActionLimiter(d.Now)
	}
	if d.Mailer == nil {
		d.Mailer = func() *mail.Sender { return &mail.Sender{} }
	}
	if d.Turnstile == nil {
		d.Turnstile = &captcha.Turnstile{VerifyURL: "https://challenges.cloudflare.com/turnstile/v0/siteverify"}
	}
	if d.Balances == nil {
		d.Balances = owner.NewBalances(d.Store, d.Cluster.Owner)
	}
	auth.DummyHash(d.PasswordCost) // made now, not on the first unknown-user login
	c := &commerce.Service{Store: d.Store, Owner: d.Cluster.Owner, Providers: d.Providers, Log: d.Log,
		Topup:            func() order.Settings { return d.Options.Current().Topup },
		MaxPendingOrders: func() int { return d.Options.Current().MaxPendingOrders },
		InviterReward:    func() int64 { return d.Options.Current().Accounts.QuotaForInviter }, Now: d.Now}
	return &Server{Deps: d, Commerce: c}
}

// hashPassword hashes a new password at the configured cost.
func (s *Server) hashPassword(pw string) (string, error) {
	return auth.HashPasswordCost(pw, s.PasswordCost)
}

// Handler returns the /api routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	s.mux = mux
	s.routes(mux)
	return mux
}

// level is the least role a route needs; levelGuest routes need no login.
type level int

const (
	levelGuest level = 0
	levelUser  level = 1
	levelAdmin level = 10
	levelRoot  level = 100
)

// handle registers h under pattern behind authentication at lvl. The
// internal routes of nodes go through internal instead: below
// internalPrefix only root's own reads and deletes (GET
// /api/cluster/consistency, the failed and parked event lists) may be
// registered here: every internal route is a POST.
func (s *Server) handle(mux *http.ServeMux, pattern string, lvl level, h httpx.HandlerFunc) {
	if strings.Contains(pattern, internalPrefix) && (lvl != levelRoot || strings.HasPrefix(pattern, http.MethodPost+" ")) {
		panic("api: register " + pattern + " with internal: it must check the sending node")
	}
	if audited(pattern, lvl) {
		h = s.recordAudit(pattern, h)
	}
	if lvl > levelGuest {
		h = s.requireRole(lvl, h)
	}
	adapted := httpx.Adapt(s.Log, s.lang, h)
	mux.Handle(pattern, adapted)
	// A collection's route also answers without its trailing slash: the
	// spec and scripts write GET /api/order?p=0, and ServeMux would answer
	// that with a 307 to /api/order/ that curl without -L prints as HTML.
	if bare, ok := strings.CutSuffix(pattern, "/{$}"); ok {
		mux.Handle(bare, adapted)
	}
}

// internalPrefix starts the paths of the routes nodes call on each other.
const internalPrefix = "/api/cluster/"

// internal registers h under pattern, an internal route of nodes, behind
// clusterPeer: no session, the cluster secret and the sender's signature,
// the body read up to limit.
func (s *Server) internal(mux *http.ServeMux, pattern string, access peerAccess, limit int64, h httpx.HandlerFunc) {
	if !strings.Contains(pattern, internalPrefix) {
		panic("api: " + pattern + " is not an internal route")
	}
	mux.Handle(pattern, httpx.Adapt(s.Log, s.lang, s.clusterPeer(access, limit, h)))
}

// lang is the language of messages (option MessageLanguage).
func (s *Server) lang() msgtext.Lang {
	if s.Options == nil {
		return msgtext.Chinese
	}
	return s.Options.Current().MessageLanguage
}

// notFound answers unknown /api paths with the envelope.
func notFound(w http.ResponseWriter, r *http.Request) error {
	return httpx.FailStatus(http.StatusNotFound, httpx.MsgNotFoundPath)
}

// deleteByID serves DELETE …/{id}: parse the id, delete, and answer
// notFound when there was no such row.
func deleteByID(w http.ResponseWriter, r *http.Request, del func(ctx context.Context, id int64) error, notFound string) error {
	id, err := httpx.PathID(r)
	if err != nil {
		return err
	}
	err = del(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return httpx.Fail(notFound)
	}
	if err != nil {
		return err
	}
	return httpx.OKMessage(w, "")
}

// writeViews answers rows as their response views.
func writeViews[T, V any](w http.ResponseWriter, rows []T, view func(*T) V) error {
	views := make([]V, len(rows))
	for i := range rows {
		views[i] = view(&rows[i])
	}
	return httpx.OK(w, views)
}

// setIfSent copies a patch field that the request carried (nil: not sent).
func setIfSent[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}
