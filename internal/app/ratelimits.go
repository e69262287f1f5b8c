package app

import (
	"context"
	"strconv"
	"time"

	"github.com/modelgate/modelgate/internal/ratelimit"
	"github.com/redis/go-redis/v9"
)

// The rate limits of keys and groups (docs/decisions/rate-limits.md).

// clusterNodesEvery is how often a cluster node recounts the enabled
// nodes that share each limit out.
const clusterNodesEvery = 2 * time.Second

// newLimiter counts in Redis when REDIS_CONN_STRING is set (nodes sharing
// a database share the counters), else in memory. A multi-active cluster
// node enforces its share of each limit: its Redis keys carry its node id,
// so nodes that happen to share one Redis do not count each other's calls
// against their shares.
func (a *App) newLimiter() *ratelimit.Limiter {
	cfg := ratelimit.Config{Log: a.log}
	if a.redis != nil {
		// A client of its own that fails fast: a call waits on Redis at
		// most about half a second, and a failure is not retried (the
		// fail mode decides, and the next probe comes a second later).
		a.limitRedis = redis.NewClient(ratelimit.ClientOptions(a.redis.Options()))
		cfg.Redis = a.limitRedis
		cfg.Prefix = a.cfg.RedisKeyPrefix
		if a.cfg.Cluster.Enabled {
			cfg.Prefix += "n" + strconv.Itoa(a.cfg.Cluster.NodeID) + ":"
		}
	}
	return ratelimit.New(cfg)
}

// countClusterNodes sets how many nodes share each limit out: this one and
// every enabled peer in its node table with a secret, reachable or not (a
// peer that is down does not give its share to the others: the sum stays
// bounded). A record awaiting its secret does not count: anyone holding
// this node's secret can make one by a ping, and it must change nothing
// (docs/cluster.md, Security).
func (a *App) countClusterNodes(ctx context.Context) error {
	nodes, err := a.Store.AllClusterNodes(ctx)
	if err != nil {
		return err
	}
	n := 1
	for _, node := range nodes {
		if node.NodeID != a.cfg.Cluster.NodeID && !node.Disabled && node.SecretKey != "" {
			n++
		}
	}
	a.limits.SetNodes(n)
	return nil
}

// RateLimitStatus is the limiter's state for admins.
func (a *App) RateLimitStatus() ratelimit.Status { return a.limits.Status() }
