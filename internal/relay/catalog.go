package relay

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/modelgate/modelgate/internal/breaker"
	"github.com/modelgate/modelgate/internal/channel"
	"github.com/modelgate/modelgate/internal/pricing"
	"github.com/modelgate/modelgate/internal/relay/dialect"
	"github.com/modelgate/modelgate/internal/store"
)

// upstream is an enabled channel as the relay uses it.
type upstream struct {
	ID      int64
	Type    int
	Name    string
	Key     string   // the whole key text, every key of the pool (for redaction)
	pool    *keyPool // the keys in service (keypool.go)
	BaseURL string
	Other   string            // the type's own setting (Azure's api-version, Vertex's region)
	Mapping map[string]string // requested model → upstream model

	// dialect is how the relay speaks to it, by Type, with the optional
	// capabilities it has (nil when it has not): resolve (dialects.go).
	dialect    dialect.Dialect
	api        dialect.API // the ingress API it speaks natively (dialect.None: none)
	native     dialect.Native
	forward    dialect.HeaderForwarder
	framed     dialect.Framed
	reasoning  dialect.ReasoningLimit
	streamType string // the Content-Type of its streams
	// responsesAPI is its setting responses_api (responsesapi.go).
	responsesAPI string

	models map[string]bool // models it has enabled abilities for, in any group
	// breakers are its circuit breakers by model (the models above); they
	// outlive the snapshot (breaker.Set.Renew), and calls read the map
	// without a lock.
	breakers map[string]*breaker.Breaker
}

// upstreamModel is the model name sent upstream for a requested model.
func (u *upstream) upstreamModel(model string) string {
	if m, ok := u.Mapping[model]; ok {
		return m
	}
	return model
}

// tier is the channels of one priority for a (group, model), with weights.
type tier struct {
	priority int64
	channels []*upstream
	weights  []int64
}

// snapshot is one consistent view of routing and prices. It is replaced
// whole, never modified, so requests read it without locks.
type snapshot struct {
	channels    map[int64]*upstream
	routes      map[string][]tier        // groupModelKey → tiers, highest priority first
	prices      map[string]pricing.Price // enabled prices, tiers decoded
	groupPrices []pricing.GroupPrice
}

func groupModelKey(group, model string) string { return group + "\x00" + model }

// catalog holds the current snapshot and rebuilds it when channels or
// prices change (on this node: at once, after the commit; on other nodes
// sharing the database: within the reload interval).
type catalog struct {
	store    *store.Store
	log      *slog.Logger
	breakers *breaker.Set
	cur      atomic.Pointer[snapshot]
	mu       sync.Mutex // one rebuild at a time
}

func newCatalog(ctx context.Context, st *store.Store, log *slog.Logger, breakers *breaker.Set) (*catalog, error) {
	c := &catalog{store: st, log: log, breakers: breakers}
	if err := c.reload(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *catalog) reload(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	channels, abilities, err := c.store.RoutingData(ctx)
	if err != nil {
		return err
	}
	prices, err := c.store.ModelPrices(ctx)
	if err != nil {
		return err
	}
	groupPrices, err := c.store.GroupPrices(ctx)
	if err != nil {
		return err
	}
	s := &snapshot{
		channels:    make(map[int64]*upstream, len(channels)),
		routes:      map[string][]tier{},
		prices:      make(map[string]pricing.Price, len(prices)),
		groupPrices: store.Discounts(groupPrices),
	}
	for _, ch := range channels {
		mapping, err := channel.ParseModelMapping(ch.ModelMapping)
		if err != nil {
			c.log.Warn("channel has an invalid model mapping; ignoring it", "channel", ch.ID)
		}
		u := &upstream{ID: ch.ID, Type: ch.Type, Name: ch.Name, Key: ch.Key, BaseURL: ch.BaseURL, Other: ch.Other,
			Mapping: mapping, pool: newKeyPool(ch.Key, ch.DisabledKeys), models: map[string]bool{},
			responsesAPI: channel.ResponsesAPIOf(ch.Setting)}
		u.resolve()
		s.channels[ch.ID] = u
	}
	for _, a := range abilities { // ordered by priority, highest first
		u := s.channels[a.ChannelID]
		if u == nil {
			continue
		}
		u.models[a.Model] = true
		key := groupModelKey(a.Group, a.Model)
		tiers := s.routes[key]
		if n := len(tiers); n == 0 || tiers[n-1].priority != a.Priority {
			tiers = append(tiers, tier{priority: a.Priority})
		}
		t := &tiers[len(tiers)-1]
		t.channels = append(t.channels, u)
		t.weights = append(t.weights, a.Weight)
		s.routes[key] = tiers
	}
	for k, b := range c.breakers.Renew(breakerKeys(s.channels)) {
		u := s.channels[k.Channel]
		if u.breakers == nil {
			u.breakers = make(map[string]*breaker.Breaker, len(u.models))
		}
		u.breakers[k.Model] = b
	}
	for _, p := range prices {
		if !p.Enabled {
			continue
		}
		// Decoded here, once per rebuild, so a call reads a ready price. A
		// row whose tiers are invalid leaves its model unpriced (refused)
		// rather than billing long prompts at the base price.
		price, err := p.Price()
		if err != nil {
			c.log.Warn("model price has invalid tiers; the model is unpriced until fixed", "model", p.ModelName, "err", err)
			continue
		}
		s.prices[p.ModelName] = price
	}
	c.cur.Store(s)
	return nil
}

// changed rebuilds the snapshot when a committed change touches what it is
// built from. It runs on the goroutine that committed (an admin request), so
// the admin's next call already routes by the new data; the billing path's
// counter-only changes never trigger it.
func (c *catalog) changed(changes []store.Change) {
	for _, ch := range changes {
		if ch.Counters {
			continue
		}
		if catalogTables[ch.Table] {
			if err := c.reload(context.Background()); err != nil {
				c.log.Error("reload routing catalog", "err", err)
			}
			return
		}
	}
}

// catalogTables are the tables the snapshot is built from.
var catalogTables = map[string]bool{"channels": true, "abilities": true, "model_prices": true, "group_prices": true}

// pick chooses a channel among the tiers, highest priority first and by
// weight within a tier, skipping channels for which skip is true. Weight 0
// is chosen only when no channel of the tier has a positive weight.
func pick(tiers []tier, skip func(*upstream) bool) *upstream {
	for _, t := range tiers {
		var total int64
		var zero []*upstream
		for i, u := range t.channels {
			if skip(u) {
				continue
			}
			total += t.weights[i]
			if t.weights[i] == 0 {
				zero = append(zero, u)
			}
		}
		if total == 0 {
			if len(zero) > 0 {
				return zero[rand.IntN(len(zero))]
			}
			continue
		}
		r := rand.Int64N(total)
		for i, u := range t.channels {
			if skip(u) || t.weights[i] == 0 {
				continue
			}
			if r < t.weights[i] {
				return u
			}
			r -= t.weights[i]
		}
	}
	return nil
}
