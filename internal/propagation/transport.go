package propagation

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/modelgate/modelgate/internal/store"
)

// transport is a push channel: publish sends to every subscriber of the
// channel, this node's included.
type transport interface {
	name() string
	publish(ctx context.Context, payload string) error
	subscribe(ctx context.Context) (subscription, error)
}

// subscription receives what was published after subscribe returned; an
// error from recv means the connection is lost.
type subscription interface {
	recv(ctx context.Context) (string, error)
	close()
}

// pgTransport is PostgreSQL LISTEN/NOTIFY on a channel named after the
// database's config_state instance.
type pgTransport struct {
	st      *store.Store
	channel string
}

func (t *pgTransport) name() string { return "postgres" }

func (t *pgTransport) publish(ctx context.Context, payload string) error {
	return t.st.Notify(ctx, t.channel, payload)
}

func (t *pgTransport) subscribe(ctx context.Context) (subscription, error) {
	l, err := t.st.Listen(ctx, t.channel)
	if err != nil {
		return nil, err
	}
	return pgSubscription{l}, nil
}

type pgSubscription struct{ l *store.Listener }

func (s pgSubscription) recv(ctx context.Context) (string, error) { return s.l.Wait(ctx) }
func (s pgSubscription) close()                                   { s.l.Close() }

// redisTransport is Redis pub/sub.
type redisTransport struct {
	rdb     *redis.Client
	channel string
}

func (t *redisTransport) name() string { return "redis" }

func (t *redisTransport) publish(ctx context.Context, payload string) error {
	return t.rdb.Publish(ctx, t.channel, payload).Err()
}

func (t *redisTransport) subscribe(ctx context.Context) (subscription, error) {
	ps := t.rdb.Subscribe(ctx, t.channel)
	// The first reply confirms the subscription: only then is every later
	// publish sure to be heard.
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := ps.Receive(cctx); err != nil {
		ps.Close()
		return nil, fmt.Errorf("subscribe %s: %w", t.channel, err)
	}
	return &redisSubscription{ps: ps}, nil
}

type redisSubscription struct {
	ps     *redis.PubSub
	pinged bool // a ping is out and no answer came yet
}

// redisPing is how long a subscription waits in silence before it pings,
// so a connection that died without closing is noticed.
const redisPing = 15 * time.Second

func (s *redisSubscription) recv(ctx context.Context) (string, error) {
	for {
		msg, err := s.ps.ReceiveTimeout(ctx, redisPing)
		if err != nil {
			var ne net.Error
			if ctx.Err() != nil || !errors.As(err, &ne) || !ne.Timeout() {
				return "", err
			}
			if s.pinged {
				return "", errors.New("redis subscription: ping not answered")
			}
			if err := s.ps.Ping(ctx); err != nil {
				return "", err
			}
			s.pinged = true
			continue
		}
		switch m := msg.(type) {
		case *redis.Message:
			s.pinged = false
			return m.Payload, nil
		case *redis.Pong:
			s.pinged = false
		}
	}
}

func (s *redisSubscription) close() { s.ps.Close() }
