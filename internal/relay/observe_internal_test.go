package relay

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
)

func TestFailureKind(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want string
	}{
		{&upstreamFailure{detail: "connection refused", retry: true}, FailUnreachable},
		{&upstreamFailure{detail: "the gateway is shutting down", neutral: true}, FailShutdown},
		{&upstreamFailure{status: http.StatusTooManyRequests, retry: true, neutral: true}, FailRateLimited},
		{&upstreamFailure{status: 529, retry: true}, FailServerError},
		{&upstreamFailure{status: http.StatusInternalServerError, retry: true}, FailServerError},
		{&upstreamFailure{status: http.StatusUnauthorized, retry: true, neutral: true}, FailKeyRefused},
		{&upstreamFailure{status: http.StatusForbidden, retry: true, neutral: true}, FailKeyRefused},
		{unreadableAnswer("invalid JSON from upstream"), FailBadResponse},
		{fmt.Errorf("wrapped: %w", &upstreamFailure{status: 503}), FailServerError},
		{context.Canceled, ""},
		{errors.New("bad request"), ""},
	}
	for _, tt := range tests {
		if got := failureKind(tt.err); got != tt.want {
			t.Errorf("failureKind(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
	seen := map[string]bool{}
	for _, k := range UpstreamErrorKinds {
		seen[k] = true
	}
	for _, tt := range tests {
		if tt.want != "" && !seen[tt.want] {
			t.Errorf("kind %q is not in UpstreamErrorKinds", tt.want)
		}
	}
}
