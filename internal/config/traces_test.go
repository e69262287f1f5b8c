package config

import (
	"strings"
	"testing"
	"time"
)

func TestTraces(t *testing.T) {
	tests := []struct {
		env     map[string]string
		url     string
		header  string // Authorization
		timeout time.Duration
		bad     string
	}{
		{env: nil},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, url: "http://collector:4318/v1/traces", timeout: 10 * time.Second},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://t.example/otlp/traces",
			"OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20abc,x-tenant=a", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "2500", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
			url: "https://t.example/otlp/traces", header: "Bearer abc", timeout: 2500 * time.Millisecond},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317"}, bad: "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, bad: "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, bad: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_HEADERS": "novalue"}, bad: "OTEL_EXPORTER_OTLP_HEADERS"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TIMEOUT": "10s"}, bad: "OTEL_EXPORTER_OTLP_TIMEOUT"},
	}
	for _, tt := range tests {
		c, err := Load(nil, env(tt.env))
		if tt.bad != "" {
			if err == nil || !strings.Contains(err.Error(), tt.bad) {
				t.Errorf("%v: error %v, want one naming %s", tt.env, err, tt.bad)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tt.env, err)
			continue
		}
		if c.Traces.URL != tt.url || c.Traces.Header.Get("Authorization") != tt.header || c.Traces.Timeout != tt.timeout {
			t.Errorf("%v: traces %+v", tt.env, c.Traces)
		}
	}
}
