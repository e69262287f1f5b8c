package wechat

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/payment"
)

// testCA issues the merchant certificate, as WeChat's CA does.
type testCA struct {
	cert *x509.Certificate
	key  *rsa.PrivateKey
}

func newCA(t *testing.T) testCA {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Tenpay.com Root CA (test)"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return testCA{cert, key}
}

// issue writes a merchant client certificate and its PKCS#8 key (as in
// WeChat's apiclient_cert.pem / apiclient_key.pem) and answers the paths.
func (ca testCA) issue(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: testMchID},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	pk, _ := x509.MarshalPKCS8PrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "apiclient_cert.pem"), filepath.Join(dir, "apiclient_key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), 0o600)
	return certFile, keyFile
}

// refundServer is /secapi/pay/refund behind TLS that demands a client
// certificate issued by ca.
func refundServer(t *testing.T, ca testCA, got *map[string]string) *httptest.Server {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/secapi/pay/refund" || len(r.TLS.PeerCertificates) == 0 {
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		body, _ := io.ReadAll(r.Body)
		req, err := decodeXML(body)
		if err != nil || verify(req, req["sign_type"], testAPIKey) != nil {
			w.Write(encodeXML(map[string]string{"return_code": "FAIL", "return_msg": "签名错误"}))
			return
		}
		*got = req
		resp := map[string]string{
			"return_code": "SUCCESS", "return_msg": "OK", "appid": req["appid"], "mch_id": req["mch_id"],
			"nonce_str": "NfsMFbUFpdbEhPXP", "result_code": "SUCCESS", "transaction_id": "4200000000202611240000000001",
			"out_trade_no": req["out_trade_no"], "out_refund_no": req["out_refund_no"],
			"refund_id": "50000000002026112400000000001", "refund_fee": req["refund_fee"], "total_fee": req["total_fee"],
		}
		if req["refund_fee"] == "999" {
			resp = map[string]string{"return_code": "SUCCESS", "appid": req["appid"], "mch_id": req["mch_id"],
				"result_code": "FAIL", "err_code": "NOTENOUGH", "err_code_des": "基本账户余额不足"}
		}
		resp["sign"], _ = sign(resp, req["sign_type"], testAPIKey)
		w.Write(encodeXML(resp))
	}))
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func refundConfig(t *testing.T, gateway, certFile, keyFile, signType string) []byte {
	b, _ := json.Marshal(map[string]string{
		"app_id": testAppID, "mch_id": testMchID, "api_key": testAPIKey, "gateway": gateway,
		"cert_file": certFile, "key_file": keyFile, "sign_type": signType,
	})
	return b
}

func TestRefund(t *testing.T) {
	ca := newCA(t)
	var got map[string]string
	srv := refundServer(t, ca, &got)
	dir := t.TempDir()
	certFile, keyFile := ca.issue(t, dir)
	p := New(srv.Client())
	r := payment.RefundRequest{OrderNo: "TP20261124000001", RefundNo: "RF20261124000001", TotalCents: 1234, AmountCents: 1000, Reason: "用户申请"}

	for _, signType := range []string{"", SignHMACSHA256} {
		got = nil
		res, err := p.Refund(context.Background(), refundConfig(t, srv.URL, certFile, keyFile, signType), r)
		if err != nil {
			t.Fatalf("%q: refund: %v", signType, err)
		}
		if res != (payment.Refunded{RefundNo: r.RefundNo, RefundID: "50000000002026112400000000001", AmountCents: 1000}) {
			t.Errorf("refunded = %+v", res)
		}
		if got["out_trade_no"] != r.OrderNo || got["out_refund_no"] != r.RefundNo || got["total_fee"] != "1234" ||
			got["refund_fee"] != "1000" || got["refund_desc"] != "用户申请" || got["sign_type"] != signType {
			t.Errorf("request = %v", got)
		}
	}

	// A certificate from another CA is refused by the TLS handshake.
	otherDir := t.TempDir()
	otherCert, otherKey := newCA(t).issue(t, otherDir)
	cfg := refundConfig(t, srv.URL, certFile, keyFile, "")
	for name, tc := range map[string]struct {
		cfg  []byte
		r    payment.RefundRequest
		want string
	}{
		"no certificate":     {refundConfig(t, srv.URL, "", "", ""), r, "cert_file"},
		"foreign CA":         {refundConfig(t, srv.URL, otherCert, otherKey, ""), r, "certificate authority"},
		"cert/key mismatch":  {refundConfig(t, srv.URL, certFile, otherKey, ""), r, "merchant certificate"},
		"missing file":       {refundConfig(t, srv.URL, filepath.Join(dir, "none"), keyFile, ""), r, "merchant certificate"},
		"provider refuses":   {cfg, payment.RefundRequest{OrderNo: r.OrderNo, RefundNo: r.RefundNo, TotalCents: 1234, AmountCents: 999}, "NOTENOUGH"},
		"more than paid":     {cfg, payment.RefundRequest{OrderNo: r.OrderNo, RefundNo: r.RefundNo, TotalCents: 1234, AmountCents: 1235}, "1..total"},
		"zero":               {cfg, payment.RefundRequest{OrderNo: r.OrderNo, RefundNo: r.RefundNo, TotalCents: 1234}, "1..total"},
		"bad refund number":  {cfg, payment.RefundRequest{OrderNo: r.OrderNo, RefundNo: "RF 1", TotalCents: 1, AmountCents: 1}, "not valid"},
		"wrong api key sign": {[]byte(strings.Replace(string(cfg), testAPIKey, "other", 1)), r, "签名错误"},
	} {
		_, err := p.Refund(context.Background(), tc.cfg, tc.r)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}

	// A passphrase-protected key is named as such.
	encKey := filepath.Join(dir, "enc.pem")
	os.WriteFile(encKey, []byte("-----BEGIN ENCRYPTED PRIVATE KEY-----\nMAA=\n-----END ENCRYPTED PRIVATE KEY-----\n"), 0o600)
	if _, err := p.Refund(context.Background(), refundConfig(t, srv.URL, certFile, encKey, ""), r); err == nil || !strings.Contains(err.Error(), "passphrase") {
		t.Errorf("encrypted key: err = %v", err)
	}
}
