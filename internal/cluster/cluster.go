// Package cluster owns the rules of a multi-active cluster that do not
// touch storage or the network: what a valid node record is, how a peer's
// status moves with ping outcomes, how often a failed peer is pinged, and
// which nodes a ping answer teaches (docs/cluster.md). The store keeps the
// node table; internal/cluster/ping talks to peers.
package cluster

import (
	"net/url"
	"strings"

	"github.com/modelgate/modelgate/internal/textfield"
)

// Node id bounds (spec: Limits). 0 is a single-node install; 50 is the id
// stride (internal/store/ids.go), so a cluster has at most 49 nodes.
const (
	MinNodeID = 1
	MaxNodeID = 49
)

// Field limits of a node record.
const (
	MaxNameChars    = 64
	MaxAddressChars = 255
	MaxSecretChars  = 255
)

// Messages of the node rules.
const (
	MsgNodeIDRange    = "node_id 必须是 1 到 49 的整数"
	MsgNameRequired   = "node_name 不能为空"
	MsgAddressInvalid = "address 必须是以 http:// 或 https:// 开头、含主机名的地址,不能含用户信息、查询参数或片段"
	MsgSecretRequired = "secret_key 不能为空"
	labelNodeName     = "节点名称"
	labelNodeAddress  = "节点地址"
	labelNodeSecret   = "节点密钥"
)

// Node is the identity part of a node record: what an admin or a ping
// sender gives.
type Node struct {
	NodeID  int
	Name    string
	Address string
	Secret  string
}

// Normalize trims the name and the address, and drops a trailing slash of
// the address, so one node is written one way. The secret is kept as given:
// it must equal the node's CLUSTER_SECRET byte for byte.
func (n Node) Normalize() Node {
	n.Name = strings.TrimSpace(n.Name)
	n.Address = strings.TrimRight(strings.TrimSpace(n.Address), "/")
	return n
}

// CheckNodeID returns "" for a node id of 1 to 49, else the message.
func CheckNodeID(id int) string {
	if id < MinNodeID || id > MaxNodeID {
		return MsgNodeIDRange
	}
	return ""
}

// CheckName returns "" for a storable, non-empty node name.
func CheckName(name string) string {
	if name == "" {
		return MsgNameRequired
	}
	return textfield.Field{Label: labelNodeName, MaxChars: MaxNameChars}.Validate(name)
}

// CheckAddress returns "" for a base URL a peer can be called at: http or
// https, a host, nothing else but an optional path. User info would put a
// credential in the table and the logs; a query or fragment cannot be
// joined with /api/cluster/ping.
func CheckAddress(addr string) string {
	if msg := (textfield.Field{Label: labelNodeAddress, MaxChars: MaxAddressChars}).Validate(addr); msg != "" {
		return msg
	}
	u, err := url.Parse(addr)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" ||
		u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(addr, "?") || strings.Contains(addr, "#") {
		return MsgAddressInvalid
	}
	return ""
}

// CheckSecret returns "" for a storable secret. required is false for a
// node learned from a peer's list, which has none yet.
func CheckSecret(secret string, required bool) string {
	if secret == "" {
		if required {
			return MsgSecretRequired
		}
		return ""
	}
	return textfield.Field{Label: labelNodeSecret, MaxChars: MaxSecretChars}.Validate(secret)
}

// Check returns "" when n (normalized) is a complete node record, else the
// first problem: node id, name, address, secret.
func (n Node) Check() string {
	for _, msg := range []string{CheckNodeID(n.NodeID), CheckName(n.Name), CheckAddress(n.Address), CheckSecret(n.Secret, true)} {
		if msg != "" {
			return msg
		}
	}
	return ""
}

// Internal endpoints of a node, below its base address.
const (
	PingPath = "/api/cluster/ping"
	SyncPath = "/api/cluster/sync"
)

// PingURL is the ping endpoint of a node at the base address addr.
func PingURL(addr string) string {
	return strings.TrimRight(addr, "/") + PingPath
}

// SyncURL is the sync endpoint of a node's address.
func SyncURL(addr string) string {
	return strings.TrimRight(addr, "/") + SyncPath
}
