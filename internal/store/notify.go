package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNoNotify means the engine has no LISTEN/NOTIFY (only PostgreSQL has).
var ErrNoNotify = errors.New("LISTEN/NOTIFY needs PostgreSQL")

// Notify sends payload on a PostgreSQL NOTIFY channel through the pool. It
// runs after the change committed (never inside its transaction: a NOTIFY
// in a transaction serialises the commits of every notifying transaction).
func (s *Store) Notify(ctx context.Context, channel, payload string) error {
	if s.dialect != Postgres {
		return ErrNoNotify
	}
	return wrap("notify", s.read(ctx).Exec("SELECT pg_notify(?, ?)", channel, payload).Error)
}

// Listener is a PostgreSQL connection of its own that LISTENs on one
// channel. It is not from the pool, so it neither holds a pooled connection
// nor ends with the pool's connection lifetime.
type Listener struct {
	conn *pgx.Conn
}

// Listen opens a connection and LISTENs on channel; notifications sent
// after it returns are delivered to Wait. Close it when done.
func (s *Store) Listen(ctx context.Context, channel string) (*Listener, error) {
	if s.dialect != Postgres {
		return nil, ErrNoNotify
	}
	conn, err := pgx.Connect(ctx, s.pgDSN)
	if err != nil {
		return nil, fmt.Errorf("listen: connect: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("listen %s: %w", channel, err)
	}
	return &Listener{conn: conn}, nil
}

// listenerPing is how long a listener waits in silence before it checks
// its connection: a peer that vanished without closing the TCP connection
// (a failover, a cut network) is noticed within about this much.
const listenerPing = 15 * time.Second

// Wait returns the payload of the next notification; an error means the
// connection is lost or ctx ended.
func (l *Listener) Wait(ctx context.Context) (string, error) {
	for {
		wctx, cancel := context.WithTimeout(ctx, listenerPing)
		n, err := l.conn.WaitForNotification(wctx)
		cancel()
		if err == nil {
			return n.Payload, nil
		}
		if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return "", err
		}
		// Silence: a deadline does not break a pgx connection, so ask the
		// server whether it is still there.
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = l.conn.Ping(pctx)
		cancel()
		if err != nil {
			return "", fmt.Errorf("listener ping: %w", err)
		}
	}
}

// Close closes the listener's connection.
func (l *Listener) Close() error { return l.conn.Close(context.Background()) }
