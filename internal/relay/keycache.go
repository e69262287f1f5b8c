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
	token  store.Token
	user   store.User
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

	mu     sync.RWMutex
	gen    uint64 // bumped by every invalidation: a load that raced one is not cached
	byHash map[string]*keyEntry
	byUser map[int64]map[string]struct{}
	byKey  map[int64]string // token id → hash
}

func newKeyCache(st *store.Store, ttl time.Duration) *keyCache {
	return &keyCache{store: st, ttl: ttl, byHash: map[string]*keyEntry{},
		byUser: map[int64]map[string]struct{}{}, byKey: map[int64]string{}}
}

// get returns the key with hash, loading it when absent or expired.
func (c *keyCache) get(ctx context.Context, hash string) (*keyEntry, error) {
	c.mu.RLock()
	e := c.byHash[hash]
	c.mu.RUnlock()
	if e != nil && time.Since(e.loaded) < c.ttl {
		return e, nil
	}
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
	e = &keyEntry{token: tok, user: u, loaded: time.Now()}
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

// changed drops the entries a committed change makes stale.
func (c *keyCache) changed(changes []store.Change) {
	var stale bool
	for _, ch := range changes {
		if !ch.Counters && (ch.Table == "tokens" || ch.Table == "users") {
			stale = true
			break
		}
	}
	if !stale {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
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
