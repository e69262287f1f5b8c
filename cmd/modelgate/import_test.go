package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakecloud"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/channel"
	"github.com/modelgate/modelgate/internal/config"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/store/storetest"
	"github.com/ncruces/go-sqlite3/gormlite"
	"golang.org/x/crypto/bcrypt"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// The source databases below are built from one-api's (v0.6.x) and
// new-api's (v0.9.x) GORM models: the tables and columns the importer reads,
// with their types and defaults.

// srcDB is a source database under construction.
type srcDB struct {
	t      *testing.T
	db     *gorm.DB
	engine string // sqlite, mysql, postgres
	arg    string // the SOURCE argument
}

func openSrc(t *testing.T, engine string) *srcDB {
	t.Helper()
	s := &srcDB{t: t, engine: engine}
	var d gorm.Dialector
	switch engine {
	case "sqlite":
		s.arg = filepath.Join(t.TempDir(), "one-api.db")
		d = gormlite.Open("file:" + s.arg)
	default:
		for _, e := range storetest.Engines() {
			if e.Name == engine {
				s.arg = e.FreshDSN(t)
			}
		}
		if s.arg == "" {
			t.Skipf("%s: set MODELGATE_TEST_%s_DSN", engine, strings.ToUpper(map[string]string{"mysql": "mysql", "postgres": "postgres"}[engine]))
		}
		if engine == "mysql" {
			d = mysql.Open(s.arg)
		} else {
			d = postgres.Open(s.arg)
		}
	}
	db, err := gorm.Open(d, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	})
	s.db = db
	return s
}

// ddl writes a statement with `q` quoting reserved names and `TS` the
// engine's nullable time type.
func (s *srcDB) ddl(stmt string) {
	s.t.Helper()
	q := map[string]string{"postgres": `"`}[s.engine]
	if q == "" {
		q = "`"
	}
	ts := map[string]string{"postgres": "timestamp", "mysql": "datetime(3)", "sqlite": "datetime"}[s.engine]
	stmt = strings.NewReplacer("`", q, "TS", ts).Replace(stmt)
	if err := s.db.Exec(stmt).Error; err != nil {
		s.t.Fatalf("%s: %v", stmt, err)
	}
}

func (s *srcDB) insert(table string, cols map[string]any) {
	s.t.Helper()
	if err := s.db.Table(table).Create(cols).Error; err != nil {
		s.t.Fatalf("insert %s: %v", table, err)
	}
}

// schema creates the tables of system.
func (s *srcDB) schema(system string) {
	newAPI := system == "new-api"
	extra := func(oneAPI, newAPICols string) string {
		if newAPI {
			return newAPICols
		}
		return oneAPI
	}
	s.ddl("CREATE TABLE users (id bigint PRIMARY KEY, username varchar(191) UNIQUE, password varchar(255) NOT NULL, " +
		"display_name varchar(191), role bigint DEFAULT 1, status bigint DEFAULT 1, email varchar(191), github_id varchar(191), " +
		"wechat_id varchar(191), access_token char(32) UNIQUE, quota bigint DEFAULT 0, used_quota bigint DEFAULT 0, " +
		"request_count bigint DEFAULT 0, `group` varchar(64) DEFAULT 'default', aff_code varchar(32) UNIQUE, inviter_id bigint" +
		extra(", lark_id varchar(191), oidc_id varchar(191)", ", telegram_id varchar(64), deleted_at TS NULL, setting text, remark varchar(255)") + ")")
	s.ddl("CREATE TABLE tokens (id bigint PRIMARY KEY, user_id bigint, `key` char(48) UNIQUE, status bigint DEFAULT 1, " +
		"name varchar(191), created_time bigint, accessed_time bigint, expired_time bigint DEFAULT -1, remain_quota bigint DEFAULT 0, " +
		"unlimited_quota boolean DEFAULT false, used_quota bigint DEFAULT 0" +
		extra(", models text, subnet varchar(255) DEFAULT ''",
			", model_limits_enabled boolean DEFAULT false, model_limits varchar(1024) DEFAULT '', allow_ips text, `group` varchar(64) DEFAULT '', deleted_at TS NULL") + ")")
	s.ddl("CREATE TABLE channels (id bigint PRIMARY KEY, type bigint DEFAULT 0, `key` text, status bigint DEFAULT 1, " +
		"name varchar(191), weight bigint DEFAULT 0, created_time bigint, test_time bigint, response_time bigint, " +
		"base_url varchar(255) DEFAULT '', other text, balance double precision, balance_updated_time bigint, models text, " +
		"`group` varchar(64) DEFAULT 'default', used_quota bigint DEFAULT 0, model_mapping text, priority bigint DEFAULT 0" +
		extra(", config text, system_prompt text", ", tag varchar(191), setting text, param_override text, auto_ban bigint DEFAULT 1, other_info text") + ")")
	s.ddl("CREATE TABLE redemptions (id bigint PRIMARY KEY, user_id bigint, `key` char(32) UNIQUE, status bigint DEFAULT 1, " +
		"name varchar(191), quota bigint DEFAULT 100, created_time bigint, redeemed_time bigint" +
		extra("", ", used_user_id bigint, deleted_at TS NULL, expired_time bigint") + ")")
	s.ddl("CREATE TABLE options (`key` varchar(191) PRIMARY KEY, value text)")
	s.ddl("CREATE TABLE logs (id bigint PRIMARY KEY, user_id bigint, created_at bigint, type bigint, content text, " +
		"username varchar(191) DEFAULT '', token_name varchar(191) DEFAULT '', model_name varchar(191) DEFAULT '', quota bigint DEFAULT 0, " +
		"prompt_tokens bigint DEFAULT 0, completion_tokens bigint DEFAULT 0, channel_id bigint, is_stream boolean DEFAULT false" +
		extra(", elapsed_time bigint DEFAULT 0, request_id varchar(64) DEFAULT ''", ", use_time bigint DEFAULT 0, token_id bigint DEFAULT 0, `group` varchar(64), other text, ip varchar(64)") + ")")
}

