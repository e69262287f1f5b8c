package app

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/modelgate/modelgate/internal/otlpjson"
)

// Traces (docs/operations.md, Traces): off unless the standard
// OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set (config.Traces). Spans go
// in batches as OTLP/HTTP JSON (package otlpjson); the SDK reads the
// sampler and resource variables (OTEL_TRACES_SAMPLER,
// OTEL_RESOURCE_ATTRIBUTES) itself.

// startTracing builds the tracer provider and hands the relay its tracer;
// nothing when traces are off.
func (a *App) startTracing(context.Context) error {
	t := a.cfg.Traces
	if t.URL == "" {
		return nil
	}
	exp := otlpjson.New(otlpjson.Config{URL: t.URL, Header: t.Header, Timeout: t.Timeout})
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		attribute.String("service.name", "modelgate"), attribute.String("service.version", Version)))
	if err != nil {
		res = resource.Default()
	}
	a.tracing = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	a.relay.Tracer = a.tracing.Tracer("github.com/modelgate/modelgate/internal/relay")
	a.log.Info("traces on: exporting spans as OTLP/HTTP JSON")
	return nil
}

// stopTracing sends the spans still buffered (Close).
func (a *App) stopTracing(ctx context.Context) error {
	if a.tracing == nil {
		return nil
	}
	return a.tracing.Shutdown(ctx)
}
