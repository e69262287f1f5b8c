package relay_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/store"
)

// errorRow is an error log (type 5) as GET /api/log/ shows it.
type errorRow struct {
	ID              int64  `json:"id"`
	Type            int    `json:"type"`
	UserID          int64  `json:"user_id"`
	Username        string `json:"username"`
	TokenName       string `json:"token_name"`
	ModelName       string `json:"model_name"`
	Group           string `json:"group"`
	Quota           int64  `json:"quota"`
	ChannelID       int64  `json:"channel_id"`
	RequestID       string `json:"request_id"`
	IsStream        bool   `json:"is_stream"`
	Status          int    `json:"status"`
	ErrorCode       string `json:"error_code"`
	Content         string `json:"content"`
	UpstreamMessage string `json:"upstream_message"`
}

// errorLogs lists the error logs c sees at path (an /api/log/ route) with
// the query q added to type=5, after every queued row was written.
func errorLogs(t *testing.T, e *apptest.Env, c *apptest.Client, path string, q url.Values) []errorRow {
	t.Helper()
	e.SettleAll()
	if q == nil {
		q = url.Values{}
	}
	q.Set("type", "5")
	q.Set("page_size", "100")
	var all []errorRow
	for p := 0; ; p++ {
		q.Set("p", apptest.Path("%d", p))
		var page []errorRow
		r := c.OK("GET", path+"?"+q.Encode(), nil)
		r.Decode(t, &page)
		all = append(all, page...)
		if len(page) == 0 || int64(len(all)) >= r.Total {
			return all
		}
	}
}

