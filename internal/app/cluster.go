package app

import (
	"context"
	"time"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/billing"
	"github.com/modelgate/modelgate/internal/cluster"
	"github.com/modelgate/modelgate/internal/cluster/owner"
	"github.com/modelgate/modelgate/internal/cluster/peer"
	"github.com/modelgate/modelgate/internal/cluster/ping"
	"github.com/modelgate/modelgate/internal/cluster/replica"
	"github.com/modelgate/modelgate/internal/cluster/replicate"
	"github.com/modelgate/modelgate/internal/store"
)

// self is this node as the cluster knows it (CLUSTER_* variables).
func (a *App) self() cluster.Node {
	c := a.cfg.Cluster
	return cluster.Node{NodeID: c.NodeID, Name: c.NodeName, Address: c.NodeAddress, Secret: c.Secret}.Normalize()
}

// peerSelf is this node as it signs its calls to peers.
func (a *App) peerSelf() peer.Self {
	c := a.cfg.Cluster
	return peer.Self{NodeID: c.NodeID, Secret: c.Secret, PreviousSecret: c.PreviousSecret}
}

// clusterPinger is the heartbeat of cluster mode; nil when it is off.
func (a *App) clusterPinger() *ping.Pinger {
	if !a.cfg.Cluster.Enabled {
		return nil
	}
	return ping.New(a.Store, ping.Config{Self: a.self(), PreviousSecret: a.cfg.Cluster.PreviousSecret, Interval: a.cfg.Cluster.PingInterval,
		MaxFailures: a.cfg.Cluster.MaxPingFailures, Log: a.log})
}

// clusterDeps are the cluster routes' needs; the zero value (cluster mode
// off) makes them answer "cluster mode is off".
func (a *App) clusterDeps(p *ping.Pinger) api.ClusterDeps {
	if p == nil {
		return api.ClusterDeps{}
	}
	return api.ClusterDeps{Enabled: true, Self: a.self(), Pinger: p, BatchSize: a.cfg.Cluster.BatchSize,
		MaxClockSkew: a.cfg.Cluster.MaxClockSkew, PreviousSecret: a.cfg.Cluster.PreviousSecret, Owner: a.owners,
		AuthRefused: a.countClusterAuthRefused}
}

// ownerRouter finds the owner node of a row; nil when cluster mode is off.
func (a *App) ownerRouter() *owner.Router {
	if !a.cfg.Cluster.Enabled {
		return nil
	}
	return owner.New(a.peerSelf(), a.Store)
}

// grantSource is where the ledger asks for grants of balances other nodes
// own: their owners in cluster mode, none otherwise.
func (a *App) grantSource() billing.GrantSource {
	if a.owners == nil {
		return nil
	}
	return a.owners
}

// startReplication turns the outbox on and builds the pusher
// (docs/cluster.md, Replication). Options changed by a peer are read again
// at once; the other caches listen to the store themselves.
func (a *App) startReplication() {
	c := a.cfg.Cluster
	a.Replica.EnableOutbox(replica.OutboxOptions{Logs: c.SyncLogs, MaxClockSkew: c.MaxClockSkew})
	a.pusher = replicate.New(a.Store, a.Replica, replicate.Config{Self: a.self(), PreviousSecret: c.PreviousSecret, Interval: c.PushInterval, BatchSize: c.BatchSize, Log: a.log})
	a.Store.OnCommit(a.pusher.Changed)
	a.Store.OnCommit(func(changes []store.Change) {
		for _, ch := range changes {
			if ch.Remote && ch.Table == "options" {
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					if err := a.Options.Reload(ctx); err != nil {
						a.log.Warn("reload options a peer changed", "err", err)
					}
				}()
				return
			}
		}
	})
}
