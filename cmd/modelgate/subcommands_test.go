package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/app"
	"github.com/modelgate/modelgate/internal/apptest"
)

// `modelgate healthcheck` passes while a gateway serves on LISTEN_ADDR and
// fails when nothing listens there or /healthz does not answer 200.
func TestHealthcheckAsksTheGatewaysHealthz(t *testing.T) {
	apptest.Parallel(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	url := startInProcess(t, map[string]string{"LISTEN_ADDR": addr, "PORT": ""})
	if url != "http://"+addr {
		t.Fatalf("the gateway listens at %s, not at LISTEN_ADDR %s", url, addr)
	}
	getenv := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	if err := healthcheck(context.Background(), nil, getenv(map[string]string{"LISTEN_ADDR": addr})); err != nil {
		t.Errorf("healthcheck against the serving gateway: %v", err)
	}
	// Every interface is asked on 127.0.0.1; --listen works like the server's.
	_, port, _ := net.SplitHostPort(addr)
	if err := healthcheck(context.Background(), []string{"--listen", "0.0.0.0:" + port}, getenv(nil)); err != nil {
		t.Errorf("healthcheck --listen 0.0.0.0:%s: %v", port, err)
	}
	if err := healthcheck(context.Background(), nil, getenv(map[string]string{"PORT": port})); err != nil {
		t.Errorf("healthcheck with PORT=%s: %v", port, err)
	}

	// A server whose /healthz answers 503, and a port nobody listens on.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			t.Errorf("healthcheck asked %s", r.URL.Path)
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer down.Close()
	downAddr := strings.TrimPrefix(down.URL, "http://")
	if err := healthcheck(context.Background(), nil, getenv(map[string]string{"LISTEN_ADDR": downAddr})); err == nil ||
		!strings.Contains(err.Error(), "503") {
		t.Errorf("healthcheck against a 503: %v", err)
	}
	down.Close()
	if err := healthcheck(context.Background(), nil, getenv(map[string]string{"LISTEN_ADDR": downAddr})); err == nil {
		t.Error("healthcheck passed with nothing listening")
	}
	if err := healthcheck(context.Background(), nil, getenv(map[string]string{"LISTEN_ADDR": "nonsense"})); err == nil {
		t.Error("healthcheck passed with an invalid LISTEN_ADDR")
	}
}

func TestProbeAddr(t *testing.T) {
	apptest.Parallel(t)
	for in, want := range map[string]string{
		":3000": "127.0.0.1:3000", "0.0.0.0:3000": "127.0.0.1:3000", "[::]:3000": "127.0.0.1:3000",
		"127.0.0.1:8080": "127.0.0.1:8080", "[::1]:3000": "[::1]:3000", "10.1.2.3:3000": "10.1.2.3:3000",
	} {
		if got := probeAddr(in); got != want {
			t.Errorf("probeAddr(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestVersionNamesTheRelease(t *testing.T) {
	apptest.Parallel(t)
	var out bytes.Buffer
	printVersion(&out)
	if !strings.HasPrefix(out.String(), "modelgate "+app.Version+" (go") {
		t.Errorf("version printed %q", out.String())
	}
}
