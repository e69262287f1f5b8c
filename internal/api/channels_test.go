package api_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/channel"
	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/user"
)

// channelInfo is the part of a channel view tests read.
type channelInfo struct {
	ID           int64  `json:"id"`
	Type         int    `json:"type"`
	Name         string `json:"name"`
	HasKey       bool   `json:"has_key"`
	BaseURL      string `json:"base_url"`
	Models       string `json:"models"`
	Group        string `json:"group"`
	Priority     int64  `json:"priority"`
	Weight       int64  `json:"weight"`
	ModelMapping string `json:"model_mapping"`
	Status       int    `json:"status"`
	CreatedTime  int64  `json:"created_time"`
	TestTime     int64  `json:"test_time"`
	ResponseTime int64  `json:"response_time"`
	LastError    string `json:"last_error"`
}

func createChannel(t *testing.T, c *apptest.Client, body map[string]any) channelInfo {
	t.Helper()
	return apptest.OKData[channelInfo](c, "POST", "/api/channel/", body)
}

func getChannel(t *testing.T, c *apptest.Client, id int64) channelInfo {
	t.Helper()
	return apptest.OKData[channelInfo](c, "GET", apptest.Path("/api/channel/%d", id), nil)
}

func stringList(t *testing.T, c *apptest.Client, path string) []string {
	t.Helper()
	return apptest.OKData[[]string](c, "GET", path, nil)
}

// fakeUpstream is an upstream that records the credential it was sent.
type fakeUpstream struct {
	*httptest.Server
	mu    sync.Mutex
	auth  []string
	paths []string
}

func newFakeUpstream(t *testing.T, delay time.Duration, status int) *fakeUpstream {
	f := &fakeUpstream{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		f.paths = append(f.paths, r.URL.Path)
		f.mu.Unlock()
		time.Sleep(delay)
		w.WriteHeader(status)
		w.Write([]byte(`{"object":"list","data":[]}`))
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeUpstream) last() (auth, path string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.auth) == 0 {
		return "", ""
	}
	return f.auth[len(f.auth)-1], f.paths[len(f.paths)-1]
}

// closedURL is the address of a port nothing listens on.
func closedURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func TestChannelKeyIsWriteOnly(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	up := newFakeUpstream(t, 0, http.StatusOK)
	const key, key2 = "sk-upstream-secret-0001", "sk-upstream-secret-0002"
	noKey := func(what string, r *apptest.Response) {
		t.Helper()
		if strings.Contains(string(r.Raw), "sk-upstream-secret") || strings.Contains(string(r.Raw), `"key"`) {
			t.Fatalf("%s leaks the channel key: %s", what, r.Raw)
		}
	}
	r := root.OK("POST", "/api/channel/", map[string]any{"name": "main", "key": key, "base_url": up.URL, "models": "gpt-4o"})
	noKey("create", r)
	var ch channelInfo
	r.Decode(t, &ch)
	if !ch.HasKey {
		t.Fatalf("has_key = false after create with a key: %s", r.Raw)
	}
	path := apptest.Path("/api/channel/%d", ch.ID)
	noKey("get", root.OK("GET", path, nil))
	noKey("list", root.OK("GET", "/api/channel/", nil))
	noKey("search", root.OK("GET", "/api/channel/search?keyword=main", nil))
	noKey("test", root.OK("GET", apptest.Path("/api/channel/test/%d?model=gpt-4o", ch.ID), nil))
	if auth, p := up.last(); auth != "Bearer "+key || p != "/v1/chat/completions" {
		t.Fatalf("upstream got %q on %q, want the channel key on a chat completion", auth, p)
	}

	// An absent or empty key leaves the key as it was.
	noKey("update", root.OK("PUT", "/api/channel/", map[string]any{"id": ch.ID, "name": "renamed"}))
	noKey("update", root.OK("PUT", "/api/channel/", map[string]any{"id": ch.ID, "key": "  "}))
	root.OK("GET", apptest.Path("/api/channel/test/%d", ch.ID), nil)
	if auth, _ := up.last(); auth != "Bearer "+key {
		t.Fatalf("after updates without a key, upstream got %q", auth)
	}
	noKey("update", root.OK("PUT", "/api/channel/", map[string]any{"id": ch.ID, "key": key2}))
	root.OK("GET", apptest.Path("/api/channel/test/%d", ch.ID), nil)
	if auth, _ := up.last(); auth != "Bearer "+key2 {
		t.Fatalf("after a key change, upstream got %q", auth)
	}

	// A channel without a key says so and sends no credential.
	bare := createChannel(t, root, map[string]any{"name": "local", "base_url": up.URL, "models": "llama"})
	if bare.HasKey {
		t.Fatal("has_key = true without a key")
	}
	root.OK("GET", apptest.Path("/api/channel/test/%d", bare.ID), nil)
	if auth, _ := up.last(); auth != "" {
		t.Fatalf("keyless channel sent %q", auth)
	}
}

