package store

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/modelgate/modelgate/internal/store/storetest"
)

// A database at 0006 with logs gets the error-log columns and index: old
// rows read as status 0 with no code or upstream message, and running the
// step again (MySQL commits DDL as it goes) changes nothing.
func TestMigration0007UpgradesExistingLogs(t *testing.T) {
	for _, eng := range storetest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			ctx := context.Background()
			opts := Options{DSN: eng.FreshDSN(t), SQLitePath: filepath.Join(t.TempDir(), "m.db")}
			all := migrations
			migrations = all[:6]
			s, err := Open(ctx, opts)
			migrations = all
			if err != nil {
				t.Fatal(err)
			}
			if err := s.db.Exec("INSERT INTO logs (id, user_id, created_at, type, content, quota) VALUES (1, 7, 100, 2, 'old', 5)").Error; err != nil {
				t.Fatal(err)
			}
			s.Close()

			s, err = Open(ctx, opts)
			if err != nil {
				t.Fatalf("upgrade: %v", err)
			}
			defer s.Close()
			logs, total, err := s.ListLogs(ctx, LogFilter{UserID: 7}, Page{Limit: 10})
			if err != nil || total != 1 || logs[0].Status != 0 || logs[0].ErrorCode != "" || logs[0].UpstreamMessage != "" || logs[0].Quota != 5 {
				t.Fatalf("old row after the upgrade: %+v, %d, %v", logs, total, err)
			}
			if err := migration0007(s.db); err != nil {
				t.Fatalf("step run again: %v", err)
			}
			if !s.db.Migrator().HasIndex(&v7Log{}, "idx_log_type_time") {
				t.Fatal("no (type, created_at) index")
			}
		})
	}
}
