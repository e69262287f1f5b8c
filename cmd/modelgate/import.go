package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/modelgate/modelgate/internal/config"
	"github.com/modelgate/modelgate/internal/importer"
	"github.com/modelgate/modelgate/internal/store"
)

const importUsage = "usage: modelgate import one-api|new-api SOURCE --cny-per-usd RATE [--dry-run] [--logs]\n" +
	"  SOURCE: a SQLite file, a MySQL DSN (user:pass@tcp(host:port)/db) or a PostgreSQL DSN (postgres://…)\n" +
	"  the target is modelgate's own database (SQL_DSN / DATA_DIR, as for the server); it must be empty"

// runImport is `modelgate import`: it brings a one-api or new-api database
// into modelgate's configured database (docs/import.md), printing the report
// to out and the progress of logs to progress.
func runImport(ctx context.Context, args []string, getenv func(string) string, out, progress io.Writer) error {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rate := fs.String("cny-per-usd", "", "CNY per USD used to convert quota and prices")
	dry := fs.Bool("dry-run", false, "print the report without writing")
	logs := fs.Bool("logs", false, "also import the logs")
	// Flags may come before, between or after the two positional arguments.
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return fmt.Errorf("import: %v\n%s", err, importUsage)
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) != 2 || (pos[0] != importer.OneAPI && pos[0] != importer.NewAPI) {
		return fmt.Errorf("import: want the system (one-api or new-api) and SOURCE\n%s", importUsage)
	}
	if *rate == "" {
		return fmt.Errorf("import: --cny-per-usd is required\n%s", importUsage)
	}
	r, err := importer.ParseRate(*rate)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	cfg, err := config.Load(nil, getenv)
	if err != nil {
		return err
	}
	target, err := store.Open(ctx, store.Options{DSN: cfg.SQLDSN, SQLitePath: cfg.SQLitePath, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer target.Close()
	rep, err := importer.Run(ctx, target, importer.Options{System: pos[0], Source: pos[1], Rate: r, DryRun: *dry, Logs: *logs, Progress: progress})
	if rep != nil {
		rep.Write(out)
	}
	if err != nil {
		return fmt.Errorf("import failed, nothing written: %w", err)
	}
	return nil
}