func TestChannelTestRecordsOutcome(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	up := newFakeUpstream(t, 30*time.Millisecond, http.StatusOK)
	ch := createChannel(t, root, map[string]any{"name": "slow", "key": "k-1", "base_url": up.URL + "/", "models": "m"})
	if ch.BaseURL != up.URL {
		t.Fatalf("base_url = %q, want the trailing slash stripped", ch.BaseURL)
	}
	var res struct {
		TimeMS     int64  `json:"time_ms"`
		StatusCode int    `json:"status_code"`
		Model      string `json:"model"`
	}
	before := time.Now().Unix()
	root.OK("GET", apptest.Path("/api/channel/test/%d", ch.ID), nil).Decode(t, &res)
	if res.StatusCode != http.StatusOK || res.TimeMS < 30 || res.Model != "m" {
		t.Fatalf("test result = %+v, want status 200, at least 30 ms, the channel's first model", res)
	}
	got := getChannel(t, root, ch.ID)
	if got.ResponseTime < 30 || got.TestTime < before || got.LastError != "" {
		t.Fatalf("after a successful test: %+v", got)
	}

	// A real call that the upstream refuses is a failed test: the status and
	// the upstream's words are recorded.
	refusing := newFakeUpstream(t, 0, http.StatusUnauthorized)
	bad := createChannel(t, root, map[string]any{"name": "bad", "key": "k-2", "base_url": refusing.URL, "models": "m"})
	r := root.Fail("GET", apptest.Path("/api/channel/test/%d", bad.ID), nil, http.StatusOK, "")
	if !strings.HasPrefix(r.Message, api.MsgChannelTestFailed) || !strings.Contains(r.Message, "401") {
		t.Fatalf("refused test message = %q", r.Message)
	}
	if got := getChannel(t, root, bad.ID); !strings.Contains(got.LastError, "401") {
		t.Fatalf("after a refused test: %+v", got)
	}

	// Unreachable: a closed port. The error is recorded, the earlier response
	// time is kept, and the key (here also in the URL) is not echoed.
	down := closedURL(t) + "/k-secret-in-path"
	dead := createChannel(t, root, map[string]any{"name": "dead", "key": "k-secret-in-path", "base_url": down, "models": "m"})
	r = root.Fail("GET", apptest.Path("/api/channel/test/%d", dead.ID), nil, http.StatusOK, "")
	if !strings.HasPrefix(r.Message, api.MsgChannelTestFailed) || strings.Contains(r.Message, "k-secret-in-path") {
		t.Fatalf("unreachable test message = %q", r.Message)
	}
	got = getChannel(t, root, dead.ID)
	if got.LastError == "" || got.TestTime < before || strings.Contains(got.LastError, "k-secret-in-path") {
		t.Fatalf("after an unreachable test: %+v", got)
	}

	// A later success clears the error.
	root.OK("PUT", "/api/channel/", map[string]any{"id": dead.ID, "base_url": up.URL})
	root.OK("GET", apptest.Path("/api/channel/test/%d", dead.ID), nil)
	if got = getChannel(t, root, dead.ID); got.LastError != "" || got.ResponseTime < 30 {
		t.Fatalf("after a test that succeeded: %+v", got)
	}
	root.Fail("GET", "/api/channel/test/999999", nil, http.StatusOK, api.MsgChannelNotFound)
}

// The test call goes through the channel's own dialect: an Anthropic
// channel gets a Messages call with its key in x-api-key, and a mapped model.
func TestChannelTestSpeaksTheDialect(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	up := fakeupstream.New(t)
	ch := createChannel(t, root, map[string]any{"type": 14, "name": "claude", "key": fakeupstream.DefaultKey,
		"base_url": up.URL, "models": "claude-x", "model_mapping": `{"claude-x":"claude-upstream"}`})
	root.OK("GET", apptest.Path("/api/channel/test/%d?model=claude-x", ch.ID), nil)
	last := up.LastRequest()
	if last.Path != "/v1/messages" || last.Key != fakeupstream.DefaultKey || last.Model != "claude-upstream" {
		t.Fatalf("upstream got %s with key %q for model %q", last.Path, last.Key, last.Model)
	}
}

