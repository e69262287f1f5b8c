package owner

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/cluster/peer"
	"github.com/modelgate/modelgate/internal/store"
)

type table map[int]store.ClusterNode

func (t table) ClusterNodeByNodeID(_ context.Context, id int) (store.ClusterNode, error) {
	n, ok := t[id]
	if !ok {
		return n, store.ErrNotFound
	}
	return n, nil
}

func TestLocal(t *testing.T) {
	var off *Router
	if !off.Local(52) || off.Self() != 0 {
		t.Fatal("cluster mode off: every row is local")
	}
	r := New(peer.Self{NodeID: 2, Secret: "s2"}, table{})
	for _, tc := range []struct {
		id   int64
		want bool
	}{{2, true}, {102, true}, {1, false}, {50, false}, {3, false}} {
		if got := r.Local(tc.id); got != tc.want {
			t.Errorf("node 2: Local(%d) = %v, want %v", tc.id, got, tc.want)
		}
	}
}

// TestForward: the owner's answer is decoded only from an HTTP 200
// success envelope of bounded size; everything else, and an owner that
// cannot be called, is ErrUnavailable. The secret goes in the header.
func TestForward(t *testing.T) {
	var gotSecret string
	var signed bool
	answer := func(status int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			gotSecret = r.Header.Get(SecretHeader)
			raw, _ := io.ReadAll(r.Body)
			ts, _ := peer.ParseTimestamp(r.Header.Get(peer.TimestampHeader))
			signed = r.Header.Get(peer.NodeHeader) == "2" && peer.Verify("s2", ts, r.URL.Path, raw, r.Header.Get(peer.SignatureHeader))
			w.WriteHeader(status)
			io.WriteString(w, body)
		}
	}
	servers := map[string]http.Handler{
		"ok":       answer(200, `{"success":true,"data":{"n":7}}`),
		"refused":  answer(200, `{"success":false,"message":"集群密钥无效"}`),
		"status":   answer(401, `{"success":false}`),
		"not json": answer(200, `<html>`),
		"too big":  answer(200, `{"success":true,"data":"`+strings.Repeat("x", MaxBodyBytes)+`"}`),
		"redirect": http.RedirectHandler("http://127.0.0.1:1/elsewhere", http.StatusTemporaryRedirect),
	}
	for name, h := range servers {
		srv := httptest.NewServer(h)
		r := New(peer.Self{NodeID: 2, Secret: "s2"}, table{1: {NodeID: 1, Address: srv.URL, SecretKey: "s1"}})
		var out struct{ N int }
		err := r.Forward(context.Background(), 51, RedeemPath, map[string]string{"key": "k"}, &out)
		srv.Close()
		if name == "ok" {
			if err != nil || out.N != 7 || gotSecret != "s1" || !signed {
				t.Errorf("ok: %v, %+v, secret %q, signed by node 2 %v", err, out, gotSecret, signed)
			}
			continue
		}
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: %v, want ErrUnavailable", name, err)
		}
	}
	for name, nodes := range map[string]table{
		"unknown":   {},
		"disabled":  {1: {NodeID: 1, Address: "http://127.0.0.1:1", SecretKey: "s1", Disabled: true}},
		"no secret": {1: {NodeID: 1, Address: "http://127.0.0.1:1"}},
		"down":      {1: {NodeID: 1, Address: "http://127.0.0.1:1", SecretKey: "s1"}},
	} {
		var out any
		if err := New(peer.Self{NodeID: 2, Secret: "s2"}, nodes).Forward(context.Background(), 1, ActivatePath, nil, &out); !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: %v, want ErrUnavailable", name, err)
		}
	}
}
