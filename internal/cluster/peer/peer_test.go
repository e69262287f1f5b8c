package peer

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A peer's refusal comes back as a *Refusal with its message and data, so
// a caller can act on the data (a sync's expected_id).
func TestCallRefusal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"success":false,"message":"no","data":{"expected_id":107}}`))
	}))
	defer srv.Close()
	err := Call(context.Background(), NewClient(time.Second), srv.URL, "s", map[string]int{}, 1<<10, nil)
	var r *Refusal
	if !errors.As(err, &r) || r.Message != "no" || string(r.Data) != `{"expected_id":107}` {
		t.Fatalf("err %v (%#v)", err, r)
	}
	if err.Error() != `refused: "no"` {
		t.Fatalf("error text %q", err)
	}
}
