package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"
)

// upstreamKey is the channel key the soak gives the nodes.
const upstreamKey = "soak-upstream-key"

// Usage the fake upstream reports for every call.
const (
	upstreamPromptTokens     = 11
	upstreamCompletionTokens = 5
)

// startUpstream serves a zero-latency OpenAI-compatible chat completion
// (JSON, with usage) on a loopback port, in this process: the soak
// measures replication, not relaying. It returns the base URL and a stop.
func startUpstream() (string, func(), error) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var q struct {
			Model string `json:"model"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&q); err != nil || q.Model == "" ||
			r.Header.Get("Authorization") != "Bearer "+upstreamKey {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"soak upstream: bad request","type":"invalid_request_error"}}`)
			return
		}
		model, _ := json.Marshal(q.Model)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-soak","object":"chat.completion","created":%d,"model":%s,`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`,
			time.Now().Unix(), model, upstreamPromptTokens, upstreamCompletionTokens, upstreamPromptTokens+upstreamCompletionTokens)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), func() { srv.Close() }, nil
}