func hash(t *testing.T, pw string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

// Keys of the fixture: 48 alphanumeric characters, as both systems make.
var (
	keyUnlimited = key48("Unlimited")
	keyLimited   = key48("Limited")
	keyExpired   = key48("Expired")
	keyDisabled  = key48("Disabled")
	keyModels    = key48("Models")
	keySubnet    = key48("Subnet")
	// one-api before v0.6 made keys of 32 hex characters (a UUID).
	keyLegacy = "3f2a9c1e4b5d47a8b9c0d1e2f3a4b5c6"
)

// Codes as one-api makes them: 32 lowercase hex characters.
const (
	codeUnused = "0123456789abcdef0123456789abcdef"
	codeUsed   = "fedcba9876543210fedcba9876543210"
)

func key48(s string) string { return s + strings.Repeat("x", 48-len(s)) }

// fixture fills a source of system with users, keys of each kind, channels
// of each mapped type pointing at up, ratios and codes.
func (s *srcDB) fixture(system, upURL string) {
	t := s.t
	newAPI := system == "new-api"
	s.schema(system)
	now := time.Now().Unix()
	s.insert("users", map[string]any{"id": 1, "username": "root", "password": hash(t, apptest.RootPassword), "display_name": "Root User",
		"role": 100, "status": 1, "quota": 0, "group": "default", "aff_code": "rootaff1", "access_token": "0123456789abcdef0123456789abcdef"})
	s.insert("users", map[string]any{"id": 7, "username": "alice", "password": hash(t, "alice-old-pw"), "display_name": "Alice",
		"role": 1, "status": 1, "email": "alice@example.com", "quota": 123456789, "used_quota": 5000, "group": "vip", "aff_code": "aliceaf1"})
	s.insert("users", map[string]any{"id": 9, "username": "bob", "password": hash(t, "bob-old-pw"), "role": 10, "status": 2,
		"quota": 1000, "group": "default", "aff_code": "bobaff01"})
	tok := func(id int64, key string, cols map[string]any) {
		row := map[string]any{"id": id, "user_id": 7, "key": key, "status": 1, "name": "k" + fmt.Sprint(id), "created_time": now,
			"accessed_time": now, "expired_time": -1, "remain_quota": 0, "unlimited_quota": false}
		for k, v := range cols {
			row[k] = v
		}
		s.insert("tokens", row)
	}
	tok(11, keyUnlimited, map[string]any{"unlimited_quota": true})
	tok(12, keyLimited, map[string]any{"remain_quota": 987654})
	tok(13, keyExpired, map[string]any{"unlimited_quota": true, "expired_time": now - 3600})
	tok(14, keyDisabled, map[string]any{"unlimited_quota": true, "status": 2})
	if newAPI {
		tok(15, keyModels, map[string]any{"unlimited_quota": true, "model_limits_enabled": true, "model_limits": "gpt-4o-mini"})
		tok(16, keySubnet, map[string]any{"unlimited_quota": true, "allow_ips": "10.0.0.0/8\n192.168.1.1"})
	} else {
		tok(15, keyModels, map[string]any{"unlimited_quota": true, "models": "gpt-4o-mini"})
		tok(16, keySubnet, map[string]any{"unlimited_quota": true, "subnet": "10.0.0.0/8,192.168.1.1"})
		tok(17, keyLegacy, map[string]any{"unlimited_quota": true}) // made before v0.6, kept by upgrades
	}
	ch := func(id int64, typ int, cols map[string]any) {
		row := map[string]any{"id": id, "type": typ, "key": fmt.Sprintf("upkey-%d", id), "status": 1, "name": fmt.Sprintf("ch%d", id),
			"weight": 1, "created_time": now, "base_url": upURL, "models": "x", "group": "default", "priority": 0, "model_mapping": ""}
		for k, v := range cols {
			row[k] = v
		}
		s.insert("channels", row)
	}
	ch(21, 1, map[string]any{"models": "gpt-4o-mini,my-model", "group": "default,vip", "priority": 5, "weight": 3,
		"model_mapping": `{"my-model":"gpt-4o-mini"}`})
	ch(22, 14, map[string]any{"models": "claude-3-5-sonnet-20241022", "group": "vip", "priority": 2})
	ch(23, 24, map[string]any{"models": "gemini-1.5-pro", "group": "vip"})
	deepseek, vertex := 36, 42
	if newAPI {
		deepseek, vertex = 43, 41
	}
	ch(24, deepseek, map[string]any{"base_url": "", "models": "deepseek-chat", "status": 2})
	ch(25, 3, map[string]any{"base_url": "https://res.openai.azure.com", "models": "gpt-4o", "other": "2024-10-21"})
	// one-api keeps Bedrock's credentials and Vertex's service account and
	// region in config; new-api in key and other.
	account := fakecloud.NewGoogleTokens(s.t).NewServiceAccount(s.t, "gateway", "proj-1").JSON
	if newAPI {
		ch(26, 33, map[string]any{"base_url": "", "models": "anthropic.claude-3-5-sonnet-20240620-v1:0",
			"key": "AKIAIOSFODNN7EXAMPLE|wJalrXUtnFEMI/K7MDENG|us-east-1"})
		ch(27, vertex, map[string]any{"base_url": "", "models": "gemini-1.5-flash", "key": account,
			"other": `{"default":"europe-west4"}`})
	} else {
		ch(26, 33, map[string]any{"base_url": "", "models": "anthropic.claude-3-5-sonnet-20240620-v1:0", "key": "",
			"config": `{"ak":"AKIAIOSFODNN7EXAMPLE","sk":"wJalrXUtnFEMI/K7MDENG","region":"us-east-1"}`})
		accountJSON, _ := json.Marshal(account)
		ch(27, vertex, map[string]any{"base_url": "", "models": "gemini-1.5-flash", "key": "",
			"config": `{"region":"europe-west4","vertex_ai_adc":` + string(accountJSON) + `}`})
	}
	ch(28, 16, map[string]any{"base_url": "", "models": "glm-4"}) // Zhipu: no OpenAI dialect under /v1
	s.insert("redemptions", map[string]any{"id": 31, "user_id": 1, "key": codeUnused, "status": 1, "name": "gift", "quota": 500000, "created_time": now})
	s.insert("redemptions", map[string]any{"id": 32, "user_id": 1, "key": codeUsed, "status": 3, "name": "gift", "quota": 500000,
		"created_time": now, "redeemed_time": now})
	opt := func(k, v string) { s.insert("options", map[string]any{"key": k, "value": v}) }
	opt("ModelRatio", `{"gpt-4o-mini": 0.075, "my-model": 1, "llama3-8b-8192(33)": 0.15}`)
	opt("CompletionRatio", `{"gpt-4o-mini": 4}`)
	opt("GroupRatio", `{"default": 1, "vip": 0.8}`)
	opt("SystemName", "Old Gateway")
	opt("RegisterEnabled", "false")
	if newAPI {
		opt("QuotaPerUnit", "1000000")
	}
	for i := range 3 {
		s.insert("logs", map[string]any{"id": 100 + i, "user_id": 7, "created_at": now - 100 + int64(i), "type": 2, "content": "call",
			"username": "alice", "token_name": "k11", "model_name": "gpt-4o-mini", "quota": 1000, "prompt_tokens": 10,
			"completion_tokens": 5, "channel_id": 21})
	}
}

// expected are the converted amounts at RATE 7.3: one-api counts 500,000
// quota per USD (×14.6), the new-api fixture 1,000,000 (×7.3).
var expected = map[string]struct{ alice, limited, code int64 }{
	"one-api": {1_802_469_119, 14_419_748, 7_300_000}, // 123456789×14.6 = 1802469119.4; 987654×14.6 = 14419748.4
	"new-api": {901_234_560, 7_209_874, 3_650_000},    // 123456789×7.3 = 901234559.7; 987654×7.3 = 7209874.2
}

func importEnv(cfg config.Config) func(string) string {
	return func(k string) string {
		return map[string]string{"DATA_DIR": cfg.DataDir, "SQL_DSN": cfg.SQLDSN}[k]
	}
}

func TestImportOneAPIAndNewAPI(t *testing.T) {
	apptest.Parallel(t)
	for _, system := range []string{"one-api", "new-api"} {
		t.Run(system, func(t *testing.T) { testImport(t, system) })
	}
}

func testImport(t *testing.T, system string) {
	up := fakeupstream.New(t, fakeupstream.WithKey("upkey-21", "upkey-22", "upkey-23"))
	src := openSrc(t, "sqlite")
	src.fixture(system, up.URL)
	cfg := apptest.Config(t)
	ctx := context.Background()

	// A dry run writes nothing.
	var out, progress bytes.Buffer
	if err := runImport(ctx, []string{system, src.arg, "--cny-per-usd", "7.3", "--dry-run", "--logs"}, importEnv(cfg), &out, &progress); err != nil {
		t.Fatalf("dry run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "dry run") || !strings.Contains(out.String(), "users          3 of 3") {
		t.Fatalf("dry-run report:\n%s", out.String())
	}
	out.Reset()
	if err := runImport(ctx, []string{system, src.arg, "--cny-per-usd", "7.3", "--logs"}, importEnv(cfg), &out, &progress); err != nil {
		t.Fatalf("import: %v\n%s", err, out.String())
	}
	report := out.String()
	nKeys := map[string]int{"one-api": 7, "new-api": 6}[system]
	for _, want := range []string{fmt.Sprintf("keys           %d of %d", nKeys, nKeys), "channels       8 of 8", "codes          2 of 2", "logs           3 of 3",
		"channel 28: source type 16: upstream does not speak"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if !strings.Contains(progress.String(), "logs: 3 of 3") {
		t.Errorf("progress: %q", progress.String())
	}
	// A second import into the same database is refused, naming why.
	out.Reset()
	err := runImport(ctx, []string{system, src.arg, "--cny-per-usd", "7.3"}, importEnv(cfg), &out, &progress)
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("second import: %v", err)
	}

	env := apptest.Start(t, cfg)
	exp := expected[system]
	// Each user logs in with the password they had.
	root := env.Root()
	alice := env.Client()
	alice.Login("alice", "alice-old-pw")
	bob := env.Client()
	// bob was disabled there: his old password is right, his status refuses him.
	bob.Fail("POST", "/api/user/login", map[string]string{"username": "bob", "password": "bob-old-pw"}, 200, "用户已被封禁")
	bob.Fail("POST", "/api/user/login", map[string]string{"username": "bob", "password": "wrong-pw-1"}, 200, "用户名或密码错误,或用户已被封禁")
	var self apptest.UserInfo
	alice.OK("GET", "/api/user/self", nil).Decode(t, &self)
	if self.ID != 7 || self.Quota != exp.alice || self.Group != "vip" {
		t.Fatalf("alice = %+v, want id 7, quota %d, group vip", self, exp.alice)
	}
	var rootSelf apptest.UserInfo
	root.OK("GET", "/api/user/self", nil).Decode(t, &rootSelf)
	if rootSelf.ID != 1 || rootSelf.Role != 100 {
		t.Fatalf("root = %+v", rootSelf)
	}
	// The root's access token of the old system still authenticates scripts.
	var byToken apptest.UserInfo
	env.Client().Bearer("0123456789abcdef0123456789abcdef").OK("GET", "/api/user/self", nil).Decode(t, &byToken)
	if byToken.ID != 1 {
		t.Fatalf("access token authenticates %+v", byToken)
	}

	// Keys: remaining quota converted, flags as in the source.
	var keys []struct {
		ID             int64  `json:"id"`
		RemainQuota    int64  `json:"remain_quota"`
		UnlimitedQuota bool   `json:"unlimited_quota"`
		Models         string `json:"models"`
		Subnet         string `json:"subnet"`
		Status         int    `json:"status"`
	}
	alice.OK("GET", "/api/token/?p=0&size=100", nil).Decode(t, &keys)
	byID := map[int64]int{}
	for i, k := range keys {
		byID[k.ID] = i
	}
	if len(keys) != nKeys || keys[byID[12]].RemainQuota != exp.limited || !keys[byID[11]].UnlimitedQuota ||
		keys[byID[15]].Models != "gpt-4o-mini" || keys[byID[16]].Subnet != "10.0.0.0/8,192.168.1.1/32" {
		t.Fatalf("keys: %+v", keys)
	}

	chat := func(key, model string) *apptest.V1 {
		return env.Call("sk-"+key, "POST", "/v1/chat/completions", map[string]any{"model": model,
			"messages": []map[string]string{{"role": "user", "content": "hi"}}})
	}
	// Each working key works as sk-K; the mapping sends my-model upstream as gpt-4o-mini.
	if r := chat(keyUnlimited, "my-model"); r.Status != 200 {
		t.Fatalf("unlimited key: %d %s", r.Status, r.Body)
	}
	if got := up.LastRequest(); got.Model != "gpt-4o-mini" || got.Key != "upkey-21" {
		t.Fatalf("upstream got model %q key %q", got.Model, got.Key)
	}
	if r := chat(keyLimited, "gpt-4o-mini"); r.Status != 200 {
		t.Fatalf("limited key: %d %s", r.Status, r.Body)
	}
	if system == "one-api" {
		if r := chat(keyLegacy, "gpt-4o-mini"); r.Status != 200 {
			t.Fatalf("legacy 32-character key: %d %s", r.Status, r.Body)
		}
	}
	if r := chat(keyModels, "gpt-4o-mini"); r.Status != 200 {
		t.Fatalf("model-limited key, allowed model: %d %s", r.Status, r.Body)
	}
	// Anthropic and Gemini channels serve the vip group (alice's).
	for _, m := range []string{"claude-3-5-sonnet-20241022", "gemini-1.5-pro"} {
		if r := chat(keyUnlimited, m); r.Status != 200 {
			t.Fatalf("%s: %d %s", m, r.Status, r.Body)
		}
	}
	// Refused: expired, disabled, another model, outside the subnet.
	for name, r := range map[string]*apptest.V1{
		"expired": chat(keyExpired, "gpt-4o-mini"), "disabled": chat(keyDisabled, "gpt-4o-mini"),
		"model limit": chat(keyModels, "my-model"), "subnet": chat(keySubnet, "gpt-4o-mini"),
	} {
		if r.Status == 200 {
			t.Errorf("%s key served: %s", name, r.Body)
		}
	}

	// Codes: the unused one redeems for its converted value, the used one not.
	// Fifty parallel redemptions of the imported code credit it once.
	env.SettleAll() // the calls above are charged
	alice.OK("GET", "/api/user/self", nil).Decode(t, &self)
	before := self.Quota
	answers := make(chan *apptest.Response, 50)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() { answers <- alice.Do("POST", "/api/user/topup", map[string]string{"key": codeUnused}) })
	}
	wg.Wait()
	close(answers)
	wins := 0
	for r := range answers {
		var credited int64
		switch {
		case r.Success && json.Unmarshal(r.Data, &credited) == nil && credited == exp.code:
			wins++
		case r.Success:
			t.Fatalf("code credited %s, want %d", r.Data, exp.code)
		case r.Message != "该兑换码已被使用":
			t.Fatalf("redeem: %s", r.Message)
		}
	}
	alice.OK("GET", "/api/user/self", nil).Decode(t, &self)
	if wins != 1 || self.Quota != before+exp.code {
		t.Fatalf("%d redemptions won, balance %d, want 1 and %d", wins, self.Quota, before+exp.code)
	}
	alice.Fail("POST", "/api/user/topup", map[string]string{"key": codeUsed}, 200, "该兑换码已被使用")

	// Channels as in the source.
	var chans []struct {
		ID           int64  `json:"id"`
		Type         int    `json:"type"`
		BaseURL      string `json:"base_url"`
		Models       string `json:"models"`
		Group        string `json:"group"`
		Priority     int64  `json:"priority"`
		Weight       int64  `json:"weight"`
		ModelMapping string `json:"model_mapping"`
		Status       int    `json:"status"`
	}
	root.OK("GET", "/api/channel/?p=0&size=100", nil).Decode(t, &chans)
	got := map[int64]string{}
	for _, c := range chans {
		got[c.ID] = fmt.Sprintf("%d|%s|%s|%s|%d|%d|%s|%d", c.Type, c.BaseURL, c.Models, c.Group, c.Priority, c.Weight, c.ModelMapping, c.Status)
	}
	// Azure, Bedrock and Vertex come over with modelgate's numbers; until
	// this modelgate's channel rules accept those types they are disabled
	// (and listed), afterwards as in the source.
	for id, typ := range map[int64]int{25: 3, 26: 33, 27: 41} {
		status, note := 2, fmt.Sprintf("channel %d: source type", id)
		if channel.ValidType(typ) {
			status = 1
		}
		if !strings.Contains(report, note) && status == 2 {
			t.Errorf("report lacks %q", note)
		}
		if !strings.HasPrefix(got[id], fmt.Sprint(typ, "|")) || !strings.HasSuffix(got[id], fmt.Sprint("|", status)) {
			t.Errorf("channel %d = %s, want type %d status %d", id, got[id], typ, status)
		}
		delete(got, id)
	}
	want := map[int64]string{
		21: "1|" + up.URL + "|gpt-4o-mini,my-model|default,vip|5|3|{\"my-model\":\"gpt-4o-mini\"}|1",
		22: "14|" + up.URL + "|claude-3-5-sonnet-20241022|vip|2|1||1",
		23: "24|" + up.URL + "|gemini-1.5-pro|vip|0|1||1",
		24: "1|https://api.deepseek.com|deepseek-chat|default|0|1||2",
		28: "1|" + "https://api.openai.com" + "|glm-4|default|0|1||2",
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("channel %d = %s\n                want %s", id, got[id], w)
		}
	}

	// Prices: ratios from the source, one-api's default for a listed model
	// without one; group ratios as discounts.
	var prices []struct {
		ModelName   string  `json:"model_name"`
		InputPrice  float64 `json:"input_price"`
		OutputPrice float64 `json:"output_price"`
	}
	root.OK("GET", "/api/model_price/", nil).Decode(t, &prices)
	f := 14.6 / 0.075 * 0.075 // CNY per 1M tokens at ratio 1 (one-api units)
	if system == "new-api" {
		f = 7.3
	}
	wantPrice := map[string][2]float64{
		"gpt-4o-mini":                {0.075 * f, 0.3 * f},
		"claude-3-5-sonnet-20241022": {1.5 * f, 7.5 * f}, // one-api default ratio 1.5, completion 5
		"llama3-8b-8192":             {0.15 * f, 0.15 * f},
	}
	for _, p := range prices {
		if w, ok := wantPrice[p.ModelName]; ok {
			if d := p.InputPrice - w[0]; d > 1e-9 || d < -1e-9 {
				t.Errorf("%s input %v want %v", p.ModelName, p.InputPrice, w[0])
			}
			if d := p.OutputPrice - w[1]; d > 1e-9 || d < -1e-9 {
				t.Errorf("%s output %v want %v", p.ModelName, p.OutputPrice, w[1])
			}
			delete(wantPrice, p.ModelName)
		}
	}
	if len(wantPrice) != 0 {
		t.Errorf("prices missing: %v (have %+v)", wantPrice, prices)
	}
	var groups []struct {
		GroupName string  `json:"group_name"`
		ModelName string  `json:"model_name"`
		Discount  float64 `json:"discount"`
	}
	root.OK("GET", "/api/group_price/", nil).Decode(t, &groups)
	vip := false
	for _, g := range groups {
		if g.GroupName == "vip" && g.ModelName == "" {
			vip = g.Discount == 0.8
		}
	}
	if !vip {
		t.Errorf("vip discount: %+v", groups)
	}
	// Options with an equivalent came over.
	var status struct {
		SystemName string `json:"system_name"`
	}
	env.Client().OK("GET", "/api/status", nil).Decode(t, &status)
	if status.SystemName != "Old Gateway" {
		t.Errorf("system name %q", status.SystemName)
	}
}

