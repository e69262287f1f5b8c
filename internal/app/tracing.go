package app

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
)

// Traces (docs/operations.md, Traces): off unless the standard
// OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set (config.Traces). Spans go
// over OTLP/HTTP (protobuf) in batches; the exporter reads the standard
// OTEL_* variables (headers, timeout, certificate, sampler through the
// SDK) itself.

// startTracing builds the tracer provider and hands the relay its tracer;
// nothing when traces are off.
func (a *App) startTracing(ctx context.Context) error {
	if !a.cfg.Traces {
		return nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		semconv.ServiceName("modelgate"), semconv.ServiceVersion(Version)))
	if err != nil {
		res = resource.Default()
	}
	a.tracing = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	a.relay.Tracer = a.tracing.Tracer("github.com/modelgate/modelgate/internal/relay")
	a.log.Info("traces on: exporting spans over OTLP/HTTP")
	return nil
}

// stopTracing sends the spans still buffered (Close).
func (a *App) stopTracing(ctx context.Context) error {
	if a.tracing == nil {
		return nil
	}
	return a.tracing.Shutdown(ctx)
}