func TestChannelDefaults(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	ch := createChannel(t, root, map[string]any{"name": " plain ", "models": " a , b,a,, "})
	want := channelInfo{ID: ch.ID, Type: channel.TypeOpenAI, Name: "plain", BaseURL: "https://api.openai.com",
		Models: "a,b", Group: "default", Weight: 1, Status: channel.StatusEnabled, CreatedTime: ch.CreatedTime}
	if ch != want || ch.CreatedTime == 0 {
		t.Fatalf("created = %+v, want %+v", ch, want)
	}
	for typ, url := range map[int]string{14: "https://api.anthropic.com", 24: "https://generativelanguage.googleapis.com"} {
		if ch := createChannel(t, root, map[string]any{"type": typ, "name": "p", "models": "m"}); ch.BaseURL != url {
			t.Errorf("type %d base_url = %q, want %q", typ, ch.BaseURL, url)
		}
	}
	// Weight 0 is kept (not the column default), and a status can be set.
	ch = createChannel(t, root, map[string]any{"name": "z", "models": "m", "weight": 0, "priority": -2, "status": 2,
		"group": "vip, default", "model_mapping": `{"m":"m-2024"}`})
	if got := getChannel(t, root, ch.ID); got.Weight != 0 || got.Priority != -2 || got.Status != 2 ||
		got.Group != "vip,default" || got.ModelMapping != `{"m":"m-2024"}` {
		t.Fatalf("stored = %+v", got)
	}
}

func TestChannelValidationChangesNothing(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	userC, _ := e.NewUser("val", user.RoleUser)
	root.OK("POST", "/api/model_price/", map[string]any{"model_name": "gpt-4o", "input_price": 1, "output_price": 2})
	ch := createChannel(t, root, map[string]any{"name": "keep", "key": "k", "models": "gpt-4o", "group": "default"})
	before := root.OK("GET", apptest.Path("/api/channel/%d", ch.ID), nil).Raw

	bad := []struct {
		name string
		body map[string]any
		msg  string
	}{
		{"type", map[string]any{"type": 99}, channel.MsgTypeInvalid},
		{"type 0", map[string]any{"type": 0}, channel.MsgTypeInvalid},
		{"url scheme", map[string]any{"base_url": "ftp://example.com"}, channel.MsgBaseURLInvalid},
		{"url relative", map[string]any{"base_url": "example.com/v1"}, channel.MsgBaseURLInvalid},
		{"mapping", map[string]any{"model_mapping": `{"a":`}, channel.MsgModelMappingInvalid},
		{"mapping values", map[string]any{"model_mapping": `{"a":1}`}, channel.MsgModelMappingInvalid},
		{"weight", map[string]any{"weight": -1}, channel.MsgWeightNegative},
		{"models", map[string]any{"models": " , "}, channel.MsgModelsEmpty},
		{"name", map[string]any{"name": "  "}, channel.MsgNameLength},
		{"status", map[string]any{"status": 7}, channel.MsgStatusInvalid},
		{"group", map[string]any{"group": strings.Repeat("g", 40)}, user.MsgGroupInvalid},
	}
	for _, tt := range bad {
		create := map[string]any{"name": "new", "models": "claude-3", "group": "default"}
		update := map[string]any{"id": ch.ID}
		for k, v := range tt.body {
			create[k], update[k] = v, v
		}
		root.Fail("POST", "/api/channel/", create, http.StatusOK, tt.msg)
		root.Fail("PUT", "/api/channel/", update, http.StatusOK, tt.msg)
	}
	root.Fail("POST", "/api/channel/", "{bad json", http.StatusOK, httpx.MsgInvalidParams)
	root.Fail("PUT", "/api/channel/", map[string]any{"name": "x"}, http.StatusOK, api.MsgIDRequired)
	root.Fail("PUT", "/api/channel/", map[string]any{"id": 999999, "name": "x"}, http.StatusOK, api.MsgChannelNotFound)
	root.Fail("GET", "/api/channel/999999", nil, http.StatusOK, api.MsgChannelNotFound)
	root.Fail("DELETE", "/api/channel/999999", nil, http.StatusOK, api.MsgChannelNotFound)
	root.Fail("GET", "/api/channel/abc", nil, http.StatusOK, httpx.MsgInvalidID)

	if r := root.OK("GET", "/api/channel/", nil); r.Total != 1 {
		t.Fatalf("channels after failed creates = %d: %s", r.Total, r.Raw)
	}
	if after := root.OK("GET", apptest.Path("/api/channel/%d", ch.ID), nil).Raw; string(after) != string(before) {
		t.Fatalf("failed updates changed the channel:\n%s\n%s", before, after)
	}
	if got := stringList(t, userC, "/api/user/available_models"); !reflect.DeepEqual(got, []string{"gpt-4o"}) {
		t.Fatalf("available models after failed calls = %q", got)
	}
	if got := stringList(t, root, "/api/channel/models"); !reflect.DeepEqual(got, []string{"gpt-4o"}) {
		t.Fatalf("channel models after failed calls = %q", got)
	}
}

