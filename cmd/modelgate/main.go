// Command modelgate runs the gateway: the /v1 relay and the /api management
// API on one port. Configuration comes from flags and environment variables
// (docs/operations.md, Configuration).
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelgate/modelgate/internal/app"
	"github.com/modelgate/modelgate/internal/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stderr); err != nil {
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
