package relay

import (
	"errors"
	"net/http"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Traces (docs/operations.md, Traces): with Deps.Tracer set, each call is
// a span ("relay.<endpoint>") and each upstream request a child span
// ("upstream"). Spans carry the request id, model, channel, status,
// billing source and token counts: never a key, a prompt or an answer.
// Without a tracer none of this runs.

// startSpan opens the call's span and makes it the request's context, so
// the upstream requests (upstreamContext) are its children.
func (c *call) startSpan() {
	if c.rl.Tracer == nil {
		return
	}
	ctx, span := c.rl.Tracer.Start(c.r.Context(), "relay."+c.ep.name, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("modelgate.request_id", c.requestID),
			attribute.String("http.request.method", c.r.Method), attribute.String("http.route", c.ep.path)))
	c.r = c.r.WithContext(ctx)
	c.span = span
}

// endSpan closes the call's span with its outcome.
func (c *call) endSpan(r *Report) {
	if c.span == nil {
		return
	}
	c.span.SetAttributes(attribute.String("modelgate.model", r.Model), attribute.String("modelgate.channel", r.Channel),
		attribute.Int("http.response.status_code", r.Status), attribute.String("modelgate.billing", r.Billing),
		attribute.Bool("modelgate.stream", r.Stream), attribute.Int64("modelgate.prompt_tokens", r.PromptTokens),
		attribute.Int64("modelgate.completion_tokens", r.CompletionTokens), attribute.Int64("modelgate.quota", r.Quota),
		attribute.Float64("modelgate.upstream_ms", ms(r.Upstream)), attribute.Float64("modelgate.gateway_ms", ms(r.Gateway)))
	if r.Status >= 500 || r.Status == 0 {
		c.span.SetStatus(codes.Error, http.StatusText(r.Status))
	}
	c.span.End()
}

// upstreamSpan opens the span of one upstream request to channel u; the
// returned request carries it. The attributes name the channel and its
// host, never its key or path query.
func (c *call) upstreamSpan(u *upstream, req *http.Request) (*http.Request, trace.Span) {
	if c.span == nil {
		return req, nil
	}
	host := ""
	if p, err := url.Parse(u.BaseURL); err == nil {
		host = p.Host
	}
	ctx, span := c.rl.Tracer.Start(req.Context(), "upstream", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("modelgate.request_id", c.requestID), attribute.String("modelgate.channel", u.Name),
			attribute.Int64("modelgate.channel_id", u.ID), attribute.String("server.address", host),
			attribute.String("http.request.method", req.Method)))
	return req.WithContext(ctx), span
}

// endUpstreamSpan closes an upstream span with the answer's status or the
// failure's kind.
func endUpstreamSpan(span trace.Span, resp *http.Response, err error) {
	if span == nil {
		return
	}
	var f *upstreamFailure
	switch {
	case resp != nil:
		span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	case errors.As(err, &f) && f.status != 0: // a failed answer, read and closed by send
		span.SetAttributes(attribute.Int("http.response.status_code", f.status))
	}
	if kind := failureKind(err); kind != "" {
		span.SetAttributes(attribute.String("modelgate.failure", kind))
		span.SetStatus(codes.Error, kind)
	} else if err != nil {
		span.SetStatus(codes.Error, "request ended")
	}
	span.End()
}

// ms is a duration in milliseconds with microsecond precision.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
