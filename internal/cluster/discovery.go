package cluster

import "time"

// Listed is a node as a peer's ping answer lists it: no secret.
type Listed struct {
	NodeID  int    `json:"node_id"`
	Name    string `json:"node_name"`
	Address string `json:"address"`
}

// Unknown returns the nodes of listed that a node with id self should add
// to its table: valid records (node id, name, address) whose node id is
// neither self nor in known, the first of each node id only. They are
// added without a secret: a node cannot learn another's secret from a
// third (issue 11 §6), so an operator completes them (docs/cluster.md).
func Unknown(self int, known map[int]bool, listed []Listed) []Node {
	var out []Node
	seen := map[int]bool{}
	for _, l := range listed {
		n := Node{NodeID: l.NodeID, Name: l.Name, Address: l.Address}.Normalize()
		if n.NodeID == self || known[n.NodeID] || seen[n.NodeID] {
			continue
		}
		if CheckNodeID(n.NodeID) != "" || CheckName(n.Name) != "" || CheckAddress(n.Address) != "" {
			continue
		}
		seen[n.NodeID] = true
		out = append(out, n)
	}
	return out
}

// PingResult is the outcome of one ping of a peer.
type PingResult struct {
	OK bool
	// RTT is the round trip of the call, answer read included.
	RTT time.Duration
	// Learned is how many nodes of the answer's list were added.
	Learned int
	// Err says why a failed ping failed (never a secret).
	Err string
}
