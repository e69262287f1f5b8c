package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/modelgate/modelgate/internal/store"
)

// BenchmarkInsertLogs measures the consume-log insert of a group commit on
// SQLite: one transaction of n rows per op (ns/op ÷ n is per log).
//
//	go test ./internal/store -run '^$' -bench InsertLogs -benchmem
func BenchmarkInsertLogs(b *testing.B) {
	ctx := context.Background()
	s, err := store.Open(ctx, store.Options{SQLitePath: filepath.Join(b.TempDir(), "bench.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, n := range []int{1, 7, 50, 200} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			rows := make([]store.Log, n)
			for b.Loop() {
				for i := range rows {
					rows[i] = store.Log{UserID: int64(1 + i%5), Type: 2, Content: "模型倍率 1.00", Username: "bench", TokenName: "k",
						TokenID: 1, ModelName: "gpt-test", Group: "default", Quota: 42, PromptTokens: 9, CompletionTokens: 7,
						ChannelID: 1, RequestID: "req-0123456789abcdef", ElapsedTime: 3}
				}
				if err := s.InsertBatch(ctx, rows); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
