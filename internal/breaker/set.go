package breaker

import (
	"cmp"
	"slices"
	"sync"
)

// Key names a breaker: a channel and a model it is asked for.
type Key struct {
	Channel int64
	Model   string
}

// Set holds the breakers of a node. The relay asks it for breakers when
// it rebuilds its routing catalog (Renew) and keeps them in the catalog,
// so a call reaches its breaker without touching the Set's lock.
type Set struct {
	mu sync.Mutex
	m  map[Key]*Breaker
}

// Renew returns the breakers of want, keeping those that existed (their
// state survives a catalog reload), and forgets every other one (a deleted
// or disabled channel, a removed model): a channel that comes back starts
// closed.
func (s *Set) Renew(want []Key) map[Key]*Breaker {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[Key]*Breaker, len(want))
	for _, k := range want {
		b := s.m[k]
		if b == nil {
			b = &Breaker{}
		}
		next[k] = b
	}
	s.m = next
	return next
}

// Get is the breaker of k, or nil.
func (s *Set) Get(k Key) *Breaker {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[k]
}

// Entry is one breaker of a Set with its key.
type Entry struct {
	Key
	*Breaker
}

// List is the breakers of channel (every channel when 0), by channel then
// model.
func (s *Set) List(channel int64) []Entry {
	s.mu.Lock()
	out := make([]Entry, 0, len(s.m))
	for k, b := range s.m {
		if channel == 0 || k.Channel == channel {
			out = append(out, Entry{k, b})
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.Channel, b.Channel), cmp.Compare(a.Model, b.Model))
	})
	return out
}

// View is a breaker's status with its key, for the admin view.
type View struct {
	Key
	Status
}
