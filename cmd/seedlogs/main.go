// Command seedlogs fills a modelgate database with consume logs for the
// benchmarks over large logs (docs/performance.md, "Dashboards over 10M
// logs"): users seed-00000… (password "seed-password") and their consume
// logs spread evenly over the last -days UTC days, written in bulk
// (store.LogLoader: multi-row INSERTs, rollups summed in memory and added
// per day). It runs the migrations first, so it may be pointed at an empty
// database. It is not for live gateways: it writes no cluster events.
//
// Usage:
//
//	go run ./cmd/seedlogs -sqlite /tmp/seed/modelgate.db            # 10,000,000 logs
//	go run ./cmd/seedlogs -dsn 'postgres://…' -logs 1000000
//	go run ./cmd/seedlogs -sqlite /tmp/seed/modelgate.db -logs 1000000 -node 1 -digest
//
// -node gives the rows a cluster node's ids (residue -node), as a cluster
// node writes them; -digest then times the cluster consistency check's
// digest of this database (replica.Digest, docs/cluster.md), three times.
// With -logs 0 and -users 0 it only times the digest of what is there.
//
// Each user uses -user-models of the -models models (user u: models u, u+1,
// … mod -models), each model is served by two of the -channels channels,
// one user in five is in group "vip", and each has two keys: the shape of
// a real gateway's usage, where rollup rows grow with the (user, model,
// channel) pairs in use, not with the logs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"time"

	"github.com/modelgate/modelgate/internal/auth"
	"github.com/modelgate/modelgate/internal/cluster/replica"
	"github.com/modelgate/modelgate/internal/store"
)

func main() {
	var (
		sqlite     = flag.String("sqlite", "", "SQLite database file (created when missing)")
		dsn        = flag.String("dsn", "", "PostgreSQL or MySQL DSN instead of -sqlite")
		logs       = flag.Int("logs", 10_000_000, "consume logs to write")
		days       = flag.Int("days", 30, "the logs spread over this many days before -end")
		users      = flag.Int("users", 1000, "users")
		models     = flag.Int("models", 20, "models")
		userModels = flag.Int("user-models", 3, "models each user calls")
		channels   = flag.Int("channels", 10, "channels")
		batch      = flag.Int("batch", 20000, "logs per transaction")
		end        = flag.Int64("end", time.Now().Unix(), "Unix time of the newest log")
		seed       = flag.Uint64("seed", 1, "random seed")
		node       = flag.Int("node", 0, "cluster node id of the rows' ids (0: a single node)")
		digest     = flag.Bool("digest", false, "time the consistency digest afterwards")
	)
	flag.Parse()
	if (*sqlite == "") == (*dsn == "") {
		fmt.Fprintln(os.Stderr, "seedlogs: give -sqlite FILE or -dsn DSN")
		os.Exit(2)
	}
	if err := run(*sqlite, *dsn, *node, *digest, *logs, *days, *users, *models, *userModels, *channels, *batch, *end, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "seedlogs:", err)
		os.Exit(1)
	}
}

func run(sqlite, dsn string, node int, digest bool, n, days, users, models, userModels, channels, batch int, end int64, seed uint64) error {
	ctx := context.Background()
	start := time.Now()
	st, err := store.Open(ctx, store.Options{DSN: dsn, SQLitePath: sqlite, NodeID: node,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return err
	}
	defer st.Close()
	hash, err := auth.HashPasswordCost("seed-password", 4)
	if err != nil {
		return err
	}
	ids := make([]int64, users)
	names := make([]string, users)
	for i := 0; i < users; i += 1000 {
		err := st.InTx(ctx, func(tx *store.Tx) error {
			for u := i; u < min(i+1000, users); u++ {
				names[u] = fmt.Sprintf("seed-%05d", u)
				usr := store.User{Username: names[u], PasswordHash: hash, AffCode: fmt.Sprintf("seed%05d", u),
					Group: "default", Quota: 1 << 40, CreatedAt: end - int64(days)*86400}
				if u%5 == 0 {
					usr.Group = "vip"
				}
				if err := tx.CreateUser(&usr); err != nil {
					return err
				}
				ids[u] = usr.ID
			}
			return nil
		})
		if errors.Is(err, store.ErrDuplicate) {
			return fmt.Errorf("users seed-… exist already: seed an empty database (%w)", err)
		}
		if err != nil {
			return err
		}
	}
	fmt.Printf("created %d users in %s\n", users, time.Since(start).Round(time.Millisecond))

	rng := rand.New(rand.NewPCG(seed, 14))
	loader := st.NewLogLoader()
	first := end - int64(days)*86400 + 1
	span := end - first + 1
	rows := make([]store.Log, 0, batch)
	t0, last := time.Now(), time.Now()
	for i := range n {
		u := rng.IntN(users)
		m := (u + rng.IntN(userModels)) % models
		group := "default"
		if u%5 == 0 {
			group = "vip"
		}
		prompt, completion := rng.Int64N(4000), rng.Int64N(1500)
		rows = append(rows, store.Log{
			UserID: ids[u], Username: names[u], Type: store.LogConsume,
			CreatedAt: first + int64(float64(i)/float64(n)*float64(span)),
			ModelName: fmt.Sprintf("model-%02d", m), ChannelID: int64(1 + (2*m+rng.IntN(2))%channels),
			Group: group, TokenName: fmt.Sprintf("key-%d", rng.IntN(2)), TokenID: int64(u*2 + 1),
			Quota: prompt*2 + completion*8, PromptTokens: prompt, CompletionTokens: completion,
			RequestID: fmt.Sprintf("seed-%d", i), ElapsedTime: rng.Int64N(5000), IsStream: i%2 == 0,
		})
		if len(rows) == batch || i == n-1 {
			if err := loader.Load(ctx, rows); err != nil {
				return err
			}
			rows = rows[:0]
			if time.Since(last) > 10*time.Second {
				last = time.Now()
				fmt.Printf("%d logs, %.0f logs/s\n", i+1, float64(i+1)/time.Since(t0).Seconds())
			}
		}
	}
	if err := loader.Flush(ctx); err != nil {
		return err
	}
	el := time.Since(t0)
	fmt.Printf("wrote %d consume logs in %s (%.0f logs/s); %s in all\n", n, el.Round(time.Millisecond),
		float64(n)/el.Seconds(), time.Since(start).Round(time.Millisecond))
	if digest {
		return timeDigest(ctx, st)
	}
	return nil
}

// timeDigest computes the consistency digest three times (logs included,
// as with CLUSTER_SYNC_LOGS on) and prints each time and the tables.
func timeDigest(ctx context.Context, st *store.Store) error {
	rep := replica.New(st)
	rep.EnableOutbox(replica.OutboxOptions{Logs: true})
	for i := range 3 {
		t0 := time.Now()
		d, err := rep.Digest(ctx)
		if err != nil {
			return err
		}
		fmt.Printf("digest %d: %s\n", i+1, time.Since(t0).Round(time.Millisecond))
		if i == 2 {
			for _, t := range d.Tables {
				fmt.Printf("  %-14s %9d rows  %s\n", t.Table, t.Rows, t.Hash)
			}
		}
	}
	return nil
}
