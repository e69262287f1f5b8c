// Package propagation carries configuration changes between the nodes that
// share one database (docs/operations.md, Config propagation): after a
// change commits, its node publishes the config version and the changed
// rows on a push channel (PostgreSQL LISTEN/NOTIFY or Redis pub/sub); every
// other node drops or reloads what it caches of those rows. A poll of the
// config version stays as the fallback: it catches what a lost connection
// or a lost message missed.
package propagation

import (
	"encoding/json"

	"github.com/modelgate/modelgate/internal/store"
)

// message is what travels on the push channel.
type message struct {
	// Origin is the sending process; it skips its own messages (its
	// caches were told at commit).
	Origin  string `json:"o"`
	Version int64  `json:"v"`
	// All asks for a full reload: the changes did not fit a message.
	All     bool     `json:"a,omitempty"`
	Changes []change `json:"c,omitempty"`
}

type change struct {
	Table string `json:"t"`
	Op    string `json:"op"`
	ID    int64  `json:"i,omitempty"`
	Key   string `json:"k,omitempty"`
}

// maxPayload keeps a message under PostgreSQL's NOTIFY limit (8,000 bytes)
// with room to spare; a larger transaction is sent as a full reload.
const maxPayload = 7000

func encode(origin string, c store.ConfigCommit) string {
	m := message{Origin: origin, Version: c.Version, All: c.All}
	if !c.All {
		for _, ch := range c.Changes {
			m.Changes = append(m.Changes, change{Table: ch.Table, Op: ch.Op, ID: ch.ID, Key: ch.Key})
		}
	}
	b, _ := json.Marshal(m)
	if len(b) > maxPayload {
		m.Changes, m.All = nil, true
		b, _ = json.Marshal(m)
	}
	return string(b)
}

func decode(payload string) (message, []store.Change, error) {
	var m message
	if err := json.Unmarshal([]byte(payload), &m); err != nil {
		return message{}, nil, err
	}
	changes := make([]store.Change, len(m.Changes))
	for i, c := range m.Changes {
		changes[i] = store.Change{Table: c.Table, Op: c.Op, ID: c.ID, Key: c.Key}
	}
	return m, changes, nil
}
