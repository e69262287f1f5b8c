package main

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// outboxState is one node's replication state read from its database.
type outboxState struct {
	lastID  int64
	cursors map[int]int64 // peer → last event it acknowledged
	parked  int64         // deltas waiting for their row
}

func readOutbox(db *sql.DB) (outboxState, error) {
	s := outboxState{cursors: map[int]int64{}}
	if err := db.QueryRow("SELECT COALESCE(MAX(id), 0) FROM cluster_events").Scan(&s.lastID); err != nil {
		return s, fmt.Errorf("read cluster_events: %w", err)
	}
	if err := db.QueryRow("SELECT COUNT(*) FROM cluster_parked").Scan(&s.parked); err != nil {
		return s, fmt.Errorf("read cluster_parked: %w", err)
	}
	rows, err := db.Query("SELECT node_id, event_id FROM cluster_cursors")
	if err != nil {
		return s, fmt.Errorf("read cluster_cursors: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var n int
		var id int64
		if err := rows.Scan(&n, &id); err != nil {
			return s, err
		}
		s.cursors[n] = id
	}
	return s, rows.Err()
}

// unacked counts, over every node and peer, the events the peer has not
// acknowledged.
func unacked(nodes []*node) (int64, error) {
	var total int64
	for _, n := range nodes {
		db, err := openDB(n.dbPath())
		if err != nil {
			return 0, err
		}
		s, err := readOutbox(db)
		if err == nil {
			for _, peer := range nodes {
				if peer == n {
					continue
				}
				var c int64
				err = db.QueryRow("SELECT COUNT(*) FROM cluster_events WHERE id > ?", s.cursors[peer.id]).Scan(&c)
				total += c
				if err != nil {
					break
				}
			}
		}
		db.Close()
		if err != nil {
			return 0, fmt.Errorf("node %d: %w", n.id, err)
		}
	}
	return total, nil
}

// Quiescence: after the load, wait at least settleMin (the nodes' log
// writers flush their queues), then until no event is unacknowledged on two
// checks in a row, for at most settleMax.
const (
	settleMin   = 2 * time.Second
	settleCheck = 500 * time.Millisecond
	settleMax   = 90 * time.Second
)

// quiesce waits until every event of every node is acknowledged by both
// peers, and returns how long that took and the events still
// unacknowledged (0 when it settled).
func quiesce(ctx context.Context, nodes []*node) (time.Duration, int64, error) {
	start := time.Now()
	time.Sleep(settleMin)
	quiet := 0
	var left int64
	for time.Since(start) < settleMax && ctx.Err() == nil {
		var err error
		if left, err = unacked(nodes); err != nil {
			return time.Since(start), left, err
		}
		if left == 0 {
			quiet++
			if quiet == 2 {
				return time.Since(start), 0, nil
			}
		} else {
			quiet = 0
		}
		time.Sleep(settleCheck)
	}
	return time.Since(start), left, ctx.Err()
}

// eventCounts counts each node's outbox events above from[node] created
// at or before until (unix seconds): the events the load made.
func eventCounts(nodes []*node, from map[int]int64, until int64) (map[int]int64, error) {
	out := map[int]int64{}
	for _, n := range nodes {
		db, err := openDB(n.dbPath())
		if err != nil {
			return nil, err
		}
		var c int64
		err = db.QueryRow("SELECT COUNT(*) FROM cluster_events WHERE id > ? AND created_at <= ?", from[n.id], until).Scan(&c)
		db.Close()
		if err != nil {
			return nil, fmt.Errorf("node %d: count events: %w", n.id, err)
		}
		out[n.id] = c
	}
	return out, nil
}

// lastEventIDs reads each node's newest outbox event id.
func lastEventIDs(nodes []*node) (map[int]int64, error) {
	out := map[int]int64{}
	for _, n := range nodes {
		db, err := openDB(n.dbPath())
		if err != nil {
			return nil, err
		}
		s, err := readOutbox(db)
		db.Close()
		if err != nil {
			return nil, fmt.Errorf("node %d: %w", n.id, err)
		}
		out[n.id] = s.lastID
	}
	return out, nil
}
