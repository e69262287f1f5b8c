package store

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/modelgate/modelgate/internal/store/storetest"
)

// openBefore opens a store migrated up to the step before version (the
// migrations list is restored before it returns, also when it fails).
func openBefore(t *testing.T, ctx context.Context, opts Options, version string) (*Store, error) {
	t.Helper()
	i := slices.IndexFunc(migrations, func(m migration) bool { return m.version == version })
	if i < 1 {
		t.Fatalf("no migration %s", version)
	}
	all := migrations
	migrations = all[:i]
	defer func() { migrations = all }()
	return Open(ctx, opts)
}

// A database at 0017 with a key gets the three limit columns: the old key
// reads with no limits (0), so it stays unlimited; running the step again
// (MySQL commits DDL as it goes) changes nothing.
func TestMigration0018AddsKeyLimits(t *testing.T) {
	for _, eng := range storetest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			ctx := context.Background()
			opts := Options{DSN: eng.FreshDSN(t), SQLitePath: filepath.Join(t.TempDir(), "m.db")}
			s, err := openBefore(t, ctx, opts, "0018_token_rate_limits")
			if err != nil {
				t.Fatal(err)
			}
			q := "INSERT INTO tokens (id, user_id, name, key_hash, key_prefix, key_suffix, status, models) VALUES (1, 7, 'old', 'h', 'p', 's', 1, '')"
			if err := s.db.Exec(q).Error; err != nil {
				t.Fatal(err)
			}
			s.Close()

			s, err = Open(ctx, opts)
			if err != nil {
				t.Fatalf("upgrade: %v", err)
			}
			defer s.Close()
			tok, err := s.TokenByKeyHash(ctx, "h")
			if err != nil || tok.RPMLimit != 0 || tok.TPMLimit != 0 || tok.ConcurrencyLimit != 0 || tok.Name != "old" {
				t.Fatalf("old key after the upgrade: %+v, %v", tok, err)
			}
			if err := migration0018(s.db); err != nil {
				t.Fatalf("step run again: %v", err)
			}
		})
	}
}
