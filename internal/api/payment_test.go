package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelgate/modelgate/internal/app"
	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/payment"
	"github.com/modelgate/modelgate/internal/user"
)

// fakeWallet is a test double of a wallet channel: a notification is a
// form (order_no, amount_cents, trade_no, sign) whose sign must equal the
// configured api_key; Prepay answers a pay URL unless failPrepay is set.
type fakeWallet struct {
	failPrepay atomic.Bool
	prepays    atomic.Int64
}

func (f *fakeWallet) Prepay(_ context.Context, config []byte, p payment.Prepay) (payment.Pay, error) {
	f.prepays.Add(1)
	if f.failPrepay.Load() {
		return payment.Pay{}, errors.New("provider unreachable")
	}
	return payment.Pay{Status: payment.PayReady, PayURL: "weixin://pay/" + p.OrderNo, QRCode: "weixin://pay/" + p.OrderNo,
		TradeNo: "prepay-" + p.OrderNo}, nil
}

func (f *fakeWallet) Notify(r *http.Request, config []byte) (payment.Paid, error) {
	var c payment.WechatConfig
	if err := json.Unmarshal(config, &c); err != nil {
		return payment.Paid{}, err
	}
	if err := r.ParseForm(); err != nil {
		return payment.Paid{}, err
	}
	if c.APIKey == "" || r.PostForm.Get("sign") != c.APIKey {
		return payment.Paid{}, errors.New("bad signature")
	}
	cents, err := strconv.ParseInt(r.PostForm.Get("amount_cents"), 10, 64)
	if err != nil {
		return payment.Paid{}, err
	}
	return payment.Paid{OrderNo: r.PostForm.Get("order_no"), AmountCents: cents, TradeNo: r.PostForm.Get("trade_no")}, nil
}

func (f *fakeWallet) Reply(w http.ResponseWriter, ok bool) {
	if ok {
		_, _ = io.WriteString(w, "SUCCESS")
		return
	}
	_, _ = io.WriteString(w, "FAIL")
}

func newPaymentEnv(t *testing.T) (*apptest.Env, *fakeWallet) {
	wallet := &fakeWallet{}
	e := apptest.NewWith(t, []app.Option{app.WithPaymentProviders(map[string]payment.Provider{
		payment.MethodWechat: wallet, payment.MethodAlipay: wallet})})
	return e, wallet
}

