// Package importer brings a one-api or new-api deployment over to modelgate
// (`modelgate import one-api|new-api SOURCE --cny-per-usd RATE`, issue 29):
// it reads the old gateway's database (SQLite, MySQL or PostgreSQL, only
// SELECTs), converts users, keys, channels, prices, codes, options and
// optionally logs by the rules in this package, and writes them into an
// empty modelgate database in one transaction (store.Import). docs/import.md
// is the guide.
package importer

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelgate/modelgate/internal/channel"
	"github.com/modelgate/modelgate/internal/option"
	"github.com/modelgate/modelgate/internal/pricing"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/token"
	"github.com/modelgate/modelgate/internal/user"
)

// Options say what to import and how.
type Options struct {
	System string   // OneAPI or NewAPI
	Source string   // SQLite path or DSN
	Rate   *big.Rat // CNY per USD
	DryRun bool
	Logs   bool
	// Progress receives a line per batch of logs (nil: none).
	Progress io.Writer
	// Now is the clock for expiry decisions (nil: time.Now).
	Now func() time.Time
}

// logBatch is the logs read and written per step.
const logBatch = 5000

// Run imports o.Source into target and returns the report. With DryRun the
// target is only checked for freshness. On error nothing was written.
func Run(ctx context.Context, target *store.Store, o Options) (*Report, error) {
	if o.System != OneAPI && o.System != NewAPI {
		return nil, fmt.Errorf("unknown source system %q: one-api or new-api", o.System)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	src, err := openSource(o.Source)
	if err != nil {
		return nil, err
	}
	defer src.close()
	rep := &Report{System: o.System, DryRun: o.DryRun}
	data, conv, err := read(ctx, src, o, rep)
	if err != nil {
		return nil, err
	}
	if o.DryRun {
		if err := target.CheckFresh(ctx); err != nil {
			return rep, refusal(err)
		}
		if o.Logs {
			n, err := src.count(ctx, "logs")
			if err != nil {
				return nil, err
			}
			rep.count("logs", int(n), int(n))
		}
		return rep, nil
	}
	var logs func(put store.LogSink) error
	if o.Logs {
		logs = func(put store.LogSink) error { return copyLogs(ctx, src, o, conv, rep, put) }
	}
	if err := target.Import(ctx, data, logs); err != nil {
		return nil, refusal(err)
	}
	return rep, nil
}

func refusal(err error) error {
	if errors.Is(err, store.ErrNotFresh) {
		return fmt.Errorf("refused: %w; import only into a new modelgate database (a new DATA_DIR or an empty SQL_DSN database), before the gateway first starts", err)
	}
	return err
}

// read loads and converts everything but the logs.
func read(ctx context.Context, src *source, o Options, rep *Report) (*store.ImportData, Converter, error) {
	opts, err := src.table(ctx, "options", true)
	if err != nil {
		return nil, Converter{}, err
	}
	options := map[string]string{}
	for _, r := range opts {
		options[r.str("key")] = r.str("value")
	}
	qpu := big.NewRat(DefaultQuotaPerUnit, 1)
	if v, ok := options["QuotaPerUnit"]; ok && strings.TrimSpace(v) != "" {
		if qpu, err = parsePositive("source option QuotaPerUnit", v); err != nil {
			return nil, Converter{}, err
		}
	}
	conv := NewConverter(o.Rate, qpu)
	c := &converter{o: o, conv: conv, rep: rep, now: o.Now().Unix()}
	tables := map[string][]row{}
	for _, t := range []string{"users", "tokens", "channels", "redemptions"} {
		if tables[t], err = src.table(ctx, t, false); err != nil {
			return nil, conv, err
		}
	}
	d := &store.ImportData{}
	d.Users = c.users(tables["users"])
	d.Tokens = c.tokens(tables["tokens"], d.Users)
	d.Channels = c.channels(tables["channels"])
	d.Redemptions = c.redemptions(tables["redemptions"])
	d.ModelPrices = c.prices(options, d.Channels)
	d.GroupPrices = c.groupPrices(options)
	d.Options = c.options(options)
	return d, conv, nil
}

// converter applies the rules to rows, noting every change in rep.
type converter struct {
	o    Options
	conv Converter
	rep  *Report
	now  int64
}

// clean makes s storable: NUL bytes removed, invalid UTF-8 replaced, cut to
// max characters; changed reports whether it had to.
func clean(s string, max int) (string, bool) {
	out := strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
	if max > 0 && utf8.RuneCountInString(out) > max {
		out = string([]rune(out)[:max])
	}
	return out, out != s
}

func (c *converter) text(table string, id int64, field, s string, max int) string {
	out, changed := clean(s, max)
	if changed {
		c.rep.change(table, id, "%s cleaned (NUL bytes, invalid UTF-8 or over %d characters)", field, max)
	}
	return out
}

// quota converts a source amount into [lo, hi], listing a clamp.
func (c *converter) quota(table string, id int64, field string, r row, lo, hi int64) int64 {
	q, ok := r.int(field)
	if !ok {
		c.rep.clamp(table, id, "%s %q is not an integer; set to 0", field, r.str(field))
		return 0
	}
	v, clamped := c.conv.Quota(q, lo, hi)
	if clamped {
		c.rep.clamp(table, id, "%s %d converts beyond modelgate's limits; set to %d", field, q, v)
	}
	return v
}

// deleted reports a row new-api soft-deleted (deleted_at set).
func deleted(r row) bool { return r.has("deleted_at") && !r.null("deleted_at") }

func (c *converter) users(rows []row) []store.User {
	sort.Slice(rows, func(i, j int) bool { return rows[i].i("id") < rows[j].i("id") })
	var out []store.User
	root := false
	affCodes := map[string]bool{}
	for _, r := range rows {
		id := r.i("id")
		if id <= 0 {
			c.rep.skip("user", id, "id is not positive")
			continue
		}
		name := c.text("user", id, "username", strings.TrimSpace(r.str("username")), 64)
		if name == "" {
			c.rep.skip("user", id, "empty username")
			continue
		}
		u := store.User{
			ID: id, Username: name, PasswordHash: r.str("password"),
			DisplayName: c.text("user", id, "display_name", r.str("display_name"), 64),
			Email:       c.text("user", id, "email", r.str("email"), 128),
			Role:        int(r.i("role")), Status: int(r.i("status")),
			Quota:        c.quota("user", id, "quota", r, -pricing.MaxBalance, pricing.MaxBalance),
			UsedQuota:    c.quota("user", id, "used_quota", r, 0, pricing.MaxCounter),
			RequestCount: max(r.i("request_count"), 0),
			Group:        strings.TrimSpace(r.str("group")),
		}
		if deleted(r) {
			u.Status = user.StatusDeleted
		}
		if !user.ValidStatus(u.Status) {
			c.rep.change("user", id, "status %d unknown; imported disabled", u.Status)
			u.Status = user.StatusDisabled
		}
		switch {
		case u.Role == user.RoleRoot && !root:
			root = true // the source's root (the first) becomes modelgate's
		case u.Role == user.RoleRoot:
			c.rep.change("user", id, "a second root; imported as admin (modelgate has one root)")
			u.Role = user.RoleAdmin
		case u.Role != user.RoleUser && u.Role != user.RoleAdmin:
			c.rep.change("user", id, "role %d unknown; imported as user", u.Role)
			u.Role = user.RoleUser
		}
		if u.Group == "" || user.ValidateGroup(u.Group) != "" {
			if u.Group != "" {
				c.rep.change("user", id, "group %q invalid here; set to default", u.Group)
			}
			u.Group = user.DefaultGroup
		}
		if !strings.HasPrefix(u.PasswordHash, "$2") {
			c.rep.change("user", id, "no password (an OAuth or e-mail login there); the user sets one through password reset or an admin")
		}
		if at := strings.TrimSpace(r.str("access_token")); at != "" {
			at, _ = clean(at, 64)
			u.AccessToken = &at
		}
		aff := strings.TrimSpace(r.str("aff_code"))
		if aff == "" || len(aff) > 32 || affCodes[aff] {
			aff = rand.Text()[:8]
		}
		affCodes[aff] = true
		u.AffCode = aff
		out = append(out, u)
	}
	if !root {
		c.rep.change("user", "-", "the source has no root user: modelgate creates one at its first start (INITIAL_ROOT_PASSWORD)")
	}
	c.rep.count("users", len(rows), len(out))
	return out
}

func (c *converter) tokens(rows []row, users []store.User) []store.Token {
	known := map[int64]bool{}
	for _, u := range users {
		known[u.ID] = true
	}
	var out []store.Token
	for _, r := range rows {
		id := r.i("id")
		key := strings.TrimSpace(r.str("key"))
		switch {
		case id <= 0:
			c.rep.skip("token", id, "id is not positive")
			continue
		case deleted(r):
			c.rep.skip("token", id, "deleted in the source")
			continue
		case !known[r.i("user_id")]:
			c.rep.skip("token", id, "its user %d is not imported", r.i("user_id"))
			continue
		case !token.ValidSecret(key):
			// Both systems store the key without sk- (clients add it): 48
			// alphanumerics, or 32 from one-api before v0.6. Anything else
			// (a "-" would split a channel pin sk-KEY-<id>) cannot be sent here.
			c.rep.skip("token", id, "key is not 48 (or 32) letters and digits, the form clients can send here")
			continue
		}
		prefix, suffix := token.Ends(key)
		t := store.Token{
			ID: id, UserID: r.i("user_id"), Name: c.text("token", id, "name", r.str("name"), 64),
			KeyHash: token.HashKey(key), KeyPrefix: prefix, KeySuffix: suffix,
			Status: int(r.i("status")), CreatedTime: r.i("created_time"), AccessedTime: r.i("accessed_time"),
			ExpiredTime:    r.i("expired_time"),
			RemainQuota:    c.quota("token", id, "remain_quota", r, 0, pricing.MaxBalance),
			UnlimitedQuota: r.bool("unlimited_quota"),
			UsedQuota:      c.quota("token", id, "used_quota", r, 0, pricing.MaxCounter),
		}
		if !r.has("expired_time") || t.ExpiredTime == 0 || t.ExpiredTime < -1 {
			t.ExpiredTime = token.NeverExpires
		}
		if t.Status < token.StatusEnabled || t.Status > token.StatusExhausted {
			c.rep.change("token", id, "status %d unknown; imported disabled", t.Status)
			t.Status = token.StatusDisabled
		}
		// one-api: models (comma list, empty = all); new-api: model_limits
		// when model_limits_enabled.
		models := r.str("models")
		if r.has("model_limits_enabled") {
			models = ""
			if r.bool("model_limits_enabled") {
				models = r.str("model_limits")
			}
		}
		var msg string
		if t.Models, msg = token.NormalizeModels(models); msg != "" {
			c.rep.skip("token", id, "model limits %q: %s", models, msg)
			continue
		}
		if r.bool("model_limits_enabled") && t.Models == "" {
			c.rep.skip("token", id, "model limits enabled with no model (the key served nothing)")
			continue
		}
		// one-api: subnet (comma list of CIDRs); new-api: allow_ips (one
		// address or CIDR a line).
		subnets := r.str("subnet")
		if r.has("allow_ips") {
			subnets = strings.NewReplacer("\r\n", ",", "\n", ",").Replace(r.str("allow_ips"))
		}
		if t.Subnet, msg = token.NormalizeSubnets(subnets); msg != "" {
			// Dropping the restriction would open the key to any address.
			c.rep.skip("token", id, "subnet %q: %s", subnets, msg)
			continue
		}
		if g := strings.TrimSpace(r.str("group")); g != "" {
			c.rep.change("token", id, "key group %q not carried: a modelgate key uses its user's group", g)
		}
		out = append(out, t)
	}
	c.rep.count("keys", len(rows), len(out))
	return out
}

func (c *converter) channels(rows []row) []store.Channel {
	var out []store.Channel
	for _, r := range rows {
		id := r.i("id")
		if id <= 0 {
			c.rep.skip("channel", id, "id is not positive")
			continue
		}
		srcType := int(r.i("type"))
		tg := mapChannelType(c.o.System, srcType)
		ch := store.Channel{
			ID: id, Type: tg.Type, Name: strings.TrimSpace(c.text("channel", id, "name", r.str("name"), 128)),
			Key: strings.ReplaceAll(strings.ToValidUTF8(r.str("key"), ""), "\x00", ""), Status: int(r.i("status")),
			Priority: r.i("priority"), Weight: max(r.i("weight"), 0), CreatedTime: r.i("created_time"),
			TestTime: r.i("test_time"), ResponseTime: r.i("response_time"),
			UsedQuota: c.quota("channel", id, "used_quota", r, 0, pricing.MaxCounter),
		}
		if ch.Name == "" {
			ch.Name = "channel " + strconv.FormatInt(id, 10)
		}
		if !channel.ValidStatus(ch.Status) {
			c.rep.change("channel", id, "status %d unknown; imported disabled", ch.Status)
			ch.Status = channel.StatusDisabled
		}
		disable := func(format string, a ...any) {
			c.rep.change("channel", id, "source type %d: "+format, append([]any{srcType}, a...)...)
			ch.Status = channel.StatusDisabled
		}
		if tg.Reason != "" {
			disable("%s", tg.Reason)
		}
		base := strings.TrimSpace(r.str("base_url"))
		if base == "" {
			base = tg.BaseURL
		}
		var msg string
		if channel.ValidType(ch.Type) {
			if ch.BaseURL, msg = channel.NormalizeBaseURL(ch.Type, base); msg != "" {
				disable("base URL %q: %s", base, msg)
				ch.BaseURL = ""
			}
		} else {
			ch.BaseURL = strings.TrimRight(base, "/")
		}
		if ch.Models, msg = channel.NormalizeModels(r.str("models")); msg != "" {
			disable("models: %s", msg)
			ch.Models = ""
		}
		groups := r.str("group")
		if ch.Groups, msg = channel.NormalizeGroups(groups); msg != "" {
			disable("groups %q: %s", groups, msg)
			ch.Groups = channel.DefaultGroup
		}
		if ch.ModelMapping, msg = channel.NormalizeModelMapping(r.str("model_mapping")); msg != "" {
			disable("model_mapping: %s", msg)
			ch.ModelMapping = ""
		}
		c.cloudFields(&ch, r, disable)
		out = append(out, ch)
	}
	c.rep.count("channels", len(rows), len(out))
	return out
}

// cloudFields carries the type-specific fields of the cloud types into
// modelgate's (docs/import.md): Azure's api-version (other), Vertex's
// region (new-api: other, a region or a JSON object with "default";
// one-api: config.region) and service-account JSON (one-api:
// config.vertex_ai_adc when the key is not one), Bedrock's credentials
// (one-api: config ak, sk, region when the key is not ACCESS|SECRET|REGION).
// Other types' other and config have no meaning here: listed.
func (c *converter) cloudFields(ch *store.Channel, r row, disable func(string, ...any)) {
	other, rawConfig := strings.TrimSpace(r.str("other")), strings.TrimSpace(r.str("config"))
	var config map[string]any
	if rawConfig != "" {
		_ = json.Unmarshal([]byte(rawConfig), &config)
	}
	str := func(k string) string { s, _ := config[k].(string); return strings.TrimSpace(s) }
	switch ch.Type {
	case channel.TypeAzure:
		ch.Other = other
	case channel.TypeVertex:
		region := other
		var byModel map[string]any
		if json.Unmarshal([]byte(other), &byModel) == nil {
			region, _ = byModel["default"].(string)
		}
		if region == "" {
			region = str("region")
		}
		ch.Other = region
		if channel.CheckKey(ch.Type, ch.Key) != "" && str("vertex_ai_adc") != "" {
			ch.Key = str("vertex_ai_adc")
		}
	case channel.TypeBedrock:
		if channel.CheckKey(ch.Type, ch.Key) != "" && str("ak") != "" {
			ch.Key = str("ak") + "|" + str("sk") + "|" + str("region")
		}
	default:
		for col, v := range map[string]string{"other": other, "config": rawConfig} {
			if v != "" && v != "{}" {
				c.rep.change("channel", ch.ID, "type-specific field %s %q has no meaning for type %d; not carried", col, v, ch.Type)
			}
		}
		return
	}
	var msg string
	if ch.Other, msg = channel.NormalizeOther(ch.Type, ch.Other); msg != "" {
		disable("other %q: %s", ch.Other, msg)
		ch.Other, _ = channel.NormalizeOther(ch.Type, "")
	}
	if msg := channel.CheckKey(ch.Type, ch.Key); msg != "" {
		disable("key: %s", msg) // never quoted: it is a credential
	}
}

func (c *converter) redemptions(rows []row) []store.Redemption {
	var out []store.Redemption
	codes := map[string]bool{}
	for _, r := range rows {
		id := r.i("id")
		code := r.str("key")
		switch {
		case id <= 0:
			c.rep.skip("code", id, "id is not positive")
			continue
		case deleted(r):
			c.rep.skip("code", id, "deleted in the source")
			continue
		case code == "" || len(code) > 64 || !utf8.ValidString(code) || strings.ContainsRune(code, 0) || codes[code]:
			c.rep.skip("code", id, "code is empty, longer than 64 bytes, not text or a repeat")
			continue
		}
		codes[code] = true
		rd := store.Redemption{
			ID: id, CreatorID: r.i("user_id"), Name: c.text("code", id, "name", r.str("name"), 64), Code: code,
			Status:      int(r.i("status")),
			Quota:       c.quota("code", id, "quota", r, 0, pricing.MaxBalance),
			CreatedTime: r.i("created_time"), RedeemedTime: r.i("redeemed_time"), UsedUserID: r.i("used_user_id"),
		}
		if rd.Status < 1 || rd.Status > 3 {
			c.rep.change("code", id, "status %d unknown; imported disabled", rd.Status)
			rd.Status = 2
		}
		// new-api codes may expire; modelgate's do not: an expired unused
		// code comes over disabled, a future expiry is dropped (listed).
		if exp := r.i("expired_time"); exp > 0 && rd.Status == 1 {
			if exp <= c.now {
				c.rep.change("code", id, "expired in the source; imported disabled")
				rd.Status = 2
			} else {
				c.rep.change("code", id, "expiry %d not carried (modelgate codes do not expire)", exp)
			}
		}
		out = append(out, rd)
	}
	c.rep.count("codes", len(rows), len(out))
	return out
}

// ratioMap reads a JSON object of numbers from option key.
func (c *converter) ratioMap(options map[string]string, key string) map[string]float64 {
	m := map[string]float64{}
	v, ok := options[key]
	if !ok || strings.TrimSpace(v) == "" {
		return m
	}
	if err := json.Unmarshal([]byte(v), &m); err != nil {
		c.rep.skip("option", key, "not a JSON object of numbers: %v", err)
		return map[string]float64{}
	}
	return m
}

// plainModel splits a ratio key "model(type)" (a price for one channel
// type) into its model.
func plainModel(k string) (string, bool) {
	if i := strings.LastIndexByte(k, '('); i > 0 && strings.HasSuffix(k, ")") {
		if _, err := strconv.Atoi(k[i+1 : len(k)-1]); err == nil {
			return k[:i], true
		}
	}
	return k, false
}

func (c *converter) prices(options map[string]string, channels []store.Channel) []store.ModelPrice {
	ratios := c.ratioMap(options, "ModelRatio")
	completion := c.ratioMap(options, "CompletionRatio")
	cache := c.ratioMap(options, "CacheRatio")
	fixed := c.ratioMap(options, "ModelPrice") // new-api: USD per request
	listed := map[string]bool{}
	for _, ch := range channels {
		for _, m := range channel.Split(ch.Models) {
			listed[m] = true
		}
	}
	// The source's ratio rows; where it has none for a model its channels
	// list, its built-in default applies there, so that default comes over.
	input := map[string]float64{}
	typed := map[string]float64{}
	for k, v := range ratios {
		if m, ok := plainModel(k); ok {
			typed[m] = v
			c.rep.change("price", k, "a ratio for one channel type; modelgate prices a model alike on every channel")
			continue
		}
		input[k] = v
	}
	for m, v := range typed {
		if _, ok := input[m]; !ok {
			input[m] = v
		}
	}
	for m := range listed {
		if _, ok := input[m]; ok {
			continue
		}
		if _, ok := fixed[m]; ok {
			continue
		}
		if v, ok := defaultRatios[m]; ok {
			input[m] = v
		} else {
			c.rep.change("price", m, "listed by a channel but without a ratio in the source or one-api's defaults: no price imported")
		}
	}
	names := make([]string, 0, len(input)+len(fixed))
	for m := range input {
		names = append(names, m)
	}
	for m := range fixed {
		if _, ok := input[m]; !ok {
			names = append(names, m)
		}
	}
	sort.Strings(names)
	var out []store.ModelPrice
	for _, m := range names {
		if m == "" || utf8.RuneCountInString(m) > 191 || !utf8.ValidString(m) || strings.ContainsRune(m, 0) {
			c.rep.skip("price", m, "model name not storable")
			continue
		}
		p := store.ModelPrice{ModelName: m, BillingType: pricing.BillingToken, Enabled: true}
		if usd, ok := fixed[m]; ok {
			// new-api: a fixed price per call wins over the ratio there.
			p.BillingType = pricing.BillingPerRequest
			p.PerRequestPrice = c.price(m, "per-request price", c.conv.USDToCNY(usd))
		} else {
			cr, ok := completion[m]
			if !ok {
				cr = defaultCompletionRatio(m)
			}
			p.InputPrice = c.price(m, "input price", c.conv.PerMillionCNY(input[m]))
			p.OutputPrice = c.price(m, "output price", c.conv.PerMillionCNY(input[m]*cr))
			if r, ok := cache[m]; ok {
				p.CachedPrice = c.price(m, "cached price", c.conv.PerMillionCNY(input[m]*r))
			}
		}
		out = append(out, p)
	}
	c.rep.count("prices", len(names), len(out))
	return out
}

func (c *converter) price(model, what string, v float64) float64 {
	switch {
	case v != v || v < 0:
		c.rep.clamp("price", model, "%s not a finite non-negative number; set to 0", what)
		return 0
	case v > pricing.MaxPrice:
		c.rep.clamp("price", model, "%s %g CNY beyond %d; set to the limit", what, v, pricing.MaxPrice)
		return pricing.MaxPrice
	}
	return v
}

func (c *converter) groupPrices(options map[string]string) []store.GroupPrice {
	ratios := c.ratioMap(options, "GroupRatio")
	names := make([]string, 0, len(ratios))
	for g := range ratios {
		names = append(names, g)
	}
	sort.Strings(names)
	var out []store.GroupPrice
	for _, g := range names {
		d := ratios[g]
		switch {
		case user.ValidateGroup(g) != "":
			c.rep.skip("group", g, "group name invalid here")
		case !(d > 0 && d <= 10):
			c.rep.skip("group", g, "ratio %g outside modelgate's discounts (above 0, at most 10)", d)
		default:
			out = append(out, store.GroupPrice{GroupName: g, Discount: d})
		}
	}
	c.rep.count("group ratios", len(names), len(out))
	return out
}

// options carries the settings with a modelgate equivalent.
func (c *converter) options(src map[string]string) map[string]string {
	out := map[string]string{}
	put := func(key, value, from string) {
		if err := option.Validate(key, value); err != nil {
			c.rep.skip("option", from, "%v", err)
			return
		}
		out[key] = value
	}
	if v, ok := src["RegisterEnabled"]; ok {
		// one-api also has PasswordRegisterEnabled: registration by
		// password is open only when both are.
		if p, ok := src["PasswordRegisterEnabled"]; ok && p == "false" {
			v = "false"
		}
		put(option.RegisterEnabled, v, "RegisterEnabled")
	}
	if v, ok := src["SystemName"]; ok {
		put(option.SystemName, v, "SystemName")
	}
	if v, ok := src["RetryTimes"]; ok {
		put(option.RetryTimes, v, "RetryTimes")
	}
	if v, ok := src["QuotaForNewUser"]; ok {
		q, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			c.rep.skip("option", "QuotaForNewUser", "not an integer: %q", v)
		} else {
			n, clamped := c.conv.Quota(q, 0, pricing.MaxBalance)
			if clamped {
				c.rep.clamp("option", "QuotaForNewUser", "%d converts beyond the limits; set to %d", q, n)
			}
			put(option.NewUserQuota, strconv.FormatInt(n, 10), "QuotaForNewUser")
		}
	}
	c.rep.count("options", len(src), len(out))
	return out
}