func TestAbilitiesFollowChannels(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	plain, _ := e.NewUser("plain", user.RoleUser)
	vip, vipID := e.NewUser("vipuser", user.RoleUser)
	root.OK("PUT", "/api/user/", map[string]any{"id": vipID, "group": "vip"})
	check := func(step string, want map[*apptest.Client][]string) {
		t.Helper()
		for c, models := range want {
			if got := stringList(t, c, "/api/user/available_models"); !reflect.DeepEqual(got, models) {
				t.Errorf("%s: available models = %q, want %q", step, got, models)
			}
		}
	}
	check("no channels", map[*apptest.Client][]string{plain: {}, vip: {}})
	// Only priced models are offered: a call of an unpriced one is refused
	// (model_not_found), so listing it would mislead.
	for _, m := range []string{"gpt-4o", "gpt-4o-mini", "claude-3"} {
		root.OK("POST", "/api/model_price/", map[string]any{"model_name": m, "input_price": 1, "output_price": 2})
	}
	createChannel(t, root, map[string]any{"name": "unpriced", "models": "no-price-model", "group": "default,vip"})
	check("unpriced model", map[*apptest.Client][]string{plain: {}, vip: {}})

	a := createChannel(t, root, map[string]any{"name": "a", "models": "gpt-4o-mini,gpt-4o", "group": "default,vip"})
	b := createChannel(t, root, map[string]any{"name": "b", "models": "claude-3", "group": "vip"})
	check("created", map[*apptest.Client][]string{plain: {"gpt-4o", "gpt-4o-mini"}, vip: {"claude-3", "gpt-4o", "gpt-4o-mini"}})

	root.OK("PUT", "/api/channel/", map[string]any{"id": a.ID, "models": "gpt-4o"})
	check("models changed", map[*apptest.Client][]string{plain: {"gpt-4o"}, vip: {"claude-3", "gpt-4o"}})

	root.OK("PUT", "/api/channel/", map[string]any{"id": b.ID, "group": "default"})
	check("group changed", map[*apptest.Client][]string{plain: {"claude-3", "gpt-4o"}, vip: {"gpt-4o"}})

	root.OK("PUT", "/api/channel/", map[string]any{"id": a.ID, "status": channel.StatusDisabled})
	check("disabled", map[*apptest.Client][]string{plain: {"claude-3"}, vip: {}})
	// A disabled channel's models are still known to admins, priced or not.
	if got := stringList(t, root, "/api/channel/models"); !reflect.DeepEqual(got, []string{"claude-3", "gpt-4o", "no-price-model"}) {
		t.Fatalf("channel models = %q", got)
	}
	root.OK("PUT", "/api/channel/", map[string]any{"id": a.ID, "status": channel.StatusEnabled})
	check("enabled again", map[*apptest.Client][]string{plain: {"claude-3", "gpt-4o"}, vip: {"gpt-4o"}})

	root.OK("DELETE", apptest.Path("/api/channel/%d", b.ID), nil)
	check("deleted", map[*apptest.Client][]string{plain: {"gpt-4o"}, vip: {"gpt-4o"}})
	root.Fail("GET", apptest.Path("/api/channel/%d", b.ID), nil, http.StatusOK, api.MsgChannelNotFound)
	if got := stringList(t, root, "/api/channel/models"); !reflect.DeepEqual(got, []string{"gpt-4o", "no-price-model"}) {
		t.Fatalf("channel models after delete = %q", got)
	}
}

