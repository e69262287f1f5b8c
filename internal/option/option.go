// Package option owns the runtime settings an admin changes through
// /api/option/: their names, types, defaults and validation, and the
// in-memory snapshot readers use. The snapshot is swapped atomically, so a
// request reads one consistent set of values without locks.
package option

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Keys of the known settings.
const (
	RegisterEnabled = "RegisterEnabled"
	NewUserQuota    = "NewUserQuota"
	SystemName      = "SystemName"
)

// Snapshot is one consistent set of settings. It is never modified after it
// is published.
type Snapshot struct {
	RegisterEnabled bool
	NewUserQuota    int64
	SystemName      string
	raw             map[string]string
}

// definition describes one key: its default and how to apply a text value.
type definition struct {
	def   string
	apply func(s *Snapshot, v string) error
}

var definitions = map[string]definition{
	RegisterEnabled: {"true", func(s *Snapshot, v string) error {
		b, err := strconv.ParseBool(v)
		s.RegisterEnabled = b
		return err
	}},
	NewUserQuota: {"0", func(s *Snapshot, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err == nil && n < 0 {
			err = fmt.Errorf("must not be negative")
		}
		s.NewUserQuota = n
		return err
	}},
	SystemName: {"modelgate", func(s *Snapshot, v string) error {
		if len(v) > 64 {
			return fmt.Errorf("at most 64 bytes")
		}
		s.SystemName = v
		return nil
	}},
}

// Hidden reports whether a key must never be returned by the API: keys that
// name a secret or a token.
func Hidden(key string) bool {
	return strings.Contains(key, "Secret") || strings.Contains(key, "Token")
}

// Known reports whether key is a setting this version understands.
func Known(key string) bool {
	_, ok := definitions[key]
	return ok
}

// build makes a snapshot from stored values over the defaults. Stored values
// that no longer parse fall back to the default and are reported.
func build(stored map[string]string) (*Snapshot, []error) {
	s := &Snapshot{raw: map[string]string{}}
	var errs []error
	for k, d := range definitions {
		_ = d.apply(s, d.def)
		s.raw[k] = d.def
	}
	for k, v := range stored {
		d, ok := definitions[k]
		if !ok {
			continue
		}
		if err := d.apply(s, v); err != nil {
			_ = d.apply(s, d.def)
			errs = append(errs, fmt.Errorf("option %s=%q: %w", k, v, err))
			continue
		}
		s.raw[k] = v
	}
	return s, errs
}

// Values returns the visible settings as text, hidden keys left out.
func (s *Snapshot) Values() map[string]string {
	out := make(map[string]string, len(s.raw))
	for k, v := range s.raw {
		if !Hidden(k) {
			out[k] = v
		}
	}
	return out
}

// Store is what the registry needs from persistence.
type Store interface {
	OptionValues(ctx context.Context) (map[string]string, error)
	SetOptions(ctx context.Context, values map[string]string) error
}

// Registry publishes the current snapshot.
type Registry struct {
	store Store
	log   *slog.Logger
	cur   atomic.Pointer[Snapshot]
}

// NewRegistry loads the stored settings.
func NewRegistry(ctx context.Context, st Store, log *slog.Logger) (*Registry, error) {
	r := &Registry{store: st, log: log}
	if err := r.Reload(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// Current returns the snapshot in force.
func (r *Registry) Current() *Snapshot { return r.cur.Load() }

// Reload reads the stored settings again. Nodes that share one database call
// it periodically so a change made on another node is seen.
func (r *Registry) Reload(ctx context.Context) error {
	stored, err := r.store.OptionValues(ctx)
	if err != nil {
		return fmt.Errorf("load options: %w", err)
	}
	s, errs := build(stored)
	for _, e := range errs {
		r.log.Warn("ignoring stored option", "err", e)
	}
	r.cur.Store(s)
	return nil
}

// Set validates and stores one setting, then publishes a new snapshot. An
// unknown key or a value that does not parse changes nothing.
func (r *Registry) Set(ctx context.Context, key, value string) error {
	d, ok := definitions[key]
	if !ok {
		return fmt.Errorf("未知的配置项: %s", key)
	}
	if err := d.apply(&Snapshot{}, value); err != nil {
		return fmt.Errorf("配置项 %s 的值无效: %v", key, err)
	}
	if err := r.store.SetOptions(ctx, map[string]string{key: value}); err != nil {
		return err
	}
	return r.Reload(ctx)
}

// Watch reloads every interval until ctx ends.
func (r *Registry) Watch(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := r.Reload(ctx); err != nil && ctx.Err() == nil {
				r.log.Warn("reload options", "err", err)
			}
		}
	}
}
