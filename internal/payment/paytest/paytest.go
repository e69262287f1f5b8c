// Package paytest holds fakes of the wallet providers' HTTP APIs for
// tests in any package (the provider packages' own tests, the api
// package's HTTP tests): WeChat Pay API v2 (Wechat) and Alipay OpenAPI
// (Alipay). Each fake keeps the trades it was asked about, checks every
// request's signature the way the provider does (with keys and a merchant
// certificate the fake generates), signs its answers and the payment
// notifications it produces, and counts the calls. Its signing code is
// its own, independent of the production code it checks.
//
// A fake is driven from the test: Pay marks a trade paid and answers the
// signed notification to deliver; SetState puts a trade in any state the
// provider knows; Answer replaces an answer (error codes) and Tamper
// changes one after it was signed.
package paytest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// genKey is a fresh RSA key of the size RSA2 requires.
func genKey(tb testing.TB) *rsa.PrivateKey {
	tb.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// certAuthority issues the fake's server certificate and the merchant's
// client certificate, as WeChat's CA issues apiclient_cert.pem.
type certAuthority struct {
	cert *x509.Certificate
	key  *rsa.PrivateKey
	pool *x509.CertPool
}

func newCA(tb testing.TB, name string) *certAuthority {
	tb.Helper()
	key := genKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &certAuthority{cert, key, pool}
}

// issue answers a leaf certificate for a server (127.0.0.1) or a client.
func (ca *certAuthority) issue(tb testing.TB, serial int64, cn string, server bool) (der []byte, key *rsa.PrivateKey) {
	tb.Helper()
	key = genKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
		tmpl.DNSNames = []string{"localhost"}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		tb.Fatal(err)
	}
	return der, key
}

func (ca *certAuthority) serverCert(tb testing.TB) tls.Certificate {
	der, key := ca.issue(tb, 2, "api.mch.weixin.qq.com (test)", true)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// writeClientCert writes a client certificate and its PKCS#8 key (as
// WeChat's apiclient_cert.pem and apiclient_key.pem) into dir.
func (ca *certAuthority) writeClientCert(tb testing.TB, dir, cn string) (certFile, keyFile string) {
	tb.Helper()
	der, key := ca.issue(tb, 3, cn, false)
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "apiclient_cert.pem"), filepath.Join(dir, "apiclient_key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), 0o600); err != nil {
		tb.Fatal(err)
	}
	return certFile, keyFile
}
