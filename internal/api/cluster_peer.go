package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/modelgate/modelgate/internal/cluster"
	"github.com/modelgate/modelgate/internal/cluster/peer"
	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/store"
)

// Refusal reasons of internal calls: logged and counted
// (modelgate_cluster_auth_refused_total), never answered; the caller
// always reads 401 MsgClusterSecret.
const (
	refusedSecret         = "secret"
	refusedNoNode         = "no_node"
	refusedBadTimestamp   = "bad_timestamp"
	refusedStaleTimestamp = "stale_timestamp"
	refusedUnknownNode    = "unknown_node"
	refusedDisabledNode   = "disabled_node"
	refusedNoSecret       = "no_secret"
	refusedNoSignature    = "no_signature"
	refusedBadSignature   = "bad_signature"
	refusedSourceMismatch = "source_mismatch"
	refusedJoinToken      = "join_token"
)

// peerAccess says which senders an internal route hears.
type peerAccess int

const (
	// knownPeers: only a sender in the node table, enabled, with a secret,
	// whose signature verifies with that secret.
	knownPeers peerAccess = iota
	// anyPinger: also a sender not in the table, or recorded without a
	// secret (ping only: such a sender can be recorded, awaiting its
	// secret, and changes nothing else). A sender with a secret must
	// still sign.
	anyPinger
)

// sender is who sent an internal call, as clusterPeer found it.
type sender struct {
	NodeID int
	// Node is the sender's record; Known false: none.
	Node  store.ClusterNode
	Known bool
	// Verified: the signature verified with the record's secret.
	Verified bool
}

type senderKey struct{}

// senderOf is the sender clusterPeer let through.
func senderOf(r *http.Request) sender {
	s, _ := r.Context().Value(senderKey{}).(sender)
	return s
}

// clusterPeer wraps every internal route (POST /api/cluster/…): cluster
// mode on, this node's secret in X-Cluster-Secret, and the sender proven
// (docs/cluster.md, Security): X-Cluster-Node names a node of the table,
// enabled and with a secret, X-Cluster-Timestamp is within peer.MaxSkew
// of this node's clock, and X-Cluster-Signature is peer.Sign of the
// timestamp, the path and the body with that node's secret. The body is
// read here, up to limit, and handed to h as it came. Any failure is HTTP
// 401 MsgClusterSecret without detail, logged at WARN with its reason and
// counted.
func (s *Server) clusterPeer(access peerAccess, limit int64, h httpx.HandlerFunc) httpx.HandlerFunc {
	return s.clusterOn(func(w http.ResponseWriter, r *http.Request) error {
		if !s.secretMatches(r.Header.Get(peer.SecretHeader)) {
			return s.refusePeer(r, refusedSecret)
		}
		nodeID, err := strconv.Atoi(r.Header.Get(peer.NodeHeader))
		if err != nil || cluster.CheckNodeID(nodeID) != "" {
			return s.refusePeer(r, refusedNoNode)
		}
		ts, ok := peer.ParseTimestamp(r.Header.Get(peer.TimestampHeader))
		if !ok {
			return s.refusePeer(r, refusedBadTimestamp)
		}
		if !peer.Fresh(ts, s.clusterNow()) {
			return s.refusePeer(r, refusedStaleTimestamp)
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return httpx.TooLarge(limit)
		} else if err != nil {
			return err
		}
		from := sender{NodeID: nodeID}
		from.Node, err = s.Store.ClusterNodeByNodeID(r.Context(), nodeID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			if access != anyPinger {
				return s.refusePeer(r, refusedUnknownNode)
			}
		case err != nil:
			return err
		case from.Node.Disabled:
			return s.refusePeer(r, refusedDisabledNode)
		case from.Node.SecretKey == "" && access != anyPinger:
			return s.refusePeer(r, refusedNoSecret)
		case from.Node.SecretKey == "":
			from.Known = true
		case r.Header.Get(peer.SignatureHeader) == "":
			return s.refusePeer(r, refusedNoSignature)
		case !peer.Verify(from.Node.SecretKey, ts, r.URL.Path, body, r.Header.Get(peer.SignatureHeader)):
			return s.refusePeer(r, refusedBadSignature)
		default:
			from.Known, from.Verified = true, true
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		return h(w, r.WithContext(context.WithValue(r.Context(), senderKey{}, from)))
	})
}

// refusePeer refuses an internal call for reason: logged with the caller's
// claimed node id and address (never a secret or a signature), counted,
// and answered without detail.
func (s *Server) refusePeer(r *http.Request, reason string) error {
	s.Log.Warn("cluster call refused", "path", r.URL.Path, "reason", reason,
		"node_id", r.Header.Get(peer.NodeHeader), "remote", r.RemoteAddr)
	if s.Cluster.AuthRefused != nil {
		s.Cluster.AuthRefused(reason)
	}
	return httpx.FailStatus(http.StatusUnauthorized, MsgClusterSecret)
}

func (s *Server) clusterNow() time.Time {
	if s.Cluster.Now != nil {
		return s.Cluster.Now()
	}
	return time.Now()
}

// secretMatches compares got with CLUSTER_SECRET (and, during a rotation,
// CLUSTER_PREVIOUS_SECRET) in constant time. Both sides are hashed first,
// so neither the length nor a prefix of the secret shows in the time
// taken.
func (s *Server) secretMatches(got string) bool {
	if got == "" || s.Cluster.Self.Secret == "" {
		return false
	}
	g := sha256.Sum256([]byte(got))
	a := sha256.Sum256([]byte(s.Cluster.Self.Secret))
	ok := subtle.ConstantTimeCompare(g[:], a[:])
	if s.Cluster.PreviousSecret != "" {
		b := sha256.Sum256([]byte(s.Cluster.PreviousSecret))
		ok |= subtle.ConstantTimeCompare(g[:], b[:])
	}
	return ok == 1
}
