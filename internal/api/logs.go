package api

import (
	"net/http"
	"time"

	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/logtext"
	"github.com/modelgate/modelgate/internal/msgtext"
	"github.com/modelgate/modelgate/internal/store"
)

// Messages of the log endpoints.
const (
	MsgLogTypeInvalid        = "日志类型无效,可选 0(全部), 1(充值), 2(消费), 3(管理), 4(系统), 5(错误)"
	MsgLogStatusInvalid      = "参数 status 必须是 0 到 999 之间的 HTTP 状态码"
	MsgTargetTimestampNeeded = "target_timestamp 必须是大于 0 的 Unix 时间戳(秒)"
)

// dashboardDays is the window of the user dashboard: today (UTC) and the six
// days before it.
const dashboardDays = 7

// logView is a log record as the API shows it.
type logView struct {
	ID               int64  `json:"id"`
	UserID           int64  `json:"user_id"`
	CreatedAt        int64  `json:"created_at"`
	Type             int    `json:"type"`
	Content          string `json:"content"`
	Username         string `json:"username"`
	TokenName        string `json:"token_name"`
	ModelName        string `json:"model_name"`
	Group            string `json:"group"`
	Quota            int64  `json:"quota"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	CachedTokens     int64  `json:"cached_tokens"`
	// The call's cache writes, 5-minute and 1-hour; like cached_tokens (the
	// cache reads) they are part of prompt_tokens.
	CacheWriteTokens   int64  `json:"cache_write_tokens"`
	CacheWrite1hTokens int64  `json:"cache_write_1h_tokens"`
	ChannelID          int64  `json:"channel_id"`
	RequestID          string `json:"request_id"`
	ElapsedTime        int64  `json:"elapsed_time"`
	IsStream           bool   `json:"is_stream"`
	BillingSource      int    `json:"billing_source"`
	PlanID             int64  `json:"plan_id"`
	SessionKey         string `json:"session_key"`
	// Error logs (type 5) only; 0 and "" on other types.
	Status          int    `json:"status"`
	ErrorCode       string `json:"error_code"`
	UpstreamMessage string `json:"upstream_message"`
}

// viewLog shows l to a reader of lang: content is rendered at read time
// from the row's stored sentence (amounts in CNY, internal/logtext); a row
// of no known format, an old or imported one, is shown as stored.
func viewLog(lang msgtext.Lang, l *store.Log) logView {
	return logView{
		ID: l.ID, UserID: l.UserID, CreatedAt: l.CreatedAt, Type: l.Type, Content: logtext.Render(lang, l.Type, l.Content),
		Username: l.Username, TokenName: l.TokenName, ModelName: l.ModelName, Group: l.Group,
		Quota: l.Quota, PromptTokens: l.PromptTokens, CompletionTokens: l.CompletionTokens,
		CachedTokens: l.CachedTokens, CacheWriteTokens: l.CacheWriteTokens, CacheWrite1hTokens: l.CacheWrite1hTokens,
		ChannelID: l.ChannelID, RequestID: l.RequestID,
		ElapsedTime: l.ElapsedTime, IsStream: l.IsStream, BillingSource: l.BillingSource,
		PlanID: l.PlanID, SessionKey: l.SessionKey,
		Status: l.Status, ErrorCode: l.ErrorCode, UpstreamMessage: l.UpstreamMessage,
	}
}

// adminLogFilter reads the list filters of GET /api/log/: type,
// start_timestamp and end_timestamp (inclusive, 0 = open), and exact
// matches on model_name, username, token_name, channel, group, and, for
// error logs, status and error_code.
func adminLogFilter(r *http.Request) (store.LogFilter, error) {
	var f store.LogFilter
	var err error
	for _, p := range []struct {
		name string
		max  int
		dst  *string
	}{
		{"model_name", maxModelNameChars, &f.ModelName}, {"username", maxNameChars, &f.Username},
		{"token_name", maxNameChars, &f.TokenName}, {"group", maxNameChars, &f.Group},
		{"error_code", maxErrorCodeChars, &f.ErrorCode},
	} {
		if *p.dst, err = httpx.QueryText(r, p.name, p.max); err != nil {
			return f, err
		}
	}
	typ, err := httpx.QueryInt(r, "type", 0)
	if err != nil {
		return f, err
	}
	if typ < 0 || typ > store.LogError {
		return f, httpx.Fail(MsgLogTypeInvalid)
	}
	f.Type = int(typ)
	if f.Start, err = httpx.QueryInt(r, "start_timestamp", 0); err != nil {
		return f, err
	}
	if f.End, err = httpx.QueryInt(r, "end_timestamp", 0); err != nil {
		return f, err
	}
	status, err := httpx.QueryInt(r, "status", 0)
	if err != nil {
		return f, err
	}
	if status < 0 || status > 999 {
		return f, httpx.Fail(MsgLogStatusInvalid)
	}
	f.Status = int(status)
	f.ChannelID, err = httpx.QueryInt(r, "channel", 0)
	return f, err
}

// maxErrorCodeChars is the error_code column's length.
const maxErrorCodeChars = 64

// selfLogFilter is adminLogFilter restricted to the caller: username is
// replaced by the caller's user id and channel is ignored, so no query can
// reach another user's logs or probe which channel served a request.
func selfLogFilter(r *http.Request) (store.LogFilter, error) {
	f, err := adminLogFilter(r)
	f.Username, f.ChannelID = "", 0
	f.UserID = caller(r).ID
	return f, err
}

func (s *Server) listLogs(w http.ResponseWriter, r *http.Request) error {
	f, err := adminLogFilter(r)
	if err != nil {
		return err
	}
	return s.writeLogs(w, r, f, false)
}

func (s *Server) listSelfLogs(w http.ResponseWriter, r *http.Request) error {
	f, err := selfLogFilter(r)
	if err != nil {
		return err
	}
	return s.writeLogs(w, r, f, true)
}

func (s *Server) searchLogs(w http.ResponseWriter, r *http.Request) error {
	f, err := adminLogFilter(r)
	if err != nil {
		return err
	}
	if f.Keyword, err = searchKeyword(r); err != nil {
		return err
	}
	return s.writeLogs(w, r, f, false)
}

func (s *Server) searchSelfLogs(w http.ResponseWriter, r *http.Request) error {
	f, err := selfLogFilter(r)
	if err != nil {
		return err
	}
	if f.Keyword, err = searchKeyword(r); err != nil {
		return err
	}
	return s.writeLogs(w, r, f, true)
}

// writeLogs answers a page of logs. own is a user's view of their own logs:
// channel_id is 0 there, as on logs without a channel, since which upstream
// served a call is the operator's business, and so is an error log's
// upstream_message: the user sees in content the message their client got
// (docs/decisions/logs.md).
func (s *Server) writeLogs(w http.ResponseWriter, r *http.Request, f store.LogFilter, own bool) error {
	pg, err := page(r)
	if err != nil {
		return err
	}
	logs, total, err := s.Store.ListLogs(r.Context(), f, pg)
	if err != nil {
		return err
	}
	views := make([]logView, len(logs))
	lang := httpx.Lang(r)
	for i := range logs {
		views[i] = viewLog(lang, &logs[i])
		if own {
			views[i].ChannelID, views[i].UpstreamMessage = 0, ""
		}
	}
	return httpx.OKList(w, views, total)
}

// logStatView is the data of the stat endpoints: sums over consume logs.
type logStatView struct {
	Quota            int64 `json:"quota"`
	RequestCount     int64 `json:"request_count"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

func (s *Server) logStat(w http.ResponseWriter, r *http.Request) error {
	f, err := adminLogFilter(r)
	if err != nil {
		return err
	}
	return s.writeLogStat(w, r, f)
}

func (s *Server) selfLogStat(w http.ResponseWriter, r *http.Request) error {
	f, err := selfLogFilter(r)
	if err != nil {
		return err
	}
	return s.writeLogStat(w, r, f)
}

// writeLogStat sums consume logs only: the store ignores a type filter here
// (docs/decisions/logs.md).
func (s *Server) writeLogStat(w http.ResponseWriter, r *http.Request, f store.LogFilter) error {
	st, err := s.Store.LogStats(r.Context(), f)
	if err != nil {
		return err
	}
	return httpx.OK(w, logStatView{
		Quota: st.Quota, RequestCount: st.RequestCount,
		PromptTokens: st.PromptTokens, CompletionTokens: st.CompletionTokens,
	})
}

// deleteLogs removes every log created before target_timestamp; data is the
// number of rows deleted.
func (s *Server) deleteLogs(w http.ResponseWriter, r *http.Request) error {
	ts, err := httpx.QueryInt(r, "target_timestamp", 0)
	if err != nil || ts <= 0 {
		return httpx.Fail(MsgTargetTimestampNeeded)
	}
	n, err := s.Store.DeleteLogsBefore(r.Context(), ts)
	if err != nil {
		return err
	}
	return httpx.OK(w, n)
}

// usageView is one row of the dashboards: a model's consumption on a UTC day.
type usageView struct {
	Day              string `json:"day"`
	ModelName        string `json:"model_name"`
	RequestCount     int64  `json:"request_count"`
	Quota            int64  `json:"quota"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
}

// viewUsage formats rows for the user and admin dashboards; never nil, so
// an empty window is [] rather than null.
func viewUsage(rows []store.DayModelUsage) []usageView {
	views := make([]usageView, len(rows))
	for i, u := range rows {
		views[i] = usageView{
			Day: time.Unix(u.Day, 0).UTC().Format(time.DateOnly), ModelName: u.ModelName,
			RequestCount: u.RequestCount, Quota: u.Quota,
			PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
		}
	}
	return views
}

// utcDayStart is 00:00 UTC of the day t falls on.
func utcDayStart(t time.Time) int64 {
	sec := t.Unix()
	return sec - sec%86400
}

// userDashboard is the caller's consumption over the last seven UTC days
// (today included), per day and model.
func (s *Server) userDashboard(w http.ResponseWriter, r *http.Request) error {
	since := utcDayStart(time.Now()) - (dashboardDays-1)*86400
	rows, err := s.Store.UserUsageSince(r.Context(), caller(r).ID, since)
	if err != nil {
		return err
	}
	return httpx.OK(w, viewUsage(rows))
}