// clientError is the OpenAI error body a /v1 refusal carries.
func clientError(t *testing.T, r *apptest.V1) (code, message string) {
	t.Helper()
	var body struct {
		Error struct {
			Message string `json:"message"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	r.JSON(t, &body)
	return body.Error.Code, body.Error.Message
}

func hiBody() map[string]any {
	return map[string]any{"model": "gpt-test", "messages": []map[string]string{{"role": "user", "content": "hi"}}}
}

// A refusal after the key was identified leaves one error row with what the
// client got; a call with an unknown key leaves none.
func TestErrorLogRecordsARefusal(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	g.SetQuota(0)

	r := e.Call(g.Key, "POST", "/v1/chat/completions", hiBody(), "X-Request-Id", "req-over-quota")
	if r.Status < 400 {
		t.Fatalf("call with no balance answered %d %s", r.Status, r.Body)
	}
	code, msg := clientError(t, r)
	if bad := e.Call("sk-unknown-key", "POST", "/v1/chat/completions", hiBody()); bad.Status != http.StatusUnauthorized {
		t.Fatalf("unknown key answered %d", bad.Status)
	}

	rows := errorLogs(t, e, g.Root, "/api/log/", nil)
	if len(rows) != 1 {
		t.Fatalf("error rows = %+v, want the refusal only", rows)
	}
	row := rows[0]
	if row.Type != 5 || row.UserID != g.UserID || row.Username != "caller" || row.TokenName != "relay" ||
		row.Group != "default" || row.RequestID != "req-over-quota" || row.Status != r.Status ||
		row.ErrorCode != code || row.Content != msg || row.Quota != 0 || row.ChannelID != 0 || row.UpstreamMessage != "" {
		t.Fatalf("row = %+v, want the refusal %d %s %q of req-over-quota", row, r.Status, code, msg)
	}
	// The filters find it; other values do not.
	q := url.Values{"status": {apptest.Path("%d", r.Status)}, "error_code": {code}, "username": {"caller"}}
	if got := errorLogs(t, e, g.Root, "/api/log/", q); len(got) != 1 {
		t.Fatalf("filtered by status and code: %+v", got)
	}
	if got := errorLogs(t, e, g.Root, "/api/log/", url.Values{"status": {"599"}}); len(got) != 0 {
		t.Fatalf("status=599 matched %+v", got)
	}
	if got := errorLogs(t, e, g.Root, "/api/log/", url.Values{"error_code": {"no_such_code"}}); len(got) != 0 {
		t.Fatalf("error_code=no_such_code matched %+v", got)
	}
	g.Root.Fail("GET", "/api/log/?type=6", nil, http.StatusOK, "日志类型无效,可选 0(全部), 1(充值), 2(消费), 3(管理), 4(系统), 5(错误)")
	g.Root.Fail("GET", "/api/log/?status=1000", nil, http.StatusOK, "参数 status 必须是 0 到 999 之间的 HTTP 状态码")
	// The user sees their own.
	if got := errorLogs(t, e, g.User, "/api/log/self", nil); len(got) != 1 || got[0].RequestID != "req-over-quota" {
		t.Fatalf("user's own error rows = %+v", got)
	}
}

// An upstream 500 before another channel answers leaves one row for the
// failed attempt, with its channel, the upstream's status and its message
// without the channel key or anything looking like a secret. The user sees
// it without the channel and the upstream's message; stats and the
// dashboard count only the consume log.
func TestErrorLogRecordsAFailedAttemptWithoutSecrets(t *testing.T) {
	apptest.Parallel(t)
	f := newFleet(t, 10, 0)
	f.g.UpdateChannel(f.ids[0], map[string]any{"base_url": strings.Replace(f.ups[0].URL, "http://", "http://admin:hunter22@", 1)})
	leak := "boom: key upstream-key, Authorization: Bearer tok-12345678 sk-live-ABCDEF123456 " +
		"https://generativelanguage.googleapis.com/v1?key=AIzaSyA1234567890abcdef url http://admin:hunter22@host/ api_key=\"plainsecret1\""
	f.ups[0].Script(fakeupstream.Behavior{Status: http.StatusInternalServerError, ErrorMessage: leak})

	r := f.e.Call(f.g.Key, "POST", "/v1/chat/completions", hiBody(), "X-Request-Id", "req-retried")
	wantReply(t, r, "up1")

	rows := errorLogs(t, f.e, f.g.Root, "/api/log/", nil)
	if len(rows) != 1 {
		t.Fatalf("error rows = %+v, want one for the failed attempt", rows)
	}
	row := rows[0]
	if row.ChannelID != f.ids[0] || row.Status != http.StatusInternalServerError || row.RequestID != "req-retried" ||
		row.ErrorCode == "" || row.Content == "" || row.Quota != 0 || row.ModelName != "gpt-test" {
		t.Fatalf("attempt row = %+v", row)
	}
	if !strings.Contains(row.UpstreamMessage, "boom") {
		t.Fatalf("upstream message %q lost the upstream's text", row.UpstreamMessage)
	}
	for _, secret := range []string{"upstream-key", "tok-12345678", "sk-live-ABCDEF123456", "AIzaSyA1234567890abcdef", "hunter22", "plainsecret1"} {
		if strings.Contains(row.UpstreamMessage, secret) || strings.Contains(row.Content, secret) {
			t.Fatalf("row keeps %q: %+v", secret, row)
		}
	}

	mine := errorLogs(t, f.e, f.g.User, "/api/log/self", nil)
	if len(mine) != 1 || mine[0].ChannelID != 0 || mine[0].UpstreamMessage != "" || mine[0].Content != row.Content {
		t.Fatalf("user's view = %+v, want no channel, no upstream message", mine)
	}
	found := errorLogs(t, f.e, f.g.User, "/api/log/self/search", url.Values{"keyword": {"req-retried"}})
	if len(found) != 1 || found[0].ChannelID != 0 || found[0].UpstreamMessage != "" {
		t.Fatalf("user's search = %+v", found)
	}
	if got := errorLogs(t, f.e, f.g.Root, "/api/log/", url.Values{"channel": {apptest.Path("%d", f.ids[0])}}); len(got) != 1 {
		t.Fatalf("admin's channel filter: %+v", got)
	}

	// Stats and the dashboard count the one consumed call.
	consumed := f.g.ConsumeLogs()
	if len(consumed) != 1 {
		t.Fatalf("consume logs = %+v", consumed)
	}
	for _, path := range []string{"/api/log/self/stat", "/api/log/self/stat?type=5"} {
		var st struct {
			Quota        int64 `json:"quota"`
			RequestCount int64 `json:"request_count"`
		}
		f.g.User.OK("GET", path, nil).Decode(t, &st)
		if st.RequestCount != 1 || st.Quota != consumed[0].Quota {
			t.Fatalf("%s = %+v, want the consume log only (quota %d)", path, st, consumed[0].Quota)
		}
	}
	var st struct {
		RequestCount int64 `json:"request_count"`
	}
	f.g.Root.OK("GET", "/api/log/stat?type=5", nil).Decode(t, &st)
	if st.RequestCount != 1 {
		t.Fatalf("admin stat counts %d requests, want 1", st.RequestCount)
	}
	var days []struct {
		RequestCount int64 `json:"request_count"`
	}
	f.g.User.OK("GET", "/api/user/dashboard", nil).Decode(t, &days)
	if len(days) != 1 || days[0].RequestCount != 1 {
		t.Fatalf("dashboard = %+v, want one request", days)
	}
}

// A call every channel failed leaves one row per attempt and no second row
// repeating the last one.
func TestErrorLogOneRowPerFailedAttempt(t *testing.T) {
	apptest.Parallel(t)
	f := newFleet(t, 10, 0)
	f.ups[0].SetBehavior(fakeupstream.Behavior{Status: http.StatusInternalServerError})
	f.ups[1].SetBehavior(fakeupstream.Behavior{Status: http.StatusServiceUnavailable})

	r := f.chat("")
	if r.Status < 500 {
		t.Fatalf("all channels failing answered %d %s", r.Status, r.Body)
	}
	code, msg := clientError(t, r)
	rows := errorLogs(t, f.e, f.g.Root, "/api/log/", nil)
	if len(rows) != 2 {
		t.Fatalf("error rows = %+v, want one per attempt", rows)
	}
	byChannel := map[int64]errorRow{}
	for _, row := range rows {
		byChannel[row.ChannelID] = row
	}
	if byChannel[f.ids[0]].Status != 500 || byChannel[f.ids[1]].Status != 503 {
		t.Fatalf("rows = %+v, want 500 on channel %d and 503 on %d", rows, f.ids[0], f.ids[1])
	}
	if last := byChannel[f.ids[1]]; last.ErrorCode != code || last.Content != msg {
		t.Fatalf("last attempt %+v does not say what the client got (%s %q)", last, code, msg)
	}
}

// A stream broken after its 200 leaves a stream_broken row next to the
// call's consume log.
func TestErrorLogRecordsABrokenStream(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	up.SetBehavior(fakeupstream.Behavior{Chunks: 6, FailAfter: 2})
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	body := hiBody()
	body["stream"] = true
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", body); r.Status != http.StatusOK {
		t.Fatalf("stream answered %d", r.Status)
	}
	rows := errorLogs(t, e, g.Root, "/api/log/", nil)
	if len(rows) != 1 || rows[0].ErrorCode != "stream_broken" || rows[0].Status != 200 ||
		rows[0].ChannelID != g.ChannelID || !rows[0].IsStream || rows[0].UpstreamMessage == "" {
		t.Fatalf("error rows = %+v, want one stream_broken", rows)
	}
	if n := len(g.ConsumeLogs()); n != 1 {
		t.Fatalf("consume logs = %d, want 1", n)
	}
}

// The sweep deletes error rows older than ErrorLogRetentionDays, and
// nothing else; 0 keeps them.
func TestErrorLogRetentionSweep(t *testing.T) {
	apptest.Parallel(t)
	f := newFleet(t, 10, 0)
	f.ups[0].Script(fakeupstream.Behavior{Status: http.StatusInternalServerError})
	wantReply(t, f.chat(""), "up1")
	if n := len(errorLogs(t, f.e, f.g.Root, "/api/log/", nil)); n != 1 {
		t.Fatalf("error rows = %d, want 1", n)
	}
	ctx := context.Background()
	sweep := func(at time.Time) int64 {
		t.Helper()
		n, err := f.e.App.SweepErrorLogs(ctx, at)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := sweep(time.Now().Add(6 * 24 * time.Hour)); n != 0 {
		t.Fatalf("sweep within the 7 days deleted %d", n)
	}
	f.g.SetOption("ErrorLogRetentionDays", "0")
	if n := sweep(time.Now().Add(400 * 24 * time.Hour)); n != 0 {
		t.Fatalf("sweep with retention 0 deleted %d", n)
	}
	f.g.SetOption("ErrorLogRetentionDays", "7")
	if n := sweep(time.Now().Add(8 * 24 * time.Hour)); n != 1 {
		t.Fatalf("sweep after 8 days deleted %d, want the error row", n)
	}
	if n := len(errorLogs(t, f.e, f.g.Root, "/api/log/", nil)); n != 0 {
		t.Fatalf("error rows left: %d", n)
	}
	if n := len(f.g.ConsumeLogs()); n != 1 {
		t.Fatalf("consume logs = %d after the sweep, want 1 kept", n)
	}
	var all []json.RawMessage
	f.g.Root.OK("GET", "/api/log/?type=0&page_size=100", nil).Decode(t, &all)
	if len(all) == 0 {
		t.Fatal("the sweep deleted other logs")
	}
}

// 200 parallel failing calls all leave their row, while another user's
// calls keep succeeding.
func TestErrorLogParallelFailuresLandWithoutHurtingOthers(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	other := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, Username: "other", Model: "gpt-other"})
	g.SetQuota(0)

	const failing = 200
	var wg sync.WaitGroup
	fails := make(chan int, failing)
	for range failing {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fails <- e.Call(g.Key, "POST", "/v1/chat/completions", hiBody()).Status
		}()
	}
	okBody := map[string]any{"model": "gpt-other", "messages": []map[string]string{{"role": "user", "content": "hi"}}}
	for range 20 {
		if r := e.Call(other.Key, "POST", "/v1/chat/completions", okBody); r.Status != http.StatusOK {
			t.Fatalf("another user's call answered %d %s during the flood", r.Status, r.Body)
		}
	}
	wg.Wait()
	close(fails)
	for s := range fails {
		if s < 400 {
			t.Fatalf("a call without balance answered %d", s)
		}
	}
	rows := errorLogs(t, e, g.Root, "/api/log/", url.Values{"username": {"caller"}})
	if len(rows) != failing {
		t.Fatalf("error rows = %d, want %d", len(rows), failing)
	}
	if n := len(errorLogs(t, e, g.Root, "/api/log/", url.Values{"username": {"other"}})); n != 0 {
		t.Fatalf("the other user has %d error rows", n)
	}
	// The retention delete goes by small batches and takes error rows only.
	consumed := len(other.ConsumeLogs())
	n, err := e.App.Store.DeleteErrorLogsBefore(context.Background(), time.Now().Add(time.Hour).Unix(), 64)
	if err != nil || n != failing {
		t.Fatalf("batched delete = %d, %v; want %d", n, err, failing)
	}
	if left := len(other.ConsumeLogs()); left != consumed || consumed != 20 {
		t.Fatalf("consume logs %d before, %d after the delete; want 20 kept", consumed, left)
	}
}

// An upstream's refusal of the request (a 400) reaches the client as the
// upstream wrote it, or converted; either way it leaves one row with its
// channel and status, secrets removed.
func TestErrorLogRecordsAnUpstreamRefusal(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	up.SetBehavior(fakeupstream.Behavior{Status: http.StatusBadRequest, ErrorMessage: "prompt too long for sk-leak-ABCDEF123456"})
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	claude := fakeupstream.New(t)
	claude.SetBehavior(fakeupstream.Behavior{Status: http.StatusBadRequest, ErrorMessage: "max_tokens too large"})
	claudeID := g.AddChannel(apptest.ChannelSpec{URL: claude.URL, Type: 14, Name: "claude", Models: "claude-test"})
	g.Root.Do("POST", "/api/model_price/", map[string]any{"model_name": "claude-test", "input_price": 2, "output_price": 8})

	if r := e.Call(g.Key, "POST", "/v1/chat/completions", hiBody(), "X-Request-Id", "req-400"); r.Status != http.StatusBadRequest {
		t.Fatalf("upstream 400 answered %d %s", r.Status, r.Body)
	}
	body := map[string]any{"model": "claude-test", "messages": []map[string]string{{"role": "user", "content": "hi"}}}
	if r := e.Call(g.Key, "POST", "/v1/chat/completions", body, "X-Request-Id", "req-400-converted"); r.Status != http.StatusBadRequest {
		t.Fatalf("converted upstream 400 answered %d %s", r.Status, r.Body)
	}
	rows := errorLogs(t, e, g.Root, "/api/log/", nil)
	byID := map[string]errorRow{}
	for _, row := range rows {
		byID[row.RequestID] = row
	}
	if len(rows) != 2 {
		t.Fatalf("error rows = %+v, want one per call", rows)
	}
	if row := byID["req-400"]; row.ChannelID != g.ChannelID || row.Status != 400 || row.ErrorCode == "" ||
		!strings.Contains(row.Content, "prompt too long") || strings.Contains(row.Content+row.UpstreamMessage, "sk-leak") {
		t.Fatalf("passed-on refusal row = %+v", row)
	}
	if row := byID["req-400-converted"]; row.ChannelID != claudeID || row.Status != 400 || !strings.Contains(row.Content, "max_tokens too large") {
		t.Fatalf("converted refusal row = %+v", row)
	}
	for _, row := range errorLogs(t, e, g.User, "/api/log/self", nil) {
		if row.ChannelID != 0 || row.UpstreamMessage != "" {
			t.Fatalf("user's view shows the channel: %+v", row)
		}
	}
}

// A key that was found but is refused (disabled, expired, used up) is an
// identified caller: its refusal leaves a row for its owner, with the key's
// name, so "why does my key fail" has an answer in the user's own logs. The
// row holds the message in the language the client was answered in.
func TestErrorLogRecordsRefusedKeys(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	disabled := g.User.CreateToken(map[string]any{"name": "disabled", "unlimited_quota": true})
	g.User.OK("PUT", "/api/token/?status_only=1", map[string]any{"id": disabled.ID, "status": 2})
	expired := g.User.CreateToken(map[string]any{"name": "expired", "unlimited_quota": true})
	past := time.Now().Add(-time.Hour).Unix()
	e.SetToken(g.UserID, expired.ID, store.TokenPatch{ExpiredTime: &past})
	spent := g.User.CreateToken(map[string]any{"name": "spent", "unlimited_quota": true})
	exhausted := 4
	e.SetToken(g.UserID, spent.ID, store.TokenPatch{Status: &exhausted})
	g.SetOption("MessageLanguage", "en")

	want := map[string]struct {
		status  int
		code    string
		message string
	}{
		"disabled": {http.StatusUnauthorized, "invalid_api_key", "this API key is disabled"},
		"expired":  {http.StatusUnauthorized, "invalid_api_key", "this API key has expired"},
		"spent":    {http.StatusTooManyRequests, "insufficient_quota", "this API key's quota is used up"},
	}
	for name, key := range map[string]string{"disabled": disabled.Key, "expired": expired.Key, "spent": spent.Key} {
		r := e.Call(key, "POST", "/v1/chat/completions", hiBody(), "X-Request-Id", "req-"+name)
		if code, msg := clientError(t, r); r.Status != want[name].status || code != want[name].code || msg != want[name].message {
			t.Fatalf("%s key: %d %s %q, want %+v", name, r.Status, code, msg, want[name])
		}
	}
	rows := errorLogs(t, e, g.User, "/api/log/self", nil)
	if len(rows) != len(want) {
		t.Fatalf("user's error rows = %+v, want one per refused key", rows)
	}
	for _, row := range rows {
		w, ok := want[row.TokenName]
		if !ok || row.RequestID != "req-"+row.TokenName || row.Status != w.status || row.ErrorCode != w.code ||
			row.Content != w.message || row.UserID != g.UserID || row.ChannelID != 0 {
			t.Errorf("row %+v, want %+v for key %q", row, w, row.TokenName)
		}
	}
	if up.Count() != 0 {
		t.Errorf("refused keys reached the upstream %d times", up.Count())
	}
}

// A refusal of a model name no column can hold (a NUL, more than 191
// characters) is recorded with the name cleaned, and never costs another
// caller's row: on PostgreSQL the raw name failed its whole batch.
func TestErrorLogOfAnUnstorableModelName(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	up := fakeupstream.New(t)
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL})
	other, otherID := e.NewUser("other", 1)
	g.Root.OK("POST", "/api/topup", map[string]any{"user_id": otherID, "quota": 1_000_000})
	otherKey := other.CreateToken(map[string]any{"name": "other", "unlimited_quota": true}).Key

	models := []string{"bad\x00model", strings.Repeat("m", 300), "tab\tmodel"}
	for i, m := range models {
		body := map[string]any{"model": m, "messages": []map[string]string{{"role": "user", "content": "hi"}}}
		if r := e.Call(g.Key, "POST", "/v1/chat/completions", body, "X-Request-Id", apptest.Path("bad-%d", i)); r.Status != http.StatusNotFound {
			t.Fatalf("model %q: %d %s", m, r.Status, r.Body)
		}
	}
	body := map[string]any{"model": "no-such-model", "messages": []map[string]string{{"role": "user", "content": "hi"}}}
	if r := e.Call(otherKey, "POST", "/v1/chat/completions", body, "X-Request-Id", "other-call"); r.Status != http.StatusNotFound {
		t.Fatalf("other user's call: %d %s", r.Status, r.Body)
	}

	rows := errorLogs(t, e, g.Root, "/api/log/", nil)
	byID := map[string]errorRow{}
	for _, row := range rows {
		byID[row.RequestID] = row
	}
	if len(rows) != len(models)+1 || byID["other-call"].Username != "other" {
		t.Fatalf("error rows = %+v, want every refusal, the other user's too", rows)
	}
	for i := range models {
		row := byID[apptest.Path("bad-%d", i)]
		if strings.ContainsAny(row.ModelName, "\x00\t") || len([]rune(row.ModelName)) > 191 || row.ModelName == "" {
			t.Errorf("row of model %d stored model_name %q", i, row.ModelName)
		}
	}
}