func TestChannelListAndSearch(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	first := createChannel(t, root, map[string]any{"name": "alpha", "models": "gpt-4o", "base_url": "https://one.example.com"})
	second := createChannel(t, root, map[string]any{"name": "beta", "models": "claude-3,gpt-4o", "type": 14})
	third := createChannel(t, root, map[string]any{"name": "gamma_7%", "models": "gemini-pro", "type": 24})

	ids := func(path string) ([]int64, int64) {
		t.Helper()
		var list []channelInfo
		r := root.OK("GET", path, nil)
		r.Decode(t, &list)
		out := make([]int64, len(list))
		for i, c := range list {
			out[i] = c.ID
		}
		return out, r.Total
	}
	tests := []struct {
		path  string
		want  []int64
		total int64
	}{
		{"/api/channel/", []int64{third.ID, second.ID, first.ID}, 3},
		{"/api/channel/?p=0&page_size=2", []int64{third.ID, second.ID}, 3},
		{"/api/channel/?p=1&page_size=2", []int64{first.ID}, 3},
		{"/api/channel/search?keyword=alp", []int64{first.ID}, 1},
		{"/api/channel/search?keyword=one.example", []int64{first.ID}, 1},
		{"/api/channel/search?keyword=gpt-4o", []int64{second.ID, first.ID}, 2},
		{"/api/channel/search?keyword=7%25", []int64{third.ID}, 1},
		{"/api/channel/search?keyword=%25", []int64{third.ID}, 1}, // % is literal
		{"/api/channel/search?keyword=_", []int64{third.ID}, 1},   // _ is literal
		{apptest.Path("/api/channel/search?keyword=%d", second.ID), []int64{second.ID}, 1},
		{"/api/channel/search?keyword=nothing", []int64{}, 0},
	}
	for _, tt := range tests {
		got, total := ids(tt.path)
		if !reflect.DeepEqual(got, tt.want) || total != tt.total {
			t.Errorf("%s = %v (total %d), want %v (total %d)", tt.path, got, total, tt.want, tt.total)
		}
	}
	want := []string{"claude-3", "gemini-pro", "gpt-4o"}
	if got := stringList(t, root, "/api/channel/models"); !reflect.DeepEqual(got, want) {
		t.Fatalf("channel models = %q, want %q", got, want)
	}
}

func TestGroupList(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	// Seeded group prices and root's own group.
	if got := stringList(t, root, "/api/group/"); !reflect.DeepEqual(got, []string{"default", "svip", "vip"}) {
		t.Fatalf("groups at start = %q", got)
	}
	_, uid := e.NewUser("teamer", user.RoleUser)
	root.OK("PUT", "/api/user/", map[string]any{"id": uid, "group": "team-a"})
	ch := createChannel(t, root, map[string]any{"name": "edge", "models": "m", "group": "edge,vip"})
	want := []string{"default", "edge", "svip", "team-a", "vip"}
	if got := stringList(t, root, "/api/group/"); !reflect.DeepEqual(got, want) {
		t.Fatalf("groups = %q, want %q", got, want)
	}
	root.OK("DELETE", apptest.Path("/api/channel/%d", ch.ID), nil)
	root.OK("DELETE", apptest.Path("/api/user/%d", uid), nil)
	if got := stringList(t, root, "/api/group/"); !reflect.DeepEqual(got, []string{"default", "svip", "vip"}) {
		t.Fatalf("groups after deleting the channel and the user = %q", got)
	}
}

func TestChannelRoleBoundary(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	ch := createChannel(t, root, map[string]any{"name": "c", "key": "k", "models": "m", "base_url": closedURL(t)})
	userC, _ := e.NewUser("plainuser", user.RoleUser)
	admin, _ := e.NewUser("chanadmin", user.RoleAdmin)
	calls := []struct {
		method, path string
		body         any
	}{
		{"GET", "/api/channel/", nil},
		{"GET", "/api/channel/search?keyword=c", nil},
		{"GET", "/api/channel/models", nil},
		{"GET", apptest.Path("/api/channel/test/%d", ch.ID), nil},
		{"GET", apptest.Path("/api/channel/%d", ch.ID), nil},
		{"POST", "/api/channel/", map[string]any{"name": "u", "models": "m"}},
		{"PUT", "/api/channel/", map[string]any{"id": ch.ID, "name": "u"}},
		{"DELETE", apptest.Path("/api/channel/%d", ch.ID), nil},
		{"GET", "/api/group/", nil},
	}
	for _, c := range calls {
		userC.Fail(c.method, c.path, c.body, http.StatusOK, api.MsgNoPermission)
	}
	e.Client().Fail("GET", "/api/user/available_models", nil, http.StatusUnauthorized, api.MsgNotLoggedIn)
	if got := getChannel(t, root, ch.ID); got.Name != "c" {
		t.Fatalf("a user's calls changed the channel: %+v", got)
	}
	// Admins may do all of it; the test call may fail (no upstream), but
	// it is not refused.
	for _, c := range calls {
		if r := admin.Do(c.method, c.path, c.body); r.Message == api.MsgNoPermission {
			t.Fatalf("admin refused %s %s", c.method, c.path)
		}
	}
}
