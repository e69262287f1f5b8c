// Command modelgate runs the gateway: the /v1 relay and the /api management
// API on one port. Configuration comes from flags and environment variables
// (docs/operations.md, Configuration).
//
// Subcommands serve operators and containers: `modelgate version` prints
// the release label, `modelgate healthcheck` asks the running gateway's
// /healthz (a scratch image has no shell or curl for that), `modelgate
// reset-password USERNAME` sets a new password in the database, and
// `modelgate import` brings a one-api or new-api database over.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/modelgate/modelgate/internal/app"
	"github.com/modelgate/modelgate/internal/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	args := os.Args[1:]
	if len(args) > 0 {
		switch args[0] {
		case "version":
			printVersion(os.Stdout)
			return
		case "reset-password":
			if err := runResetPassword(ctx, args[1:], os.Getenv, os.Stdin, os.Stdout); err != nil {
				fmt.Fprintln(os.Stderr, "modelgate:", err)
				os.Exit(1)
			}
			return
		case "healthcheck":
			if err := healthcheck(ctx, args[1:], os.Getenv); err != nil {
				fmt.Fprintln(os.Stderr, "modelgate healthcheck:", err)
				os.Exit(1)
			}
			return
		}
	}
	if err := run(ctx, args, os.Getenv, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "modelgate:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends, logging to logOut.
func run(ctx context.Context, args []string, getenv func(string) string, logOut io.Writer) error {
	if len(args) > 0 && args[0] == "import" {
		return runImport(ctx, args[1:], getenv, os.Stdout, logOut)
	}
	cfg, err := config.Load(args, getenv)
	if err != nil {
		return err
	}
	var handler slog.Handler = slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: cfg.LogLevel})
	if cfg.LogFormat == "json" {
		handler = slog.NewJSONHandler(logOut, &slog.HandlerOptions{Level: cfg.LogLevel})
	}
	log := slog.New(handler)
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	serveErr := a.Serve(ctx)
	if err := a.Close(); err != nil {
		log.Error("close", "err", err)
	}
	return serveErr
}

// printVersion writes the release label and the Go version it was built
// with.
func printVersion(w io.Writer) {
	fmt.Fprintf(w, "modelgate %s (%s %s/%s)\n", app.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// healthcheckTimeout bounds the whole check: a container engine's own
// timeout (Dockerfile HEALTHCHECK --timeout) is longer.
const healthcheckTimeout = 3 * time.Second

// healthcheck GETs /healthz of the gateway configured by the same
// environment (LISTEN_ADDR, else PORT; --listen and --port are read too)
// on this host, and fails unless it answers 200. A bind address of every
// interface is asked on 127.0.0.1.
func healthcheck(ctx context.Context, args []string, getenv func(string) string) error {
	cfg, err := config.Load(args, getenv)
	if err != nil {
		return err
	}
	url := "http://" + probeAddr(cfg.Addr()) + "/healthz"
	ctx, cancel := context.WithTimeout(ctx, healthcheckTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// probeAddr is the address to reach a server bound to addr from this host:
// an empty or unspecified host (every interface) becomes 127.0.0.1.
func probeAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
