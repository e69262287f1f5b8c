package peer

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// A peer's refusal comes back as a *Refusal with its message and data, so
// a caller can act on the data (a sync's expected_id).
func TestCallRefusal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"success":false,"message":"no","data":{"expected_id":107}}`))
	}))
	defer srv.Close()
	c := Caller{Client: NewClient(0), Self: Self{NodeID: 3, Secret: "s"}}
	err := c.Call(context.Background(), Target{Address: srv.URL, Secret: "s"}, "/api/cluster/sync", map[string]int{}, 1<<10, nil)
	var r *Refusal
	if !errors.As(err, &r) || r.Message != "no" || string(r.Data) != `{"expected_id":107}` {
		t.Fatalf("err %v (%#v)", err, r)
	}
	if err.Error() != `refused: "no"` {
		t.Fatalf("error text %q", err)
	}
}

// receiver answers like a node whose table stores stored for node 3.
func receiver(t *testing.T, stored string, seen *[]string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ts, _ := ParseTimestamp(r.Header.Get(TimestampHeader))
		*seen = append(*seen, r.Header.Get(SignatureHeader))
		if r.Header.Get(SecretHeader) != "secret-of-receiver" || r.Header.Get(NodeHeader) != "3" ||
			!Verify(stored, ts, r.URL.Path, body, r.Header.Get(SignatureHeader)) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		io.WriteString(w, `{"success":true,"data":{"n":`+strconv.Itoa(len(body))+`}}`)
	}))
}

func TestCallerSigns(t *testing.T) {
	tests := []struct {
		name     string
		self     Self
		stored   string
		ok       bool
		attempts int
	}{
		{"the peer stores the secret", Self{NodeID: 3, Secret: "new"}, "new", true, 1},
		{"the peer stores another", Self{NodeID: 3, Secret: "new"}, "old", false, 1},
		{"rotation: the peer still stores the previous", Self{NodeID: 3, Secret: "new", PreviousSecret: "old"}, "old", true, 2},
		{"rotation: the peer stores neither", Self{NodeID: 3, Secret: "new", PreviousSecret: "old"}, "other", false, 2},
	}
	for _, tt := range tests {
		var seen []string
		srv := receiver(t, tt.stored, &seen)
		c := Caller{Client: NewClient(0), Self: tt.self}
		var out struct{ N int }
		err := c.Call(context.Background(), Target{Address: srv.URL + "/", Secret: "secret-of-receiver"}, "/api/cluster/sync",
			map[string]int{"a": 1}, 1<<10, &out)
		srv.Close()
		if (err == nil) != tt.ok || len(seen) != tt.attempts {
			t.Errorf("%s: err %v after %d attempts; want ok %v after %d", tt.name, err, len(seen), tt.ok, tt.attempts)
		}
		if tt.ok && out.N != len(`{"a":1}`) {
			t.Errorf("%s: the peer read %d bytes", tt.name, out.N)
		}
	}
}
