package relay

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/modelgate/modelgate/internal/channel"
)

// Key pools (docs/decisions/channels.md, "Key pools"): a channel's key
// text may hold several keys. Calls take them in turn, skipping a key in
// cool-down (after a 429) and, within one call, a key the upstream just
// refused; a key refused for good is retired alone (store.RetireChannelKey)
// and the call tries the channel's next key.

// keyPool is the keys of an enabled channel in service, as of the
// snapshot, and the turn counter its calls share.
type keyPool struct {
	keys []channel.PoolKey
	turn atomic.Uint64
}

// newKeyPool is the pool of a channel's stored key text and retired list.
// A channel enabled with no key in service (an admin's edit raced a
// retirement) uses all its keys rather than none; a channel without a key
// has one empty key, as before pools.
func newKeyPool(text, disabled string) *keyPool {
	all := channel.Pool(text, disabled)
	p := &keyPool{}
	for _, k := range all {
		if k.Disabled == nil {
			p.keys = append(p.keys, k)
		}
	}
	if len(p.keys) == 0 {
		p.keys = all
	}
	if len(p.keys) == 0 {
		p.keys = []channel.PoolKey{{ID: channel.KeyID("")}}
	}
	for i := range p.keys {
		p.keys[i].Disabled = nil
	}
	return p
}

// coolKey names one key of one channel for the cool-down map.
type coolKey struct {
	channel int64
	key     string // channel.KeyID
}

// nextKey is the key of channel u the next request of the call uses: the
// next in turn not spent by this call (refused in it) and not cooling
// down; failing that, the next not spent (a pinned channel is called even
// while cooling down). ok is false when the call has spent every key.
func (rl *Relay) nextKey(u *upstream, spent map[string]bool) (channel.PoolKey, bool) {
	keys := u.pool.keys
	if len(keys) == 1 { // the common case: no counter, no map
		return keys[0], !spent[keys[0].ID]
	}
	start := int(u.pool.turn.Add(1)-1) % len(keys)
	fallback := -1
	for i := range keys {
		k := keys[(start+i)%len(keys)]
		if spent[k.ID] {
			continue
		}
		if !rl.keyCooling(u.ID, k.ID) {
			return k, true
		}
		if fallback < 0 {
			fallback = (start + i) % len(keys)
		}
	}
	if fallback < 0 {
		return channel.PoolKey{}, false
	}
	return keys[fallback], true
}

// keysLeft reports whether channel u has a key this call has not spent.
func keysLeft(u *upstream, spent map[string]bool) bool {
	for _, k := range u.pool.keys {
		if !spent[k.ID] {
			return true
		}
	}
	return false
}

// keyFor is the key of channel u for the call's current attempt, chosen
// at its first request to u.
func (c *call) keyFor(u *upstream) string {
	if c.credFor != u {
		k, ok := c.rl.nextKey(u, c.spent)
		if !ok { // every key spent: forward does not choose u then
			k = u.pool.keys[0]
		}
		c.cred, c.credFor = k, u
	}
	return c.cred.Key
}

// coolDown skips key of channel id for the configured time (after a 429).
func (rl *Relay) coolDown(id int64, key string) {
	d := rl.Options.Current().ChannelCooldown
	if d <= 0 {
		return
	}
	rl.cooldownMu.Lock()
	rl.cooldown[coolKey{id, key}] = time.Now().Add(d)
	rl.cooldownMu.Unlock()
}

func (rl *Relay) keyCooling(id int64, key string) bool {
	rl.cooldownMu.Lock()
	defer rl.cooldownMu.Unlock()
	until, ok := rl.cooldown[coolKey{id, key}]
	if ok && time.Now().After(until) {
		delete(rl.cooldown, coolKey{id, key})
		return false
	}
	return ok
}

// coolingDown reports whether every key of channel u is cooling down: the
// channel is then skipped.
func (rl *Relay) coolingDown(u *upstream) bool {
	for _, k := range u.pool.keys {
		if !rl.keyCooling(u.ID, k.ID) {
			return false
		}
	}
	return true
}

// retireKey takes key k of channel id out of service because the upstream
// refused it, with detail, the upstream's refusal, as its reason; the
// channel goes out with its last key (store.RetireChannelKey).
func (rl *Relay) retireKey(ctx context.Context, id int64, k channel.PoolKey, status int, detail string) {
	reason := channel.CleanLastError(detail) // the detail is cut by bytes: maybe inside a character
	out, err := rl.Store.RetireChannelKey(ctx, id, k.ID, reason)
	switch {
	case err != nil:
		rl.Log.Error("retire channel key", "channel", id, "key_index", k.Index, "err", err)
	case out:
		rl.Log.Warn("channel disabled automatically: upstream refused its key", "channel", id, "key_index", k.Index, "status", status)
	default:
		rl.Log.Warn("channel key retired: upstream refused it", "channel", id, "key_index", k.Index, "status", status)
	}
}
