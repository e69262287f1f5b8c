package app

import (
	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/cluster"
	"github.com/modelgate/modelgate/internal/cluster/ping"
)

// self is this node as the cluster knows it (CLUSTER_* variables).
func (a *App) self() cluster.Node {
	c := a.cfg.Cluster
	return cluster.Node{NodeID: c.NodeID, Name: c.NodeName, Address: c.NodeAddress, Secret: c.Secret}.Normalize()
}

// clusterPinger is the heartbeat of cluster mode; nil when it is off.
func (a *App) clusterPinger() *ping.Pinger {
	if !a.cfg.Cluster.Enabled {
		return nil
	}
	return ping.New(a.Store, ping.Config{Self: a.self(), Interval: a.cfg.Cluster.PingInterval,
		MaxFailures: a.cfg.Cluster.MaxPingFailures, Log: a.log})
}

// clusterDeps are the cluster routes' needs; the zero value (cluster mode
// off) makes them answer "cluster mode is off".
func (a *App) clusterDeps(p *ping.Pinger) api.ClusterDeps {
	if p == nil {
		return api.ClusterDeps{}
	}
	return api.ClusterDeps{Enabled: true, Self: a.self(), Pinger: p}
}
