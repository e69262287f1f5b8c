package cluster

// IDStride is the id modulus of the cluster: a row created on node k has
// id % IDStride == k (internal/store/ids.go allocates them so).
const IDStride = 50

// LegacyOwner owns the rows with residue 0: those a single install
// created before it turned cluster mode on. Such rows exist only on that
// install (they were written before the outbox, so no event carries them),
// so the rule asks the operator to give that install CLUSTER_NODE_ID 1
// (docs/cluster.md, Credits: owner node). A fixed node, not "whoever holds
// the row", because every node must name the same owner without asking.
const LegacyOwner = 1

// Owner is the node that alone may change the state of, and credit, the
// redemption code or order with id: the node that created it (issue 11
// §4/§5). Two nodes therefore never both redeem one code or both activate
// one order: the others forward to the owner.
func Owner(id int64) int {
	n := int(id % IDStride)
	if n <= 0 {
		return LegacyOwner
	}
	return n
}
