package app

import (
	"context"
	"errors"

	"github.com/modelgate/modelgate/internal/propagation"
	"github.com/modelgate/modelgate/internal/store"
)

// startPropagation builds the syncer of configuration changes between the
// nodes sharing this database (package propagation) over the caches of
// this node: options, the relay's keys, routes and prices. state is the
// config state read before those caches were first loaded.
func (a *App) startPropagation(state store.ConfigState) {
	a.sync = propagation.New(propagation.Config{
		Store:     a.Store,
		Redis:     a.redis,
		KeyPrefix: a.cfg.RedisKeyPrefix,
		PollEvery: a.cfg.ConfigPollInterval,
		Log:       a.log,
		Targets: propagation.Targets{
			Apply: func(ctx context.Context, changes []store.Change) error {
				var err error
				for _, ch := range changes {
					if ch.Table == "options" {
						err = a.Options.Reload(ctx)
						break
					}
				}
				return errors.Join(err, a.relay.ConfigChanged(ctx, changes))
			},
			ReloadAll: func(ctx context.Context) error {
				return errors.Join(a.Options.Reload(ctx), a.relay.ReloadConfig(ctx))
			},
			Refresh: func(ctx context.Context) error {
				return errors.Join(a.Options.Reload(ctx), a.relay.Reload(ctx))
			},
		},
	}, state)
	a.Store.OnConfigCommit(a.sync.Committed)
}

// ConfigVersion is the config version this node has applied and how
// changes reach it now ("redis", "postgres" or "poll"): GET /api/status.
func (a *App) ConfigVersion() (int64, string) { return a.sync.Version(), a.sync.Mechanism() }
