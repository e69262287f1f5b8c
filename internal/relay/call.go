package relay

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"runtime/debug"
	"slices"
	"time"

	"github.com/modelgate/modelgate/internal/billing"
	"github.com/modelgate/modelgate/internal/channel"
	"github.com/modelgate/modelgate/internal/pricing"
	"github.com/modelgate/modelgate/internal/relay/dialect"
	"github.com/modelgate/modelgate/internal/relay/responses"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/textfield"
	"go.opentelemetry.io/otel/trace"
)

// call is one relayed request from authentication to settlement. Its
// phases run in order, admit → route → hold → attempts → settle (run); each
// returns its value, which run keeps here for the phases after it and for
// the call's report, error log and trace, which describe whatever phase it
// reached. The attempts return the answering attempt's answer, kept only
// once settle has billed it (out).
type call struct {
	rl *Relay
	ep *endpoint
	// w is the client's writer as the call writes to it: aw, which knows
	// whether anything reached the client (wrote).
	w         http.ResponseWriter
	aw        answerWriter
	r         *http.Request
	start     time.Time
	requestID string
	// headerValues back the values of the headers the call sets on its
	// answer and its upstream requests (X-Request-Id, Accept): a value
	// slice of its own each would be an allocation per header and call.
	// Slices of it are never written through (a Header's Set replaces the
	// slice, Add grows a copy: the slices have no room).
	headerValues [2]string
	// bodyHeld is what this call took from the body budget (body.go),
	// given back when the call ends; bodyRead: the whole body was read.
	bodyHeld int64
	bodyRead bool
	// settled: settle billed the call (out below). Kept beside bodyRead,
	// so the two flags share one word: the call is 1,152 bytes, an
	// allocation size class of its own, where the next is 1,280.
	settled bool
	// timing times the answer (observe.go); nil outside Handler.
	timing *langWriter
	// span is the call's trace span (trace.go); nil without a tracer.
	span trace.Span

	admission // admit: who calls, with what
	// snap is the routing catalog the call routes and is priced by.
	snap     *snapshot
	routing  // route: where the call can go, for the model it is served as
	payment  // hold: who pays, and what is held
	attempts // attempts: the upstream requests made
	// out is the answer settle billed: the answering attempt's, or none
	// (settle sets it, once, with settled).
	out answer

	// respIn is a Responses call's request, once decoded for conversion
	// (responsesapi.go).
	respIn *responses.Request
}

// admission is what admit learns of a call: the caller's key and the
// request.
type admission struct {
	key    *keyEntry
	pinned int64
	body   []byte
	meta   requestMeta
	// bodyModel is the model the body names; meta.model is the model the
	// call is served as, which plan rule 1 may change (plans.go).
	bodyModel string
	prompt    int64 // promptBound's value; -1 until computed
}

// routing is route's answer for one model: the model may be served to this
// caller on this endpoint, and by which channels.
type routing struct {
	// tiers are the channels of the caller's group for the model, highest
	// priority first (nil for a pinned channel; choose picks from them).
	tiers []tier
}

// payment is what the hold phase (pay) settles on: bill describes the call
// to its payer, charge is the payer's answer (its CompletionLimit, when
// > 0, is sent upstream as the call's limit).
type payment struct {
	bill   billing.Call
	charge billing.Charge
}

// attempts are the upstream requests of the call.
type attempts struct {
	up *upstreamCall // the current attempt's upstream request
	// failed is the last failed attempt, already in the error log;
	// sentTo the channel the last upstream request went to (errorlog.go).
	failed *upstreamFailure
	sentTo *upstream
	// cred is the key of channel credFor the current attempt uses;
	// spent, the keys the upstream refused during this call (keypool.go).
	cred    channel.PoolKey
	credFor *upstream
	spent   map[string]bool
}

// answer is what one attempt got from its channel: forward returns the
// answering attempt's, and settle bills it. Whether anything reached the
// client is the writer's to know (answerWriter).
type answer struct {
	// channel is the channel that answered 200, nil when none did: an
	// answer without a channel bills nothing.
	channel   *upstream
	usage     pricing.Usage
	estimated bool // usage counted locally: the upstream reported none
	// upstreamBroke is why the upstream broke the stream it had started,
	// keys masked ("" when it did not): a failure for the channel's
	// breaker (breakers.go).
	upstreamBroke string
}

