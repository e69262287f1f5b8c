package relay

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/modelgate/modelgate/internal/store"
)

// keyEntry is an API key and its owner as the hot path needs them.
type keyEntry struct {
	token store.Token
	user  store.User
	// subs are the user's subscriptions active when the entry was loaded,
	// earliest end first (plans.go); each is checked against its end at
	// the call.
	subs   []subscription
	loaded time.Time
}

// errUnknownKey means no key has that hash.
var errUnknownKey = errors.New("unknown key")

// keyCache keeps API keys and their users in memory so the hot path does no
// database read to authenticate. Entries are dropped as soon as this node
// commits a change to the key or its user (not to their balances, which the
// ledger checks in the database anyway), and expire after ttl so changes
// made by other nodes sharing the database are seen too.
type keyCache struct {
	store *store.Store
	ttl   time.Duration
	now   func() time.Time // the subscriptions' clock

	mu     sync.RWMutex
	gen    uint64 // bumped by every invalidation: a load that raced one is not cached
	byHash map[string]*keyEntry
	byUser map[int64]map[string]struct{}
	byKey  map[int64]string // token id → hash
}

func newKeyCache(st *store.Store, ttl time.Duration, now func() time.Time) *keyCache {
	return &keyCache{store: st, ttl: ttl, now: now, byHash: map[string]*keyEntry{},
		byUser: map[int64]map[string]struct{}{}, byKey: map[int64]string{}}
}

// get returns the key with hash, loading it when absent or expired.
func (c *keyCache) get(ctx context.Context, hash *[64]byte) (*keyEntry, error) {
	c.mu.RLock()
	e := c.byHash[string(hash[:])] // no allocation: the string only looks the map up
	c.mu.RUnlock()
	if e != nil && time.Since(e.loaded) < c.ttl {
		return e, nil
	}
	return c.load(ctx, string(hash[:]))
}

// load reads the key of hash and its user from the database into the cache.
func (c *keyCache) load(ctx context.Context, hash string) (*keyEntry, error) {
	c.mu.RLock()
	gen := c.gen
	c.mu.RUnlock()
	tok, err := c.store.TokenByKeyHash(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errUnknownKey
	}
	if err != nil {
		return nil, err
	}
	u, err := c.store.UserByID(ctx, tok.UserID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errUnknownKey
	}
	if err != nil {
		return nil, err
	}
	subs, err := loadSubscriptions(ctx, c.store, u.ID, c.now())
	if err != nil {
		return nil, err
	}
	e := &keyEntry{token: tok, user: u, subs: subs, loaded: time.Now()}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return e, nil // a change committed while this was read: use it once, don't keep it
	}
	c.byHash[hash] = e
	if c.byUser[u.ID] == nil {
		c.byUser[u.ID] = map[string]struct{}{}
	}
	c.byUser[u.ID][hash] = struct{}{}
	c.byKey[tok.ID] = hash
	return e, nil
}

// changed drops the entries a committed change makes stale. A change of
// a plan or a subscription drops them all: a subscription's row does not
// say whose keys cache it, and such changes are rare next to calls.
func (c *keyCache) changed(changes []store.Change) {
	var stale, plans bool
	for _, ch := range changes {
		if ch.Counters {
			continue
		}
		switch ch.Table {
		case "tokens", "users":
			stale = true
		case "plans", "user_plans":
			plans = true
		}
	}
	if !stale && !plans {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if plans {
		clear(c.byHash)
		clear(c.byUser)
		clear(c.byKey)
		return
	}
	for _, ch := range changes {
		if ch.Counters {
			continue
		}
		switch ch.Table {
		case "tokens":
			if hash, ok := c.byKey[ch.ID]; ok {
				c.dropLocked(hash)
			}
		case "users":
			for hash := range c.byUser[ch.ID] {
				c.dropLocked(hash)
			}
		}
	}
}

// reset drops every entry.
func (c *keyCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.byHash)
	clear(c.byUser)
	clear(c.byKey)
}

func (c *keyCache) dropLocked(hash string) {
	e := c.byHash[hash]
	if e == nil {
		return
	}
	delete(c.byHash, hash)
	delete(c.byKey, e.token.ID)
	if set := c.byUser[e.user.ID]; set != nil {
		delete(set, hash)
		if len(set) == 0 {
			delete(c.byUser, e.user.ID)
		}
	}
}
