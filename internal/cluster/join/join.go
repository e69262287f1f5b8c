// Package join pulls a snapshot of a peer's data for a new node joining
// the cluster (docs/cluster.md, Joining a new node): it calls
// POST /api/cluster/snapshot on the peer with the peer's secret, signed
// as this node and carrying the single-use join token root created for
// this node on the peer, and hands the answer out line by line, for
// replica.LoadSnapshot.
package join

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/cluster/peer"
)

// SecretHeader carries the peer's CLUSTER_SECRET, as for ping and sync;
// TokenHeader the join token.
const (
	SecretHeader = peer.SecretHeader
	TokenHeader  = peer.JoinTokenHeader
)

// SnapshotPath is the snapshot endpoint below a node's address.
const SnapshotPath = "/api/cluster/snapshot"

// Timeout bounds a whole pull: a large database takes minutes to stream.
const Timeout = 10 * time.Minute

// MaxLineBytes bounds one line of a snapshot (one row): a peer gone wrong
// cannot fill this node's memory. The largest rows (a log's content, a
// channel's settings) are far below it.
const MaxLineBytes = 16 << 20

// maxFailureBytes bounds the body of a refusal (a JSON envelope).
const maxFailureBytes = 1 << 20

// ContentType is the snapshot's media type: newline-delimited JSON.
const ContentType = "application/x-ndjson"

// SnapshotURL is the snapshot endpoint of a node's address.
func SnapshotURL(addr string) string {
	return strings.TrimRight(addr, "/") + SnapshotPath
}

// PeerError is a failure to get the snapshot from the peer: unreachable,
// refused, or cut off. Its text names the address, never the secret.
type PeerError struct {
	Address string
	Err     error
}

func (e *PeerError) Error() string { return fmt.Sprintf("snapshot from %s: %v", e.Address, e.Err) }
func (e *PeerError) Unwrap() error { return e.Err }

// Stream is a snapshot being pulled. It connects on the first Next, so a
// loader that stops applying pushed batches first gets a snapshot taken
// after that.
type Stream struct {
	ctx    context.Context
	caller peer.Caller
	target peer.Target
	token  string

	body    io.ReadCloser
	scanner *bufio.Scanner
}

// Pull prepares to read the snapshot of the peer target as node self,
// with the join token root created there for self. Close releases it.
func Pull(ctx context.Context, self peer.Self, target peer.Target, token string) *Stream {
	// No client timeout: the caller's ctx bounds the whole stream.
	return &Stream{ctx: ctx, caller: peer.Caller{Client: peer.NewClient(0), Self: self}, target: target, token: token}
}

// Next returns the next line of the snapshot, io.EOF after the last one.
func (s *Stream) Next() ([]byte, error) {
	if s.scanner == nil {
		if err := s.open(); err != nil {
			return nil, &PeerError{Address: s.target.Address, Err: err}
		}
	}
	if s.scanner.Scan() {
		return s.scanner.Bytes(), nil
	}
	if err := s.scanner.Err(); err != nil {
		return nil, &PeerError{Address: s.target.Address, Err: err}
	}
	return nil, io.EOF
}

func (s *Stream) open() error {
	resp, err := s.caller.Post(s.ctx, s.target, SnapshotPath, nil, http.Header{TokenHeader: {s.token}})
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), ContentType) {
		defer resp.Body.Close()
		return refusal(resp)
	}
	s.body = resp.Body
	s.scanner = bufio.NewScanner(resp.Body)
	s.scanner.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	return nil
}

// refusal reads why the peer did not send a snapshot: its /api failure
// message when it answered one.
func refusal(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxFailureBytes))
	var env struct {
		Success bool   `json:"success"`
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &env) == nil && env.Message != "" {
		msg := env.Message
		if len(msg) > 200 {
			msg = msg[:200]
		}
		return fmt.Errorf("refused (HTTP %d): %q", resp.StatusCode, msg)
	}
	return fmt.Errorf("answered HTTP %d without a snapshot", resp.StatusCode)
}

// Close ends the pull.
func (s *Stream) Close() error {
	if s.body == nil {
		return nil
	}
	return s.body.Close()
}

// ErrPeer reports whether err is a failure to get the snapshot from the
// peer.
func ErrPeer(err error) (*PeerError, bool) {
	var pe *PeerError
	ok := errors.As(err, &pe)
	return pe, ok
}
