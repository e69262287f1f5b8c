package relay

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelgate/modelgate/internal/billing"
	"github.com/modelgate/modelgate/internal/pricing"
)

// countingPayer records every settlement it is asked for.
type countingPayer struct{ settled []billing.Outcome }

func (p *countingPayer) Reserve(context.Context, *billing.Call) (billing.Charge, error) {
	return billing.Charge{Payer: p}, nil
}

func (p *countingPayer) Settle(_ *billing.Call, _ *billing.Charge, o billing.Outcome) {
	p.settled = append(p.settled, o)
}

// A call is charged once, for the answer it settled first: recover's
// empty answer after run's settlement (a panic after it) changes nothing,
// and the call's report and rate limits read the answer billed.
func TestSettleChargesOnce(t *testing.T) {
	t.Parallel()
	p := &countingPayer{}
	c := &call{payment: payment{charge: billing.Charge{Payer: p}}}
	a := answer{channel: &upstream{ID: 3}, usage: pricing.Usage{PromptTokens: 5, CompletionTokens: 7}, estimated: true}
	c.settle(a)
	c.settle(answer{}) // what recover does after a panic
	if len(p.settled) != 1 {
		t.Fatalf("settled %d times, want once", len(p.settled))
	}
	want := billing.Outcome{ChannelID: 3, Usage: a.usage, Estimated: true}
	if p.settled[0] != want {
		t.Fatalf("settled %+v, want %+v", p.settled[0], want)
	}
	if c.out.channel == nil || c.out.usage != a.usage {
		t.Fatalf("the call keeps %+v, not the answer billed", c.out)
	}

	// An answer without a channel gives the hold back: ChannelID 0.
	p2 := &countingPayer{}
	c2 := &call{payment: payment{charge: billing.Charge{Payer: p2}}}
	c2.settle(answer{usage: pricing.Usage{PromptTokens: 9}})
	if len(p2.settled) != 1 || p2.settled[0].ChannelID != 0 {
		t.Fatalf("an unanswered call settled %+v", p2.settled)
	}
}

// The call's writer knows whether anything reached the client: headers
// alone and an informational status do not count, a status or a byte of
// body does, and a flush still reaches the writer below.
func TestAnswerWriterKnowsWhatReachedTheClient(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	w := &answerWriter{ResponseWriter: rec}
	w.Header().Set("X-Request-Id", "r")
	w.WriteHeader(http.StatusEarlyHints)
	if w.wrote {
		t.Fatal("headers and a 103 counted as an answer")
	}
	w.WriteHeader(http.StatusOK)
	if !w.wrote {
		t.Fatal("a status line did not count as an answer")
	}
	if err := http.NewResponseController(w).Flush(); err != nil || !rec.Flushed {
		t.Fatalf("flush did not reach the writer below: %v", err)
	}

	body := &answerWriter{ResponseWriter: httptest.NewRecorder()}
	body.Write([]byte("{}"))
	if !body.wrote {
		t.Fatal("a body without WriteHeader did not count as an answer")
	}
}