// sendNotify posts a notification as the provider would and returns the
// reply body.
func sendNotify(t *testing.T, e *apptest.Env, method, orderNo string, cents int64, sign string) string {
	t.Helper()
	form := url.Values{"order_no": {orderNo}, "amount_cents": {strconv.FormatInt(cents, 10)}, "trade_no": {"T-" + orderNo}, "sign": {sign}}
	resp, err := http.Post(e.Server.URL+"/api/payment/"+method+"/notify", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestNotifyWithFakeProvider(t *testing.T) {
	apptest.Parallel(t)
	e, wallet := newPaymentEnv(t)
	root := e.Root()
	root.OK("PUT", "/api/setting/payment/mobile_a", map[string]any{"enabled": true, "config": map[string]any{"app_id": "wx1", "mch_id": "m1", "api_key": "sekrit"}})
	topupOn(root)
	u, uid := e.NewUser("payer", user.RoleUser)
	a := topup(t, u, map[string]any{"preset_amount": 10, "pay_method": "mobile_a"})
	if a.Pay.Status != "success" || a.Pay.PayURL != "weixin://pay/"+a.Order.OrderNo || a.Pay.TradeNo != "prepay-"+a.Order.OrderNo {
		t.Fatalf("prepay: %+v", a.Pay)
	}
	no := a.Order.OrderNo
	for _, c := range []struct {
		name  string
		no    string
		cents int64
		sign  string
	}{
		{"bad signature", no, 1000, "forged"},
		{"wrong amount", no, 999, "sekrit"},
		{"unknown order", "TP00000000000000000000", 1000, "sekrit"},
	} {
		if got := sendNotify(t, e, "mobile_a", c.no, c.cents, c.sign); got != "FAIL" {
			t.Fatalf("%s: reply %q", c.name, got)
		}
	}
	if q := userQuota(t, e, uid); q != 0 || topupLogs(t, e, uid) != 0 {
		t.Fatalf("a refused notification credited: quota %d", q)
	}
	if got := sendNotify(t, e, "mobile_a", no, 1000, "sekrit"); got != "SUCCESS" {
		t.Fatalf("genuine: %q", got)
	}
	if got := sendNotify(t, e, "mobile_a", no, 1000, "sekrit"); got != "SUCCESS" {
		t.Fatalf("replay of a paid order: %q", got)
	}
	if q := userQuota(t, e, uid); q != 12_000_000 || topupLogs(t, e, uid) != 1 {
		t.Fatalf("after genuine and replay: quota %d, logs %d", q, topupLogs(t, e, uid))
	}
	o := apptest.OKData[orderInfo](u, "GET", apptest.Path("/api/order/self/%d", a.Order.ID), nil)
	if o.Status != 1 || o.PayStatus != 1 || o.PayTime == 0 || o.PayTradeNo != "T-"+no || o.PayMethod != "mobile_a" {
		t.Fatalf("paid order: %+v", o)
	}
	// The same notification through the other channel is not a repeat.
	if got := sendNotify(t, e, "mobile_b", no, 1000, ""); got != "FAIL" {
		t.Fatalf("other channel: %q", got)
	}

	// A cancelled order is never activated by a late notification: the
	// payment is a payment exception and the provider hears success.
	b := topup(t, u, map[string]any{"amount": 3, "pay_method": "mobile_a"})
	u.OK("POST", apptest.Path("/api/order/self/%d/cancel", b.Order.ID), nil)
	if got := sendNotify(t, e, "mobile_a", b.Order.OrderNo, 300, "sekrit"); got != "SUCCESS" {
		t.Fatalf("cancelled: %q", got)
	}
	if ex := exceptionsOf(t, e.Root(), b.Order.OrderNo); len(ex) != 1 || ex[0].Reason != "cancelled" || ex[0].Amount != 3 {
		t.Fatalf("cancelled order's payment: exceptions %+v", ex)
	}
	if q := userQuota(t, e, uid); q != 12_000_000 {
		t.Fatalf("cancelled order credited: %d", q)
	}

	// Prepay failure: the order is created with a warning.
	wallet.failPrepay.Store(true)
	c := topup(t, u, map[string]any{"amount": 1, "pay_method": "mobile_a"})
	if c.Pay.Status != "warning" || c.Pay.Warning == "" || c.Order.ID == 0 {
		t.Fatalf("prepay failure: %+v", c)
	}
	// Re-initiating payment, switched to a method without a provider
	// enabled, warns too; a method users may not use is refused.
	u.Fail("POST", apptest.Path("/api/order/self/%d/pay", c.Order.ID), map[string]any{"pay_method": "free"}, http.StatusOK, "自助充值仅支持 wechat / the service / bank")
	wallet.failPrepay.Store(false)
	var repay struct {
		orderInfo
		Pay payInfo `json:"pay"`
	}
	u.OK("POST", apptest.Path("/api/order/self/%d/pay", c.Order.ID), nil).Decode(t, &repay)
	if repay.Pay.Status != "success" || repay.PayMethod != "mobile_a" {
		t.Fatalf("repay: %+v", repay)
	}
}

func TestPaymentSettingsMaskAndStatus(t *testing.T) {
	apptest.Parallel(t)
	e, _ := newPaymentEnv(t)
	root := e.Root()
	status := func() []string {
		var s struct {
			Channels []string `json:"channels"`
		}
		r := e.Client().OK("GET", "/api/payment/status", nil)
		r.Decode(t, &s)
		if strings.Contains(string(r.Raw), "sekrit") {
			t.Fatalf("status leaks a secret: %s", r.Raw)
		}
		return s.Channels
	}
	if got := status(); len(got) != 0 {
		t.Fatalf("status before any setting: %v", got)
	}
	root.Fail("PUT", "/api/setting/payment/paypal", map[string]any{"enabled": true}, http.StatusOK, "不支持的支付方式")
	root.Fail("PUT", "/api/setting/payment/mobile_a", map[string]any{"enabled": true, "config": map[string]any{"api_key": "a\x00b"}}, http.StatusOK, "")
	root.Fail("PUT", "/api/setting/payment/mobile_b", map[string]any{"enabled": true, "config": map[string]any{"gateway": "ftp://x"}}, http.StatusOK, "")
	root.OK("PUT", "/api/setting/payment/mobile_a", map[string]any{"enabled": true, "config": map[string]any{"app_id": "wx1", "api_key": "sekrit", "extra": "dropped"}})
	root.OK("PUT", "/api/setting/payment/mobile_b", map[string]any{"enabled": false, "config": map[string]any{"app_id": "ali", "private_key": "-----BEGIN PRIVATE KEY-----\nsekrit\n-----END PRIVATE KEY-----"}})
	r := root.OK("GET", "/api/setting/payment", nil)
	if strings.Contains(string(r.Raw), "sekrit") || strings.Contains(string(r.Raw), "dropped") || !strings.Contains(string(r.Raw), payment.Mask) {
		t.Fatalf("settings answer: %s", r.Raw)
	}
	if got := status(); len(got) != 1 || got[0] != "mobile_a" {
		t.Fatalf("status: %v", got)
	}
	// The top-up settings a user needs before ordering are public too.
	root.OK("PUT", "/api/setting/topup", map[string]any{"enabled": true, "allow_custom": true, "exchange_rate": 500000,
		"presets": []map[string]any{{"amount": 10, "bonus_quota": 11000000}}})
	var tp struct {
		TopupEnabled bool  `json:"topup_enabled"`
		AllowCustom  bool  `json:"allow_custom"`
		ExchangeRate int64 `json:"exchange_rate"`
		Presets      []struct {
			Amount     float64 `json:"amount"`
			BonusQuota int64   `json:"bonus_quota"`
		} `json:"presets"`
	}
	e.Client().OK("GET", "/api/payment/status", nil).Decode(t, &tp)
	if !tp.TopupEnabled || !tp.AllowCustom || tp.ExchangeRate != 500000 || len(tp.Presets) != 1 || tp.Presets[0].Amount != 10 || tp.Presets[0].BonusQuota != 11000000 {
		t.Fatalf("status top-up fields: %+v", tp)
	}
	// Sending the mask back keeps the secret: a notification signed with it
	// still verifies.
	root.OK("PUT", "/api/setting/payment/mobile_a", map[string]any{"enabled": true, "config": map[string]any{"app_id": "wx1", "api_key": payment.Mask}})
	enableBank(root)
	topupOn(root)
	u, uid := e.NewUser("payer2", user.RoleUser)
	a := topup(t, u, map[string]any{"amount": 1, "pay_method": "mobile_a"})
	if got := sendNotify(t, e, "mobile_a", a.Order.OrderNo, 100, "sekrit"); got != "SUCCESS" || userQuota(t, e, uid) != 1_000_000 {
		t.Fatalf("after a masked save the secret is gone: %q", got)
	}
	admin, _ := e.NewUser("admin2", user.RoleAdmin)
	admin.Fail("GET", "/api/setting/payment", nil, http.StatusOK, "无权进行此操作,权限不足")
}

func TestPaymentPEMUpload(t *testing.T) {
	apptest.Parallel(t)
	e, _ := newPaymentEnv(t)
	root := e.Root()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	privPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	pubDER, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	upload := func(files map[string][]byte) *apptest.Response {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		_ = mw.WriteField("enabled", "true")
		_ = mw.WriteField("config", `{"app_id":"2021000","notify_url":"https://example.com/api/payment/mobile_b/notify"}`)
		for field, data := range files {
			fw, _ := mw.CreateFormFile(field, field+".pem")
			_, _ = fw.Write(data)
		}
		_ = mw.Close()
		req, _ := http.NewRequest("PUT", e.Server.URL+"/api/setting/payment/mobile_b", &buf)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Authorization", "Bearer "+apptest.RootAccessToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out := &apptest.Response{Status: resp.StatusCode}
		out.Raw, _ = io.ReadAll(resp.Body)
		_ = json.Unmarshal(out.Raw, out)
		return out
	}
	r := upload(map[string][]byte{"private_key_file": privPEM, "public_key_file": pubPEM})
	if !r.Success || strings.Contains(string(r.Raw), ".pem") || strings.Contains(string(r.Raw), e.Config.DataDir) {
		t.Fatalf("save: %s", r.Raw)
	}
	var chans []struct {
		Method string               `json:"method"`
		Config payment.AlipayConfig `json:"config"`
	}
	root.OK("GET", "/api/setting/payment", nil).Decode(t, &chans)
	var cfg payment.AlipayConfig
	for _, c := range chans {
		if c.Method == "mobile_b" {
			cfg = c.Config
		}
	}
	if cfg.AppID != "2021000" || cfg.PrivateKeyFile == "" || cfg.PublicKeyFile == "" {
		t.Fatalf("config after upload: %+v", cfg)
	}
	for path, want := range map[string][]byte{cfg.PrivateKeyFile: privPEM, cfg.PublicKeyFile: pubPEM} {
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", path, err, st)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
			t.Fatalf("%s: contents differ", path)
		}
	}
	// A passphrase-protected key, a file that is not PEM and a field the
	// channel does not take are refused and change nothing.
	encrypted := pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte("opaque")})
	legacy := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Headers: map[string]string{"Proc-Type": "4,ENCRYPTED", "DEK-Info": "AES-256-CBC,00"}, Bytes: []byte("x")})
	for name, files := range map[string]map[string][]byte{
		"encrypted pkcs8": {"private_key_file": encrypted},
		"encrypted pkcs1": {"private_key_file": legacy},
		"not pem":         {"public_key_file": []byte("hello")},
		"unknown field":   {"cert_file": pubPEM},
	} {
		if r := upload(files); r.Success {
			t.Fatalf("%s accepted: %s", name, r.Raw)
		}
	}
	var again []struct {
		Method string               `json:"method"`
		Config payment.AlipayConfig `json:"config"`
	}
	root.OK("GET", "/api/setting/payment", nil).Decode(t, &again)
	for _, c := range again {
		if c.Method == "mobile_b" && c.Config.PrivateKeyFile != cfg.PrivateKeyFile {
			t.Fatalf("a refused upload changed the config: %+v", c.Config)
		}
	}
}
