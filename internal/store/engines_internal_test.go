package store

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/modelgate/modelgate/internal/store/storetest"
)

// onEachEngine runs f as a subtest per engine (storetest.Engines) on a
// fresh store of it, closed after f.
func onEachEngine(t *testing.T, f func(t *testing.T, ctx context.Context, s *Store)) {
	t.Helper()
	for _, eng := range storetest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			ctx := context.Background()
			s, err := Open(ctx, Options{DSN: eng.FreshDSN(t), SQLitePath: filepath.Join(t.TempDir(), "store.db")})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			f(t, ctx, s)
		})
	}
}