// serve adapts one endpoint: failures before anything was written answer in
// the ingress dialect's error shape.
func (rl *Relay) serve(ep *endpoint) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rl.started.Add(1)
		rl.memory.observe(rl.inflight.Add(1))
		defer func() { rl.memory.observe(rl.inflight.Add(-1)) }() // after settle: Idle means every call is queued for billing
		c := &call{rl: rl, ep: ep, aw: answerWriter{ResponseWriter: w}, r: r, start: time.Now(), requestID: requestID(r),
			timing: timingOf(w), admission: admission{prompt: -1}}
		c.w = &c.aw
		c.headerValues = [2]string{c.requestID, r.Header.Get("Accept")}
		w.Header()["X-Request-Id"] = c.headerValues[0:1:1]
		c.startSpan()
		defer c.releaseBody() // after recover: the body lives as long as the call
		defer c.report()      // after recover: a panic's answer is reported too
		defer c.recover()
		err := c.run()
		if err != nil && !c.wrote() {
			if !c.bodyRead {
				c.cutBody()
			}
			writeError(w, ep.ingress, err)
			c.logRefusal(err)
		}
	})
}

// answerWriter is the client's ResponseWriter as the call writes to it. It
// records whether anything reached the client, a status line or a byte of
// body: from then on no other channel is tried and no error body is
// written. The writer is the one place that knows, so no path that answers
// has to remember to say so. It lives in the call (no allocation of its
// own); Unwrap keeps http.ResponseController and langOf reaching the
// writer below.
type answerWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *answerWriter) WriteHeader(code int) {
	if code >= 200 { // an informational 1xx is not the answer
		w.wrote = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *answerWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *answerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// wrote reports whether anything of an answer reached the client.
func (c *call) wrote() bool { return c.aw.wrote }

// recover turns a panic into a logged 500 and gives back a hold that was
// taken and not settled: a bug must neither reach the client as a dropped
// connection nor keep a user's money.
func (c *call) recover() {
	p := recover()
	if p == nil {
		return
	}
	c.rl.Log.Error("relay call panicked", "panic", p, "request_id", c.requestID, "stack", string(debug.Stack()))
	c.endUpstream()
	if c.charge.Reserved() {
		c.settle(answer{}) // bill nothing: the call did not complete
	}
	if !c.wrote() {
		writeError(c.w, c.ep.ingress, errors.New("panic"))
		c.logRefusal(errors.New("panic"))
	}
}

// Headers kept in the consume log (columns: store.Log). Both are cleaned,
// never refused: a paid call is not failed over a label, and a value the
// column cannot hold would fail the call's settlement on PostgreSQL and
// MySQL instead (issue 6). An id is replaced rather than repaired, since a
// different id would mislead whoever greps for it; a session key is kept
// as far as it is usable (docs/api.md, Text input).
var (
	requestIDText  = textfield.Field{Label: "X-Request-Id", MaxChars: 64}
	sessionKeyText = textfield.Field{Label: "X-Session-Key", MaxChars: 128}
)

// requestID is the caller's X-Request-Id when it sent one the log can keep
// as it is, else a new random id.
func requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); id != "" && requestIDText.Validate(id) == "" {
		return id
	}
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// sessionKey is the caller's X-Session-Key without invalid bytes and
// control characters, cut at a character to its column's length.
func sessionKey(r *http.Request) string {
	return sessionKeyText.Clean(r.Header.Get("X-Session-Key"))
}

func (c *call) run() error {
	if err := c.admit(); err != nil {
		return err
	}
	c.snap = c.rl.catalog.cur.Load()
	if c.ep.free {
		var err error
		if c.routing, err = c.route(c.meta.model); err != nil {
			return err
		}
		return c.countTokens()
	}
	// Limits before the reservation: a refused call holds no money. The
	// hold is given back after settlement, counting the settled answer's
	// tokens; also when the call panics (counting none: recover settles
	// after it).
	ticket, limited, err := c.admitLimits()
	if err != nil {
		return err
	}
	if limited {
		defer func() { c.releaseLimits(&ticket) }()
	}
	model, rt, err := c.pay(&c.payment)
	if err != nil {
		return err
	}
	c.meta.model, c.routing = model, rt
	if c.billedByPlan() {
		c.setRateLimitHeaders()
	}
	ans, err := c.forward()
	c.endUpstream()
	c.settle(ans)
	return err
}

// admit authenticates the caller, reads the body and authorizes the
// model. What it learned stays on the call also when it refuses: the
// refusal's log names the caller.
func (c *call) admit() error {
	var err error
	if c.key, c.pinned, err = c.rl.authenticate(c.r); err != nil {
		return err
	}
	// A call its owner cannot pay for is refused before its body is read:
	// reading first let a user with nothing to spend pin memory with large
	// slow uploads (issue 7). A free call (count_tokens) needs no balance;
	// its body still comes from the shared budget. A caller with an active
	// subscription may be paid for by it: its limits are checked once the
	// body names the model.
	if !c.ep.free && !c.hasSubscription() {
		if err := c.rl.canPay(c.r.Context(), c.key); err != nil {
			return err
		}
	}
	if c.body, err = c.readBody(); err != nil {
		return err
	}
	if c.meta, err = parseMeta(c.ep, c.r, c.body); err != nil {
		return err
	}
	if err := authorize(c.r, c.key, c.pinned, c.meta.model); err != nil {
		return err
	}
	c.bodyModel = c.meta.model
	return nil
}

// describe is the call's description for billing (docs/architecture.md,
// Money: who pays) when it is served as model.
//
// It fills *bill rather than returning the struct: a returned billing.Call
// is a temporary in the caller's frame per call site, and payers' frame is
// on the path of every call's deepest stack (docs/performance.md, "A
// stream's stack").
//
//go:noinline
func (c *call) describe(model string, bill *billing.Call) {
	opts := c.rl.Options.Current()
	price := c.snap.prices[model]
	*bill = billing.Call{
		UserID: c.key.user.ID, TokenID: c.key.token.ID, TokenLimited: !c.key.token.UnlimitedQuota,
		Price: price, Discount: pricing.Discount(c.snap.groupPrices, c.key.user.Group, model),
		PromptBound: c.promptBound(), MaxTokens: c.meta.maxTokens, Choices: c.meta.choices,
		Kind: billingKind(c.ep.usage), Multipart: c.ep.multipart,
		DefaultMaxTokens: opts.DefaultMaxTokens, Strict: !opts.BillingOverrunAllowed, OutputLimit: price.MaxOutputTokens,
		Username: c.key.user.Username, Group: c.key.user.Group, TokenName: c.key.token.Name, Model: model,
		RequestID: c.requestID, SessionKey: sessionKey(c.r), Stream: c.meta.stream, Start: c.start,
	}
}

// promptBound is promptTokenBound of the body, computed once per call: a
// caller with subscriptions may be described to several payers.
func (c *call) promptBound() int64 {
	if c.prompt < 0 {
		c.prompt = promptTokenBound(c.body)
	}
	return c.prompt
}

// reserve asks payer to reserve for the described call. The balance payer
// holds the estimated cost, never less than the DefaultCompletionSize
// option's completion, priced like the real call; strict billing (the
// default) also refuses a call whose bounded cost the balance or key
// cannot cover, and caps an open completion at what the hold buys, so a
// settled cost never exceeds its hold. BillingOverrunAllowed restores the
// old rule: the worst overrun is one call (docs/decisions/relay-billing.md).
// The subscription payer reserves usage instead (plans.go).
func (c *call) reserve(payer billing.Payer, bill *billing.Call) (billing.Charge, error) {
	charge, err := payer.Reserve(c.r.Context(), bill)
	if err != nil {
		return billing.Charge{}, reserveRefusal(err)
	}
	return charge, nil
}

// reserveRefusal is the answer to a payer's refusal.
func reserveRefusal(err error) error {
	switch {
	case errors.Is(err, store.ErrUserQuota):
		return quotaExceeded(MsgUserQuota)
	case errors.Is(err, store.ErrTokenQuotaShort):
		return quotaExceeded(MsgTokenQuota) // quota left, less than the call needs
	case errors.Is(err, store.ErrTokenQuota):
		// A limited key with nothing left is exhausted (settlement sets
		// status 4 as it reaches zero), whether or not the cached row has
		// caught up: same answer as the status check.
		return quotaExceeded(MsgKeyExhausted)
	case errors.Is(err, billing.ErrOwnerUnavailable):
		// Cluster mode: this node holds too little of a balance another
		// node owns, and cannot reach it (docs/decisions/cluster-grants.md).
		e := errf(http.StatusServiceUnavailable, "server_error", "balance_owner_unavailable", MsgOwnerUnavailable)
		e.header = http.Header{"Retry-After": {"1"}}
		return e
	}
	return err
}

// billingKind is how the cost of an endpoint reporting usage as k depends
// on its completion.
func billingKind(k usageKind) billing.Kind {
	switch k {
	case usageChat:
		return billing.KindChat
	case usageResponses:
		return billing.KindResponses
	case usageEmbeddings:
		return billing.KindEmbeddings
	}
	return billing.KindOther
}

// attempt is one upstream request of a call and the answer it builds. The
// attempt code's receiver is named c like the call's: c.w, c.meta,
// c.charge … are the call's (embedded, read-only but for the attempts
// bookkeeping of keys and upstream requests), c.usage, c.channel … the
// attempt's own. forward returns the answering attempt's answer and
// settle takes it, so nothing an attempt learns about its answer is left
// on the call, and a failed attempt's is simply dropped.
type attempt struct {
	*call
	answer
}

// forward tries channels until one answers: the pinned one only, or up to
// 1 + RetryTimes candidates. A failure that reached the client is final.
// It returns the answer of the attempt that answered the client (none
// when no attempt did) with the call's error.
func (c *call) forward() (answer, error) {
	var triedBuf [4]int64
	tried := channelSet(triedBuf[:0])
	attempts := 1 + int(c.rl.Options.Current().RetryTimes)
	var last error
	for n := 0; n < attempts; {
		u := c.choose(tried)
		if u == nil {
			break
		}
		c.credFor = nil // the attempt takes the channel's next key
		a := attempt{call: c}
		err := a.dispatch(u)
		if err != nil && keyRetired(err) && !c.wrote() && keysLeft(u, c.spent) {
			// The key is retired, not the channel: its next key is tried,
			// which costs no attempt (there are finitely many keys).
		} else {
			tried = append(tried, u.ID)
			n++
		}
		c.recordOutcome(u, &a.answer, err)
		c.observeAttempt(u, &a.answer, err)
		if err == nil || c.wrote() {
			return a.answer, err
		}
		last = err // nothing reached the client: the attempt's answer bills nothing
		var fail *upstreamFailure
		if !errors.As(err, &fail) {
			break
		}
		c.logFailure(u, fail)
		c.logAttempt(u, fail)
		if !fail.retry {
			break
		}
	}
	if last == nil {
		return answer{}, errf(http.StatusServiceUnavailable, "server_error", "no_channel", msgNoChannelFmt, c.key.user.Group, c.meta.model)
	}
	var fail *upstreamFailure
	if errors.As(last, &fail) {
		return answer{}, fail.clientError()
	}
	return answer{}, last
}

// keyRetired reports whether err is an upstream failure that refused the
// channel's key. Its own function, so the variable errors.As moves to the
// heap is allocated only for a failed attempt.
func keyRetired(err error) bool {
	var refused *upstreamFailure
	return errors.As(err, &refused) && refused.keyRefused
}

// logFailure records why channel u failed: the status it answered, or the
// transport error's cause (refused, reset, timeout) when it answered none.
func (c *call) logFailure(u *upstream, fail *upstreamFailure) {
	attrs := []any{"channel", u.ID, "request_id", c.requestID}
	if fail.status != 0 {
		attrs = append(attrs, "status", fail.status)
	}
	attrs = append(attrs, "cause", fail.detail[:min(len(fail.detail), 512)], "retry", fail.retry)
	c.rl.Log.Warn("upstream failed", attrs...)
}

// channelSet is the channels a call tried: a handful at most (one per
// attempt), so a slice scanned beats a map, and is not a map literal in
// forward's frame (docs/performance.md, "A stream's stack").
type channelSet []int64

func (s channelSet) has(id int64) bool { return slices.Contains(s, id) }

// choose picks the next channel: the pinned one (once), or by priority and
// weight among the candidates not tried, not cooling down, able to speak
// this endpoint and whose breaker for the model is closed; those on which
// the caller alone cools down only when no other is left. A pin ignores
// cooldowns and breakers: an admin probing a channel wants it called.
func (c *call) choose(tried channelSet) *upstream {
	if c.pinned != 0 {
		u := c.snap.channels[c.pinned]
		if u == nil || tried.has(u.ID) || !c.serves(u) {
			return nil
		}
		return u
	}
	skip := func(u *upstream) bool {
		return tried.has(u.ID) || !c.serves(u) || c.rl.coolingDown(u) || c.rl.tripped(u, c.meta.model)
	}
	// A channel on which this caller's own failures cooled it down comes
	// last (breakers.go, callerCooling).
	if u := pick(c.tiers, func(u *upstream) bool { return skip(u) || c.callerCooling(u) }); u != nil {
		return u
	}
	return pick(c.tiers, skip)
}

// route checks, before anything is reserved, that this caller is offered
// model on this endpoint (docs/relay.md, Errors), and returns where it can
// go. It changes nothing: the hold phase (pay) asks it for each model a
// payer would serve the call as, and the call keeps the answer for the
// model it is served as. A model is not
// offered — 404 model_not_found, the message saying which — when it has no
// enabled price, or when the caller's group has no enabled channel for it:
// for this caller it does not exist, and no retry changes that. When the
// group's channels exist but none speaks the endpoint (embeddings on an
// Anthropic-only model) the answer is 400 unsupported_endpoint. Channels
// that exist and speak it but are cooling down or failing are a 5xx from
// forward: that is temporary. An admin's pin is not bound to the admin's
// group, but the pinned channel must be enabled, offer the model in some
// group, and speak the endpoint.
func (c *call) route(model string) (routing, error) {
	if _, ok := c.snap.prices[model]; !ok {
		return routing{}, modelNotFound(msgNoPriceFmt, model)
	}
	if c.pinned != 0 {
		u := c.snap.channels[c.pinned]
		if u == nil || !u.models[model] {
			return routing{}, errf(http.StatusBadRequest, "invalid_request_error", "channel_not_found", msgPinnedMissing, c.pinned)
		}
		if !c.serves(u) {
			return routing{}, unsupportedEndpoint(msgPinnedUnsupportedFmt, c.pinned, c.ep.path)
		}
		return routing{}, nil
	}
	tiers := c.snap.routes[groupModelKey(c.key.user.Group, model)]
	if len(tiers) == 0 {
		return routing{}, modelNotFound(msgNoChannelFmt, c.key.user.Group, model)
	}
	for _, t := range tiers {
		if slices.ContainsFunc(t.channels, c.serves) {
			return routing{tiers: tiers}, nil
		}
	}
	return routing{}, unsupportedEndpoint(msgUnsupportedFmt, c.key.user.Group, model, c.ep.path)
}

// serves reports whether channel u can serve this endpoint: chat calls go
// to every dialect by conversion, the rest only to channels that speak the
// OpenAI API natively.
func (c *call) serves(u *upstream) bool {
	return c.ep.chat || u.api == dialect.OpenAI
}

// settle gives the call's outcome, the answer a of the attempt that
// answered (an empty one when none did), to the payer that reserved for
// it: the exact usage is billed, or the reservation released when the call
// failed before any usage. It is the one place a call is charged, and it
// charges once: run settles, recover settles a panicked call that run did
// not, and whichever comes second does nothing (settled is set before the
// payer runs, so a panic inside it is not settled again). It never depends
// on the client's connection.
func (c *call) settle(a answer) {
	if c.settled {
		return
	}
	c.settled, c.out = true, a
	o := billing.Outcome{Usage: a.usage, Estimated: a.estimated}
	if a.channel != nil {
		o.ChannelID = a.channel.ID
	}
	c.charge.Payer.Settle(&c.bill, &c.charge, o)
}
