// Package otlpjson exports OpenTelemetry spans as OTLP/HTTP with the JSON
// encoding (POST <endpoint>/v1/traces, Content-Type application/json), the
// encoding every OTLP/HTTP receiver (the OpenTelemetry Collector, Jaeger,
// Tempo) accepts beside protobuf. It exists so that optional traces cost
// the binary only the OpenTelemetry SDK: the official OTLP exporters link
// the generated protobuf and gRPC packages, about 6 MB of binary and
// 10 MB of resident memory at start, even with traces off
// (docs/dependencies.md).
package otlpjson

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Config says where spans go.
type Config struct {
	// URL is the full traces URL (…/v1/traces).
	URL string
	// Header is sent with every export (a collector's token).
	Header http.Header
	// Timeout bounds one export; default 10 s.
	Timeout time.Duration
}

// Exporter is an sdktrace.SpanExporter.
type Exporter struct {
	cfg    Config
	client *http.Client
}

// New returns an exporter to cfg.URL.
func New(cfg Config) *Exporter {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	return &Exporter{cfg: cfg, client: &http.Client{Timeout: cfg.Timeout}}
}

// ExportSpans sends one batch; the SDK's batch processor calls it.
func (e *Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	body, err := json.Marshal(Encode(spans))
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range e.cfg.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("otlp export: %w", err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("otlp export: %s answered %d", e.cfg.URL, resp.StatusCode)
	}
	return nil
}

// Shutdown has nothing to release.
func (e *Exporter) Shutdown(context.Context) error { return nil }

// The OTLP/JSON shapes (opentelemetry-proto's JSON mapping: ids in hex,
// 64-bit integers as strings, enums as numbers, lowerCamelCase names).
type (
	request struct {
		ResourceSpans []resourceSpans `json:"resourceSpans"`
	}
	resourceSpans struct {
		Resource   resourceJSON `json:"resource"`
		ScopeSpans []scopeSpans `json:"scopeSpans"`
	}
	resourceJSON struct {
		Attributes []keyValue `json:"attributes"`
	}
	scopeSpans struct {
		Scope scope  `json:"scope"`
		Spans []span `json:"spans"`
	}
	scope struct {
		Name    string `json:"name"`
		Version string `json:"version,omitempty"`
	}
	span struct {
		TraceID           string     `json:"traceId"`
		SpanID            string     `json:"spanId"`
		ParentSpanID      string     `json:"parentSpanId,omitempty"`
		Name              string     `json:"name"`
		Kind              int        `json:"kind"`
		StartTimeUnixNano string     `json:"startTimeUnixNano"`
		EndTimeUnixNano   string     `json:"endTimeUnixNano"`
		Attributes        []keyValue `json:"attributes,omitempty"`
		Status            status     `json:"status"`
	}
	status struct {
		Code    int    `json:"code,omitempty"`
		Message string `json:"message,omitempty"`
	}
	keyValue struct {
		Key   string   `json:"key"`
		Value anyValue `json:"value"`
	}
	anyValue struct {
		StringValue *string  `json:"stringValue,omitempty"`
		BoolValue   *bool    `json:"boolValue,omitempty"`
		IntValue    *string  `json:"intValue,omitempty"`
		DoubleValue *float64 `json:"doubleValue,omitempty"`
	}
)

// Encode builds the export request of spans, grouped by resource and
// instrumentation scope.
func Encode(spans []sdktrace.ReadOnlySpan) any {
	var out request
	type groupKey struct {
		res   string
		scope string
	}
	index := map[groupKey][2]int{}
	resIndex := map[string]int{}
	for _, s := range spans {
		resKey := s.Resource().Encoded(attribute.DefaultEncoder())
		ri, ok := resIndex[resKey]
		if !ok {
			ri = len(out.ResourceSpans)
			resIndex[resKey] = ri
			out.ResourceSpans = append(out.ResourceSpans, resourceSpans{Resource: resourceJSON{Attributes: keyValues(s.Resource().Attributes())}})
		}
		sc := s.InstrumentationScope()
		k := groupKey{resKey, sc.Name + "\x00" + sc.Version}
		pos, ok := index[k]
		if !ok {
			rs := &out.ResourceSpans[ri]
			pos = [2]int{ri, len(rs.ScopeSpans)}
			index[k] = pos
			rs.ScopeSpans = append(rs.ScopeSpans, scopeSpans{Scope: scope{Name: sc.Name, Version: sc.Version}})
		}
		ss := &out.ResourceSpans[pos[0]].ScopeSpans[pos[1]]
		ss.Spans = append(ss.Spans, encodeSpan(s))
	}
	return out
}

func encodeSpan(s sdktrace.ReadOnlySpan) span {
	sc := s.SpanContext()
	out := span{
		TraceID: hex.EncodeToString(traceID(sc.TraceID())), SpanID: hex.EncodeToString(spanID(sc.SpanID())),
		Name: s.Name(), Kind: kind(s.SpanKind()),
		StartTimeUnixNano: strconv.FormatInt(s.StartTime().UnixNano(), 10),
		EndTimeUnixNano:   strconv.FormatInt(s.EndTime().UnixNano(), 10),
		Attributes:        keyValues(s.Attributes()),
	}
	if p := s.Parent(); p.SpanID().IsValid() {
		out.ParentSpanID = hex.EncodeToString(spanID(p.SpanID()))
	}
	switch st := s.Status(); st.Code {
	case codes.Error:
		out.Status = status{Code: 2, Message: st.Description}
	case codes.Ok:
		out.Status = status{Code: 1}
	}
	return out
}

func traceID(id trace.TraceID) []byte { return id[:] }
func spanID(id trace.SpanID) []byte   { return id[:] }

// kind maps a span kind to OTLP's SpanKind numbers (the SDK's are the same
// order: unspecified 0, internal 1, server 2, client 3, producer 4,
// consumer 5).
func kind(k trace.SpanKind) int {
	if k < trace.SpanKindInternal || k > trace.SpanKindConsumer {
		return 1
	}
	return int(k)
}

func keyValues(attrs []attribute.KeyValue) []keyValue {
	out := make([]keyValue, 0, len(attrs))
	for _, a := range attrs {
		var v anyValue
		switch a.Value.Type() {
		case attribute.BOOL:
			b := a.Value.AsBool()
			v.BoolValue = &b
		case attribute.INT64:
			s := strconv.FormatInt(a.Value.AsInt64(), 10)
			v.IntValue = &s
		case attribute.FLOAT64:
			f := a.Value.AsFloat64()
			v.DoubleValue = &f
		default: // strings, and slices as their text
			s := a.Value.Emit()
			v.StringValue = &s
		}
		out = append(out, keyValue{Key: string(a.Key), Value: v})
	}
	return out
}
