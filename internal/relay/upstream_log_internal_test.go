package relay

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// A failure without a response logs the transport error's cause, not a
// meaningless status 0; an answered failure logs its status and body.
func TestUpstreamFailureLogNamesTheCause(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	c := &call{rl: &Relay{Deps: Deps{Log: slog.New(slog.NewTextHandler(&buf, nil))}}, requestID: "req-1"}
	c.logFailure(&upstream{ID: 7}, &upstreamFailure{detail: `Post "http://up/v1/chat/completions": read tcp: connection reset by peer`, retry: true})
	line := buf.String()
	if !strings.Contains(line, "connection reset by peer") || strings.Contains(line, "status=") || !strings.Contains(line, "channel=7") {
		t.Fatalf("transport failure logged as %q", line)
	}
	buf.Reset()
	c.logFailure(&upstream{ID: 7}, &upstreamFailure{status: 503, detail: "overloaded", retry: true})
	if line := buf.String(); !strings.Contains(line, "status=503") || !strings.Contains(line, "cause=overloaded") {
		t.Fatalf("answered failure logged as %q", line)
	}
}
