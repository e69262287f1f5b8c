package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
)

// LOG_FORMAT=json makes every log line a JSON object (docs/operations.md,
// Logs).
func TestJSONLogFormat(t *testing.T) {
	apptest.Parallel(t)
	env := map[string]string{"DATA_DIR": t.TempDir(), "PORT": "0", "LOG_FORMAT": "json"}
	ctx, cancel := context.WithCancel(context.Background())
	var logs syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, nil, func(k string) string { return env[k] }, &logs) }()
	// A bound for a hung start only: a loaded machine (packages and tests
	// in parallel) can take well over 10 s to migrate and listen.
	for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(logs.String(), "modelgate listening") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	lines := 0
	for line := range strings.Lines(logs.String()) {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		if _, ok := v["msg"]; !ok {
			t.Errorf("no msg in %q", line)
		}
		lines++
	}
	if lines < 2 || !strings.Contains(logs.String(), `"msg":"modelgate listening"`) {
		t.Fatalf("log:\n%s", logs.String())
	}
}
