package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"gorm.io/gorm"
)

// BenchmarkRollupRebuild times migration 0013's pass over existing consume
// logs on SQLite (200,000 by default; MODELGATE_DASH_BENCH_LOGS sets
// another count): the cost of the first start after the upgrade.
func BenchmarkRollupRebuild(b *testing.B) {
	n := 200_000
	if v := os.Getenv("MODELGATE_DASH_BENCH_LOGS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	s, err := Open(ctx, Options{SQLitePath: filepath.Join(b.TempDir(), "r.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	now := time.Now().Unix()
	rows := make([]Log, 0, 5000)
	for i := 0; i < n; i++ {
		rows = append(rows, Log{UserID: int64(i % 1000), Type: LogConsume, ModelName: fmt.Sprintf("model-%02d", i%20),
			CreatedAt: now - int64(i%(30*86400)), Quota: int64(i % 5000), PromptTokens: 10, CompletionTokens: 20})
		if len(rows) == cap(rows) || i == n-1 {
			if err := s.InsertBatch(ctx, rows); err != nil {
				b.Fatal(err)
			}
			rows = rows[:0]
		}
	}
	for b.Loop() {
		if err := s.db.Transaction(func(tx *gorm.DB) error { return migration0013(tx) }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCubeRebuild times migration 0020's pass over existing consume
// logs on SQLite (200,000 by default; MODELGATE_DASH_BENCH_LOGS sets
// another count), seeded with the bulk loader: the cost of the first start
// after the upgrade.
func BenchmarkCubeRebuild(b *testing.B) {
	n := 200_000
	if v := os.Getenv("MODELGATE_DASH_BENCH_LOGS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	s, err := Open(ctx, Options{SQLitePath: filepath.Join(b.TempDir(), "r.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	start := time.Now().Unix() - 30*86400
	l := s.NewLogLoader()
	rows := make([]Log, 0, 20000)
	for i := 0; i < n; i++ {
		u := i * 7919 % 1000
		m := (u + i%3) % 20
		rows = append(rows, Log{UserID: int64(u + 1), Username: fmt.Sprintf("u%04d", u), TokenName: fmt.Sprint("k", i%2),
			Type: LogConsume, ModelName: fmt.Sprintf("model-%02d", m), ChannelID: int64(1 + (2*m+i%2)%10),
			CreatedAt: start + int64(i)*30*86400/int64(n), Quota: int64(i % 5000), PromptTokens: 10, CompletionTokens: 20})
		if len(rows) == cap(rows) || i == n-1 {
			if err := l.Load(ctx, rows); err != nil {
				b.Fatal(err)
			}
			rows = rows[:0]
		}
	}
	if err := l.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := s.db.Transaction(func(tx *gorm.DB) error { return migration0020(tx) }); err != nil {
			b.Fatal(err)
		}
	}
}
