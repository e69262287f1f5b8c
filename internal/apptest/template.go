package apptest

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/internal/config"
	"github.com/modelgate/modelgate/internal/store"
)

// A gateway on SQLite starts from a copy of a database the migrations ran
// on once per test process, not by running them again: thirty migrations
// are most of a start's CPU, and the suites start hundreds of gateways.
// The copy is what the migrations leave (schema, id counters, seeded group
// prices); the start still does everything after them (the money clamp,
// the root user). Templates are per node id because the seeded rows take
// their ids from the node's id range.
var templates struct {
	mu     sync.Mutex
	byNode map[int][]byte
}

// seedFromTemplate writes the migrated template for cfg's node to cfg's
// SQLite file when the gateway would create that file: SQLite selected and
// no file there yet (a restart, or a second node on the same file, opens
// what is there).
func seedFromTemplate(t testing.TB, cfg config.Config) {
	t.Helper()
	if cfg.SQLDSN != "" || cfg.SQLitePath == "" {
		return
	}
	if _, err := os.Stat(cfg.SQLitePath); !errors.Is(err, fs.ErrNotExist) {
		return
	}
	db, err := template(cfg.Cluster.NodeID)
	if err != nil {
		t.Fatalf("migrated template database: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(cfg.SQLitePath), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg.SQLitePath, db, 0o600); err != nil {
		t.Fatal(err)
	}
}

// template is the SQLite file the migrations produce for node, made on
// first use.
func template(node int) ([]byte, error) {
	templates.mu.Lock()
	defer templates.mu.Unlock()
	if db, ok := templates.byNode[node]; ok {
		return db, nil
	}
	dir, err := os.MkdirTemp("", "modelgate-apptest-template-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "modelgate.db")
	st, err := store.Open(context.Background(), store.Options{SQLitePath: path, NodeID: node})
	if err != nil {
		return nil, err
	}
	// Closing the last connection checkpoints the WAL into the file and
	// removes it: the file alone is the whole database.
	if err := st.Close(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		return nil, errors.New("the WAL outlived the close: the file alone is not the database")
	}
	db, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if templates.byNode == nil {
		templates.byNode = map[int][]byte{}
	}
	templates.byNode[node] = db
	return db, nil
}
