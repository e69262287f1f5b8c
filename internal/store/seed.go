package store

import (
	"context"
	"fmt"
	"strings"
)

// LogLoader writes consume logs in bulk for the seed generator
// (cmd/seedlogs) and the benchmarks over millions of logs: one transaction
// per Load, ids allocated in one step, multi-row INSERTs of the columns a
// consume log uses, and the usage rollups (0013's and 0020's) summed in
// memory and added as whole buckets. It records no outbox change: it is not
// a way to write logs on a live gateway, whose logs go through InsertLogs.
//
// The rollups of a day are written when a later day's log arrives (Load
// wants logs in time order across calls, so memory holds one day's sums)
// and at Flush; until Flush returns, the rollups lag the logs.
type LogLoader struct {
	s     *Store
	cubes *cubeSet
	r     *rollup
	day   int64 // the day whose sums are held; -1: none yet
}

// NewLogLoader is a loader writing into s.
func (s *Store) NewLogLoader() *LogLoader {
	return &LogLoader{s: s, cubes: newCubeSet(usageCubes), r: newRollup(), day: -1}
}

// loadCols are the columns Load writes; the others keep their defaults.
var loadCols = []string{"id", "user_id", "created_at", "type", "username", "token_name", "token_id", "model_name",
	"log_group", "quota", "prompt_tokens", "completion_tokens", "channel_id", "request_id", "elapsed_time", "is_stream"}

// maxLoadParams bounds one INSERT's parameters: under SQLite's 32,766.
const maxLoadParams = 32000

// Load inserts rows (CreatedAt set, ascending across calls) in one
// transaction and sets their ids.
func (l *LogLoader) Load(ctx context.Context, rows []Log) error {
	if len(rows) == 0 {
		return nil
	}
	return l.s.write(ctx, "load logs", func(tx *Tx) error {
		first, err := tx.allocIDs("logs", len(rows))
		if err != nil {
			return err
		}
		for i := range rows {
			rows[i].ID = nthID(first, i)
		}
		return l.insert(tx, rows, false)
	})
}

// insert writes rows (ids set) in chunks, with their content when
// withContent (imported logs carry text), counts them and adds them to the
// rollups held.
func (l *LogLoader) insert(tx *Tx, rows []Log, withContent bool) error {
	cols := loadCols
	if withContent {
		cols = append([]string{"content"}, loadCols...)
	}
	row := "(?" + strings.Repeat(", ?", len(cols)-1) + ")"
	head := "INSERT INTO logs (" + strings.Join(cols, ", ") + ") VALUES "
	chunk := maxLoadParams / len(cols)
	args := make([]any, 0, chunk*len(cols))
	for i := 0; i < len(rows); i += chunk {
		part := rows[i:min(i+chunk, len(rows))]
		var b strings.Builder
		b.WriteString(head)
		args = args[:0]
		for k := range part {
			r := &part[k]
			if k > 0 {
				b.WriteString(", ")
			}
			b.WriteString(row)
			if withContent {
				args = append(args, r.Content)
			}
			args = append(args, r.ID, r.UserID, r.CreatedAt, r.Type, r.Username, r.TokenName, r.TokenID, r.ModelName,
				r.Group, r.Quota, r.PromptTokens, r.CompletionTokens, r.ChannelID, r.RequestID, r.ElapsedTime, r.IsStream)
		}
		if err := tx.db.Exec(b.String(), args...).Error; err != nil {
			return fmt.Errorf("insert logs: %w", err)
		}
	}
	if err := countLogsOf(rows).write(tx.db); err != nil {
		return err
	}
	for i := range rows {
		if d := utcDay(rows[i].CreatedAt); d != l.day {
			if err := l.flush(tx); err != nil {
				return err
			}
			l.day = d
		}
		l.cubes.add(&rows[i])
		l.r.add(&rows[i])
	}
	return nil
}

// Flush writes the sums held.
func (l *LogLoader) Flush(ctx context.Context) error {
	return l.s.write(ctx, "load rollups", l.flush)
}

func (l *LogLoader) flush(tx *Tx) error {
	if err := l.cubes.write(tx.db); err != nil {
		return err
	}
	if err := l.r.write(tx.db); err != nil {
		return err
	}
	l.r = newRollup()
	return nil
}