// logTypes maps source log types: 1 top-up, 2 consume, 3 manage, 4 system,
// 5 error (new-api), 6 refund (new-api; a system entry here).
var logTypes = map[int64]int{1: store.LogTopup, 2: store.LogConsume, 3: 3, 4: store.LogSystem, 5: store.LogError, 6: store.LogSystem}

func copyLogs(ctx context.Context, src *source, o Options, conv Converter, rep *Report, put store.LogSink) error {
	total, err := src.count(ctx, "logs")
	if err != nil {
		return err
	}
	var after int64
	done, imported := 0, 0
	for {
		rows, err := src.logsAfter(ctx, after, logBatch)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			break
		}
		batch := make([]store.Log, 0, len(rows))
		for _, r := range rows {
			id := r.i("id")
			after = max(after, id)
			typ, ok := logTypes[r.i("type")]
			if !ok || id <= 0 {
				rep.skip("log", id, "type %d unknown", r.i("type"))
				continue
			}
			q, _ := conv.Quota(r.i("quota"), -pricing.MaxCounter, pricing.MaxCounter)
			elapsed := r.i("elapsed_time") // one-api: ms
			if r.has("use_time") {
				elapsed = r.i("use_time") * 1000 // new-api: seconds
			}
			content, _ := clean(r.str("content"), 0)
			l := store.Log{
				ID: id, UserID: r.i("user_id"), CreatedAt: r.i("created_at"), Type: typ, Content: content,
				Quota: q, PromptTokens: r.i("prompt_tokens"), CompletionTokens: r.i("completion_tokens"),
				ChannelID: r.i("channel_id"), TokenID: r.i("token_id"), ElapsedTime: elapsed, IsStream: r.bool("is_stream"),
			}
			l.Username, _ = clean(r.str("username"), 64)
			l.TokenName, _ = clean(r.str("token_name"), 64)
			l.ModelName, _ = clean(r.str("model_name"), 191)
			l.Group, _ = clean(r.str("group"), 64)
			batch = append(batch, l)
		}
		if err := put(batch); err != nil {
			return err
		}
		done += len(rows)
		imported += len(batch)
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "logs: %d of %d\n", done, total)
		}
	}
	rep.count("logs", done, imported)
	return nil
}
