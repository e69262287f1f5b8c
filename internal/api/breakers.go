package api

import (
	"net/http"
	"time"

	"github.com/modelgate/modelgate/internal/breaker"
	"github.com/modelgate/modelgate/internal/httpx"
)

// BreakerReader shows the channel circuit breakers of this node (the
// relay's Breakers).
type BreakerReader interface {
	Breakers(channelID int64) (time.Time, []breaker.View)
}

// breakersView is the answer of the breaker routes. Breakers live in each
// node's memory: scope "node" says the states are this node's, as seen
// at now (unix seconds).
type breakersView struct {
	Scope    string        `json:"scope"`
	Now      int64         `json:"now"`
	Breakers []breakerView `json:"breakers"`
}

type breakerView struct {
	ChannelID int64  `json:"channel_id"`
	Model     string `json:"model"`
	// State is closed, open or half_open (its probe in flight).
	State               string `json:"state"`
	WindowCalls         int64  `json:"window_calls"`
	WindowFailures      int64  `json:"window_failures"`
	ConsecutiveFailures int64  `json:"consecutive_failures"`
	OpenedAt            int64  `json:"opened_at"` // 0 when closed
	// ProbeAt is when the probe is due while open: the first call for the
	// model from then on starts it; 0 when closed.
	ProbeAt         int64 `json:"probe_at"`
	CoolDownSeconds int64 `json:"cool_down_seconds"`
	FailedProbes    int64 `json:"failed_probes"`
	Trips           int64 `json:"trips"`
	// CoolingCallers is how many callers (users) its own failures cool
	// down on the channel for the model, the breaker staying closed.
	CoolingCallers int64              `json:"cooling_callers"`
	LastErrors     []breakerEventView `json:"last_errors"`
}

type breakerEventView struct {
	Time    int64  `json:"time"`
	Status  int    `json:"status"` // 0: no answer (connection error, timeout)
	Message string `json:"message"`
	Probe   bool   `json:"probe"`
}

// listBreakers shows the breakers that are not plainly healthy: open, half
// open, or with failures remembered. A fleet has a breaker per channel and
// model, most of them closed and quiet.
func (s *Server) listBreakers(w http.ResponseWriter, r *http.Request) error {
	return s.writeBreakers(w, 0, func(v *breaker.View) bool {
		return v.State != breaker.Closed || len(v.LastErrors) > 0 || v.Failures > 0 || v.CoolingCallers > 0
	})
}

// channelBreakers shows every breaker of one channel (one per model it
// serves; none while it is disabled).
func (s *Server) channelBreakers(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r)
	if err != nil {
		return err
	}
	if _, err := s.channelByID(r, id); err != nil {
		return err
	}
	return s.writeBreakers(w, id, func(*breaker.View) bool { return true })
}

func (s *Server) writeBreakers(w http.ResponseWriter, id int64, keep func(*breaker.View) bool) error {
	out := breakersView{Scope: "node", Breakers: []breakerView{}}
	if s.Breakers == nil {
		out.Now = time.Now().Unix()
		return httpx.OK(w, out)
	}
	now, views := s.Breakers.Breakers(id)
	out.Now = now.Unix()
	for i := range views {
		if keep(&views[i]) {
			out.Breakers = append(out.Breakers, viewBreaker(&views[i]))
		}
	}
	return httpx.OK(w, out)
}

func viewBreaker(v *breaker.View) breakerView {
	b := breakerView{ChannelID: v.Channel, Model: v.Model, State: v.State.String(), WindowCalls: v.Calls,
		WindowFailures: v.Failures, ConsecutiveFailures: v.Consecutive, OpenedAt: unixOrZero(v.OpenedAt),
		ProbeAt: unixOrZero(v.ProbeAt), CoolDownSeconds: int64(v.CoolDown / time.Second), FailedProbes: v.FailedProbes,
		Trips: v.Trips, CoolingCallers: v.CoolingCallers, LastErrors: make([]breakerEventView, 0, len(v.LastErrors))}
	if v.State == breaker.Closed {
		b.ProbeAt = 0
	}
	for _, e := range v.LastErrors {
		b.LastErrors = append(b.LastErrors, breakerEventView{Time: e.Time.Unix(), Status: e.Status, Message: e.Message, Probe: e.Probe})
	}
	return b
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}