// A source that fails half way leaves the target empty: the import is one
// transaction, and the failure is reported.
func TestImportBrokenSourceLeavesTargetEmpty(t *testing.T) {
	apptest.Parallel(t)
	src := openSrc(t, "sqlite")
	src.fixture("one-api", "http://127.0.0.1:1")
	// Logs are read last, inside the transaction that already holds the
	// users, keys and channels: a logs table that cannot be read fails it.
	src.ddl("DROP TABLE logs")
	src.ddl("CREATE VIEW logs AS SELECT * FROM nosuch")
	cfg := apptest.Config(t)
	var out, progress bytes.Buffer
	err := runImport(context.Background(), []string{"one-api", src.arg, "--cny-per-usd", "7.3", "--logs"}, importEnv(cfg), &out, &progress)
	if err == nil || !strings.Contains(err.Error(), "nosuch") || !strings.Contains(err.Error(), "nothing written") {
		t.Fatalf("import of a broken source: %v\n%s", err, out.String())
	}
	st, err := store.Open(context.Background(), store.Options{DSN: cfg.SQLDSN, SQLitePath: cfg.SQLitePath})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CheckFresh(context.Background()); err != nil {
		t.Fatalf("target after a failed import: %v", err)
	}
}

func TestImportRefusesBadArguments(t *testing.T) {
	apptest.Parallel(t)
	cfg := apptest.Config(t)
	var out bytes.Buffer
	for _, args := range [][]string{
		{"one-api"},
		{"other", "x.db", "--cny-per-usd", "7"},
		{"one-api", "x.db"},
		{"one-api", "x.db", "--cny-per-usd", "0"},
		{"one-api", filepath.Join(t.TempDir(), "missing.db"), "--cny-per-usd", "7"},
	} {
		if err := runImport(context.Background(), args, importEnv(cfg), &out, &out); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// The source may be a MySQL or PostgreSQL database of the old gateway.
func TestImportFromServerDatabases(t *testing.T) {
	apptest.Parallel(t)
	for _, engine := range []string{"mysql", "postgres"} {
		for _, system := range []string{"one-api", "new-api"} {
			t.Run(engine+"/"+system, func(t *testing.T) {
				src := openSrc(t, engine)
				src.fixture(system, "http://127.0.0.1:1")
				cfg := apptest.Config(t)
				var out bytes.Buffer
				if err := runImport(context.Background(), []string{system, src.arg, "--cny-per-usd", "7.3", "--logs"}, importEnv(cfg), &out, &out); err != nil {
					t.Fatalf("import: %v\n%s", err, out.String())
				}
				env := apptest.Start(t, cfg)
				alice := env.Client()
				alice.Login("alice", "alice-old-pw")
				var self apptest.UserInfo
				alice.OK("GET", "/api/user/self", nil).Decode(t, &self)
				if self.Quota != expected[system].alice {
					t.Fatalf("alice's quota %d, want %d", self.Quota, expected[system].alice)
				}
				var credited int64
				alice.OK("POST", "/api/user/topup", map[string]string{"key": codeUnused}).Decode(t, &credited)
				if credited != expected[system].code {
					t.Fatalf("code credited %d", credited)
				}
			})
		}
	}
}

// The built command: a report on stdout and exit 0, then, into the same
// database, a refusal on stderr and a non-zero exit.
func TestImportBinary(t *testing.T) {
	apptest.Parallel(t)
	src := openSrc(t, "sqlite")
	src.fixture("one-api", "http://127.0.0.1:1")
	bin := buildGateway(t)
	dataDir := t.TempDir()
	run := func() (string, string, error) {
		cmd := exec.Command(bin, "import", "one-api", src.arg, "--cny-per-usd", "7.3")
		cmd.Env = append(os.Environ(), "DATA_DIR="+dataDir, "SQL_DSN=")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	stdout, stderr, err := run()
	if err != nil || !strings.Contains(stdout, "import from one-api: imported") {
		t.Fatalf("first import: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	_, stderr, err = run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 || !strings.Contains(stderr, "not empty") {
		t.Fatalf("second import: %v\nstderr:\n%s", err, stderr)
	}
}

// Rows no modelgate column can hold, or beyond its limits, are cleaned,
// clamped or left out, each listed; the gateway starts over the result.
func TestImportHostileRows(t *testing.T) {
	apptest.Parallel(t)
	src := openSrc(t, "sqlite")
	src.fixture("one-api", "http://127.0.0.1:1")
	src.insert("users", map[string]any{"id": 40, "username": "eve", "password": hash(t, "eve-old-pw"), "display_name": "E\x00ve\xff",
		"role": 1, "status": 1, "quota": int64(math.MaxInt64), "used_quota": int64(math.MinInt64), "group": "default", "aff_code": "eveaff01"})
	src.insert("tokens", map[string]any{"id": 41, "user_id": 40, "key": key48("BadSubnet"), "status": 1, "name": "n",
		"expired_time": -1, "remain_quota": int64(math.MaxInt64), "unlimited_quota": false, "subnet": "not-a-cidr"})
	src.insert("tokens", map[string]any{"id": 42, "user_id": 40, "key": key48("Huge"), "status": 1, "name": "n",
		"expired_time": -1, "remain_quota": int64(math.MaxInt64), "unlimited_quota": false})
	src.insert("tokens", map[string]any{"id": 46, "user_id": 40, "key": "with-dash" + key48("")[9:], "status": 1, "name": "n", "expired_time": -1})
	src.insert("tokens", map[string]any{"id": 43, "user_id": 999, "key": key48("Orphan"), "status": 1, "name": "n", "expired_time": -1})
	src.insert("channels", map[string]any{"id": 44, "type": 1, "key": "k", "status": 1, "name": "bad map", "models": "m",
		"group": "default", "model_mapping": "[1,2]", "base_url": ""})
	src.insert("redemptions", map[string]any{"id": 45, "user_id": 1, "key": "ffffffffffffffffffffffffffffffff", "status": 1, "name": "big",
		"quota": int64(math.MaxInt64)})
	src.db.Exec("UPDATE options SET value = ? WHERE `key` = 'GroupRatio'", `{"default": 1, "vip": 0.8, "free": 0}`)
	cfg := apptest.Config(t)
	var out bytes.Buffer
	if err := runImport(context.Background(), []string{"one-api", src.arg, "--cny-per-usd", "7.3"}, importEnv(cfg), &out, &out); err != nil {
		t.Fatalf("import: %v\n%s", err, out.String())
	}
	report := out.String()
	for _, want := range []string{
		"user 40: display_name cleaned", "user 40: quota 9223372036854775807 converts beyond modelgate's limits; set to 1000000000000000",
		"user 40: used_quota -9223372036854775808 converts beyond modelgate's limits; set to 0",
		"token 41: subnet \"not-a-cidr\"", "token 42: remain_quota 9223372036854775807", "token 43: its user 999 is not imported", "token 46: key is not 48 (or 32) letters and digits",
		"channel 44: source type 1: model_mapping", "code 45: quota 9223372036854775807", "group free: ratio 0 outside",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if t.Failed() {
		t.Fatalf("report:\n%s", report)
	}
	env := apptest.Start(t, cfg)
	root := env.Root()
	var users []apptest.UserInfo
	root.OK("GET", "/api/user/?p=0&size=100", nil).Decode(t, &users)
	for _, u := range users {
		if u.ID == 40 && u.Quota != 1_000_000_000_000_000 {
			t.Fatalf("eve's quota %d", u.Quota)
		}
	}
	eve := env.Client()
	eve.Login("eve", "eve-old-pw")
	// At the limit already: the code's credit is refused, the code stays.
	eve.Fail("POST", "/api/user/topup", map[string]string{"key": "ffffffffffffffffffffffffffffffff"}, 200, "充值后余额将超过上限 1000000000000000")
}
