package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/modelgate/modelgate/internal/cluster/replica"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/auth"
	"github.com/modelgate/modelgate/internal/config"
	"github.com/modelgate/modelgate/internal/store"
)

const resetUsage = "usage: modelgate reset-password USERNAME [--stdin]\n" +
	"  sets a new password for USERNAME in the configured database (SQL_DSN / DATA_DIR, as for the server,\n" +
	"  which may be running) and ends that user's sessions; prints \"password: <new password>\"\n" +
	"  --stdin: read the new password (8 to 64 bytes) from the first line of standard input instead"

// runResetPassword is `modelgate reset-password`: the way back in for an
// operator who lost root's password (issue 30 §5). It writes the database
// the server uses; the server reads the user's session version on every
// request, so the user's cookies end at once on every node sharing the
// database. The reset is recorded in the audit trail.
func runResetPassword(ctx context.Context, args []string, getenv func(string) string, in io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("reset-password", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fromStdin := fs.Bool("stdin", false, "read the new password from standard input")
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return fmt.Errorf("reset-password: %v\n%s", err, resetUsage)
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) != 1 || strings.TrimSpace(pos[0]) == "" {
		return fmt.Errorf("reset-password: want one USERNAME\n%s", resetUsage)
	}
	username := pos[0]
	password := rand.Text() // 26 characters of base32: 130 random bits
	if *fromStdin {
		line, err := bufio.NewReader(io.LimitReader(in, 4096)).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("reset-password: read standard input: %w", err)
		}
		password = strings.TrimRight(line, "\r\n")
		if err := auth.ValidatePassword(password); err != nil {
			return errors.New("reset-password: the password must be 8 to 64 bytes")
		}
	}
	cfg, err := config.Load(nil, getenv)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, store.Options{DSN: cfg.SQLDSN, SQLitePath: cfg.SQLitePath, NodeID: cfg.Cluster.NodeID,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer st.Close()
	if cfg.Cluster.Enabled {
		// In a multi-active cluster (the node's CLUSTER_* environment) the
		// change is written with its event in this node's outbox, in the
		// same transaction, as the node itself would write it: ids come
		// from the database's counters, so the event takes the next place
		// in the node's sequence, and the running node's pusher sends it to
		// the peers on its next tick, ending the user's sessions there too.
		replica.New(st).EnableOutbox(replica.OutboxOptions{Logs: cfg.Cluster.SyncLogs, MaxClockSkew: cfg.Cluster.MaxClockSkew})
	}
	u, err := st.UserByUsername(ctx, username)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("reset-password: no user is named %q", username)
	}
	if err != nil {
		return err
	}
	hash, err := auth.HashPasswordCost(password, cfg.PasswordCost)
	if err != nil {
		return err
	}
	// UpdateUser bumps the session version with the password: every cookie
	// issued before stops working.
	if err := st.UpdateUser(ctx, u.ID, store.UserPatch{PasswordHash: &hash}, nil); err != nil {
		return fmt.Errorf("reset-password: %w", err)
	}
	source := "random"
	if *fromStdin {
		source = "stdin"
	}
	detail, _ := json.Marshal(map[string]any{"username": u.Username, "password": "***", "source": source})
	if err := st.InsertAudit(ctx, &store.AuditEntry{CreatedAt: time.Now().Unix(), Username: "(cli)", IP: "local",
		Action: "CLI reset-password", Target: fmt.Sprintf("user:%d", u.ID), Detail: string(detail)}); err != nil {
		return fmt.Errorf("reset-password: the password was changed, but recording it in the audit trail failed: %w", err)
	}
	fmt.Fprintf(out, "password: %s\n", password)
	return nil
}
