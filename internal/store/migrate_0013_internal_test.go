package store

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/modelgate/modelgate/internal/store/storetest"
)

// A database at 0011 with logs gets rollups equal to the sums over its
// consume logs, and running the step again (MySQL commits DDL as it goes)
// does not add them twice.
func TestMigration0013RollsUpExistingLogs(t *testing.T) {
	for _, eng := range storetest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			ctx := context.Background()
			opts := Options{DSN: eng.FreshDSN(t), SQLitePath: filepath.Join(t.TempDir(), "m.db")}
			all := migrations
			migrations = slices.DeleteFunc(slices.Clone(all), func(m migration) bool { return m.version == "0013_usage_rollups" })
			s, err := Open(ctx, opts)
			migrations = all
			if err != nil {
				t.Fatal(err)
			}
			const day = 86400
			err = s.db.Exec("INSERT INTO logs (id, user_id, created_at, type, model_name, quota, prompt_tokens, completion_tokens) VALUES " +
				"(1, 7, 100, 2, 'a', 5, 1, 2), (2, 7, 200, 2, 'a', 6, 3, 4), (3, 8, 300, 2, 'b', 7, 5, 6), " +
				"(4, 8, 86400, 2, 'a', 8, 7, 8), (5, 8, 400, 1, 'a', 999, 0, 0), (6, 7, 500, 5, 'a', 0, 0, 0)").Error
			if err != nil {
				t.Fatal(err)
			}
			s.Close()

			s, err = Open(ctx, opts)
			if err != nil {
				t.Fatalf("upgrade: %v", err)
			}
			defer s.Close()
			check := func(when string) {
				t.Helper()
				var models []UsageDayModel
				var users []UsageDayUser
				if err := s.db.Order("day_start, model_name").Find(&models).Error; err != nil {
					t.Fatal(err)
				}
				if err := s.db.Order("day_start, user_id").Find(&users).Error; err != nil {
					t.Fatal(err)
				}
				wantModels := []UsageDayModel{{0, "a", 2, 11, 4, 6}, {0, "b", 1, 7, 5, 6}, {day, "a", 1, 8, 7, 8}}
				wantUsers := []UsageDayUser{{0, 7, 2, 11}, {0, 8, 1, 7}, {day, 8, 1, 8}}
				if !slices.Equal(models, wantModels) || !slices.Equal(users, wantUsers) {
					t.Fatalf("%s: rollups %+v %+v, want %+v %+v", when, models, users, wantModels, wantUsers)
				}
			}
			check("after the upgrade")
			if err := migration0013(s.db); err != nil {
				t.Fatalf("step run again: %v", err)
			}
			check("after the step ran again")
		})
	}
}
