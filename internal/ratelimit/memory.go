package ratelimit

import (
	"sync"
)

// memory enforces limits within this process: one counter per subject,
// each behind its own mutex, found through sharded maps, so calls of
// different keys never wait on each other and a call takes at most two
// short locks (its key's, then its user's: always in that order).
type memory struct {
	keys, users table
}

func newMemory() *memory {
	m := &memory{}
	m.keys.init()
	m.users.init()
	return m
}

const shards = 64

// table maps subject ids to their counters.
type table struct {
	shards [shards]struct {
		mu sync.RWMutex
		m  map[int64]*counter
	}
}

func (t *table) init() {
	for i := range t.shards {
		t.shards[i].m = map[int64]*counter{}
	}
}

// counter is one subject's use. window is the window its requests and
// tokens count in; a call in a later window starts them again.
type counter struct {
	mu                         sync.Mutex
	window                     int64
	requests, tokens, inflight int64
	// dead: sweep removed it from its table; a call that found it just
	// before looks again.
	dead bool
}

// lock returns id's counter locked, one sweep has not removed.
func (t *table) lock(id int64) *counter {
	for {
		c := t.get(id)
		c.mu.Lock()
		if !c.dead {
			return c
		}
		c.mu.Unlock()
	}
}

// get returns id's counter, creating it.
func (t *table) get(id int64) *counter {
	s := &t.shards[uint64(id)%shards]
	s.mu.RLock()
	c := s.m[id]
	s.mu.RUnlock()
	if c != nil {
		return c
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c = s.m[id]; c == nil {
		c = &counter{}
		s.m[id] = c
	}
	return c
}

// roll moves c to window w (c locked).
func (c *counter) roll(w int64) {
	if c.window != w {
		c.window, c.requests, c.tokens = w, 0, 0
	}
}

func (c *counter) counts() Counts {
	if c == nil {
		return Counts{}
	}
	return Counts{Requests: c.requests, Tokens: c.tokens, Inflight: c.inflight}
}

func (c *counter) take(est int64) {
	c.requests++
	c.tokens += est
	c.inflight++
}

// admit checks and counts the call of req (limits already shared out) in
// window w, atomically for its key and its user.
func (m *memory) admit(req *Request, key, user Limits, w int64, t *Ticket) Result {
	var kc, uc *counter
	if !key.IsZero() {
		kc = m.keys.lock(req.KeyID)
		defer kc.mu.Unlock()
		kc.roll(w)
	}
	hasUser := !user.IsZero()
	if hasUser {
		uc = m.users.lock(req.UserID)
		defer uc.mu.Unlock()
		uc.roll(w)
	}
	var r Result
	judge(&r, key, user, kc.counts(), uc.counts(), req.Tokens, hasUser)
	if r.Refused() {
		return r
	}
	t.key, t.user = kc, uc
	if kc != nil {
		kc.take(req.Tokens)
	}
	if uc != nil {
		uc.take(req.Tokens)
	}
	return r
}

// done ends t's call: its slot is freed and, while its window lasts, its
// estimate replaced by the tokens it used.
func (m *memory) done(t *Ticket, used int64) {
	for _, c := range [2]*counter{t.key, t.user} {
		if c == nil {
			continue
		}
		c.mu.Lock()
		c.inflight--
		if c.window == t.window {
			c.tokens = max(c.tokens+used-t.est, 0)
		}
		c.mu.Unlock()
	}
}

// undo takes back the count of an admission that Redis then refused (or
// could not make while the fail mode is closed), as if it never was. Until
// then a call of the same subject on this node saw it counted, which can
// only refuse that call, never admit one too many.
func (m *memory) undo(t *Ticket) {
	for _, c := range [2]*counter{t.key, t.user} {
		if c == nil {
			continue
		}
		c.mu.Lock()
		c.inflight--
		if c.window == t.window {
			c.requests--
			c.tokens = max(c.tokens-t.est, 0)
		}
		c.mu.Unlock()
	}
	t.key, t.user = nil, nil
}

// sweep forgets the counters of subjects idle since before window w: no
// call in flight, nothing counted in w. It returns how many remain.
func (m *memory) sweep(w int64) int {
	n := 0
	for _, t := range [2]*table{&m.keys, &m.users} {
		for i := range t.shards {
			s := &t.shards[i]
			s.mu.Lock()
			for id, c := range s.m {
				c.mu.Lock()
				if c.inflight == 0 && c.window < w {
					c.dead = true
					delete(s.m, id)
				}
				c.mu.Unlock()
			}
			n += len(s.m)
			s.mu.Unlock()
		}
	}
	return n
}

// inflight is the calls in flight counted for a key (or a user).
func (m *memory) inflight(user bool, id int64) int64 {
	t := &m.keys
	if user {
		t = &m.users
	}
	s := &t.shards[uint64(id)%shards]
	s.mu.RLock()
	c := s.m[id]
	s.mu.RUnlock()
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inflight
}
